package org.devicebridge.foreign;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.List;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;
import org.devicebridge.internal.RefCount;

/**
 * Writes an {@code ArrowArray} tree whose buffers are given addresses (device memory, for a CUDA export),
 * all non-root nodes and pointer arrays in one malloc'ed block. Every node carries the same {@code private_data} key and the same release upcall (one
 * stub, made once); a node's release first releases its children still in place, and the block (and
 * whatever the tree holds, through {@code onFree}) is freed when the last node of the tree is released,
 * so a consumer may move children out and release them in any order, as the C Data Interface allows.
 *
 * <p>Plumbing shared by {@code arrow.cuda} (device export) and {@code ipc} (a mapped batch); not exported.
 */
public final class CudaStructs {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    private static final long SIZE = ArrowArray.sizeof();

    /** Trees not fully released yet (tests assert this returns to its baseline). */
    public static final ExportRegistry<Tree> TREES = new ExportRegistry<>();

    static final MemorySegment RELEASE = Native.upcallStub(MethodHandles.lookup(), CudaStructs.class, "release",
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    /**
     * What one written tree holds, counted by its live nodes: the last release runs {@code onFree}, then
     * frees the block. Never refers to a handle.
     */
    public static final class Tree {
        final RefCount liveNodes;

        Tree(int nodes, MemorySegment block, Runnable onFree) {
            this.liveNodes = new RefCount(nodes, () -> {
                try {
                    onFree.run();
                } finally {
                    if (!block.equals(MemorySegment.NULL)) {
                        Native.free(block);
                    }
                }
            });
        }
    }

    /**
     * What the writer reads of a node of type {@code N}: the {@code ArrowArray} fields, with buffer addresses.
     * Lets one writer (and one release upcall) serve the import views and the IPC batch descriptor.
     */
    public interface Shape<N> {
        long length(N n);

        long nullCount(N n);

        long offset(N n);

        int bufferCount(N n);

        long address(N n, int i);

        List<N> children(N n);

        /** The dictionary node, or {@code null}. */
        N dictionary(N n);
    }

    private CudaStructs() {}

    /**
     * Writes the tree of {@code root}, read through {@code shape}, into {@code out} (an {@code ArrowArray},
     * zero or garbage). After a return the tree owns {@code onFree} (run once when the last node is
     * released); after a throw {@code out} is untouched and {@code onFree} was not run.
     */
    public static <N> void write(N root, Shape<N> shape, MemorySegment out, Runnable onFree) {
        int[] counts = new int[2]; // nodes below the root, pointer slots
        count(root, shape, counts, true);
        long bytes = Math.addExact(Math.multiplyExact((long) counts[0], SIZE), Math.multiplyExact((long) counts[1], 8L));
        MemorySegment block = bytes == 0 ? MemorySegment.NULL : Native.calloc(bytes).reinterpret(bytes);
        Tree tree = new Tree(counts[0] + 1, block, onFree);
        long key = TREES.register(tree);
        MemorySegment staged = MemorySegment.ofArray(new long[(int) (SIZE / 8)]); // 8-byte aligned, as the layout needs
        try {
            new Filler<>(shape, block, key, Math.multiplyExact((long) counts[0], SIZE)).fill(root, staged);
        } catch (RuntimeException | Error e) {
            TREES.remove(key);
            if (!block.equals(MemorySegment.NULL)) {
                Native.free(block);
            }
            throw e;
        }
        MemorySegment.copy(staged, 0, out, 0, SIZE);
    }

    private static <N> void count(N n, Shape<N> shape, int[] counts, boolean root) {
        if (!root) {
            counts[0]++;
        }
        counts[1] += shape.bufferCount(n) + shape.children(n).size();
        for (N c : shape.children(n)) {
            count(c, shape, counts, false);
        }
        if (shape.dictionary(n) != null) {
            count(shape.dictionary(n), shape, counts, false);
        }
    }

    /**
     * Writes the nodes of one tree into its block: non-root nodes from the block's start, pointer arrays
     * (buffers, children) after the last node; both cursors only move forward.
     */
    private static final class Filler<N> {
        private final Shape<N> shape;
        private final MemorySegment block;
        private final long key;
        private long nextNode; // where the next non-root node goes
        private long nextSlot; // where the next pointer array goes

        Filler(Shape<N> shape, MemorySegment block, long key, long firstSlot) {
            this.shape = shape;
            this.block = block;
            this.key = key;
            this.nextSlot = firstSlot;
        }

        /** Writes {@code n} into {@code s}, and its children and dictionary into the block. */
        void fill(N n, MemorySegment s) {
            ArrowArray.length(s, shape.length(n));
            ArrowArray.null_count(s, shape.nullCount(n));
            ArrowArray.offset(s, shape.offset(n));
            int bufferCount = shape.bufferCount(n);
            List<N> kids = shape.children(n);
            ArrowArray.n_buffers(s, bufferCount);
            ArrowArray.n_children(s, kids.size());
            MemorySegment buffers = MemorySegment.NULL;
            if (bufferCount > 0) {
                buffers = pointers(bufferCount);
                for (int i = 0; i < bufferCount; i++) {
                    buffers.setAtIndex(ValueLayout.JAVA_LONG, i, shape.address(n, i));
                }
            }
            ArrowArray.buffers(s, buffers);
            MemorySegment children = MemorySegment.NULL;
            if (!kids.isEmpty()) {
                children = pointers(kids.size());
                for (int i = 0; i < kids.size(); i++) {
                    MemorySegment c = node();
                    children.setAtIndex(ValueLayout.ADDRESS, i, c);
                    fill(kids.get(i), c);
                }
            }
            ArrowArray.children(s, children);
            MemorySegment dictionary = MemorySegment.NULL;
            N dict = shape.dictionary(n);
            if (dict != null) {
                dictionary = node();
                fill(dict, dictionary);
            }
            ArrowArray.dictionary(s, dictionary);
            ArrowArray.private_data(s, MemorySegment.ofAddress(key));
            ArrowArray.release(s, RELEASE);
        }

        private MemorySegment node() {
            MemorySegment c = block.asSlice(nextNode, SIZE);
            nextNode += SIZE;
            return c;
        }

        private MemorySegment pointers(int count) {
            MemorySegment p = block.asSlice(nextSlot, 8L * count);
            nextSlot += 8L * count;
            return p;
        }
    }

    // ---- the upcall: never throws ----

    private static void release(MemorySegment array) {
        try {
            releaseNode(array.reinterpret(SIZE), 0);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an ArrowArray of a CUDA export failed", t);
        }
    }

    private static void releaseNode(MemorySegment a, int depth) {
        if (ArrowArray.release(a).equals(MemorySegment.NULL) || depth > FieldPath.MAX_DEPTH + 1) {
            return;
        }
        long key = ArrowArray.private_data(a).address();
        Tree tree = TREES.get(key);
        if (tree == null) {
            ArrowArray.release(a, MemorySegment.NULL);
            LOG.log(System.Logger.Level.WARNING, "devicebridge: release of an unknown or already released ArrowArray");
            return;
        }
        long nChildren = ArrowArray.n_children(a);
        if (nChildren > 0) {
            MemorySegment ptrs = ArrowArray.children(a).reinterpret(nChildren * 8);
            for (long i = 0; i < nChildren; i++) {
                MemorySegment c = ptrs.getAtIndex(ValueLayout.ADDRESS, i);
                if (!c.equals(MemorySegment.NULL)) {
                    releaseNode(c.reinterpret(SIZE), depth + 1);
                }
            }
        }
        MemorySegment d = ArrowArray.dictionary(a);
        if (!d.equals(MemorySegment.NULL)) {
            releaseNode(d.reinterpret(SIZE), depth + 1);
        }
        ArrowArray.release(a, MemorySegment.NULL);
        try {
            tree.liveNodes.release();
        } finally {
            if (tree.liveNodes.count() == 0) {
                TREES.remove(key); // the last node: the tree is gone (removing twice finds nothing)
            }
        }
    }
}
