package org.devicebridge.arrow;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.foreign.LocalCallbacks;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * What the FFM-only exports ({@link ArrowC#exportArray}, {@link ArrowC#exportSchema}) hold, and their release
 * callbacks: one upcall stub per struct kind, made once in the global arena, that never throws.
 *
 * <p>One export is one {@link Tree}: one malloc block (the structs of every node but the root, which is the
 * caller's, and their pointer arrays and strings) and one registry entry. Nodes are numbered in the pre-order
 * of the schema's {@link SchemaLayout}, and node {@code i}'s struct carries {@code private_data = key << NODE_BITS
 * | i}, so a consumer may move a child out and release it after its parent, as the C Data Interface allows: its
 * release finds the tree by the key and the node by the index. Each node is released once (a bit per node);
 * a parent's release releases the dependents (children, dictionary) still in place. A count of the nodes not
 * released yet frees the block, and then closes the export's owner, when it reaches zero. A release of a node
 * released already, or of a forged {@code private_data}, is logged and touches nothing but its own
 * {@code release} field.
 */
final class FfmExports {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    /** Low bits of {@code private_data} that hold the node index; the key is above them. */
    private static final int NODE_BITS = 16;
    /** Keys from {@link ExportRegistry} fit above the node bits below this. */
    private static final long KEY_LIMIT = 1L << (64 - NODE_BITS);
    /** Every address: our own blocks and the structs handed to us are written by address. */
    static final MemorySegment ALL = ArrowArrayFields.BY_ADDRESS;

    private static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(), FfmExports.class,
            "releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    private static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), FfmExports.class,
            "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    /** Exported ArrowSchema trees. */
    static final Kind SCHEMA = new Kind("ArrowSchema", ArrowSchema.sizeof(), ArrowSchema.release$offset(),
            ArrowSchema.private_data$offset(), RELEASE_SCHEMA.address());
    /** Exported ArrowArray trees. */
    static final Kind ARRAY = new Kind("ArrowArray", ArrowArray.sizeof(), ArrowArray.release$offset(),
            ArrowArray.private_data$offset(), RELEASE_ARRAY.address());

    static {
        // A struct exported here and imported here is released by a Java call, not a native round trip.
        LocalCallbacks.register(RELEASE_SCHEMA, FfmExports::releaseSchema);
        LocalCallbacks.register(RELEASE_ARRAY, FfmExports::releaseArray);
    }

    private FfmExports() {}

    /** One struct kind: its size, the offsets of its {@code release} and {@code private_data}, its stub and registry. */
    static final class Kind {
        final String name;
        final long size;
        final long releaseOff;
        final long privateOff;
        final long stub;
        final ExportRegistry<Tree> registry = new ExportRegistry<>();

        private Kind(String name, long size, long releaseOff, long privateOff, long stub) {
            this.name = name;
            this.size = size;
            this.releaseOff = releaseOff;
            this.privateOff = privateOff;
            this.stub = stub;
        }
    }

    /** Exports of either kind not fully released yet (tests assert this returns to its baseline). */
    static int liveExports() {
        return SCHEMA.registry.size() + ARRAY.registry.size();
    }

    /** One exported tree of structs: its block, its shape, which nodes are released, and its owner. */
    static final class Tree {
        private static final VarHandle BITS = MethodHandles.arrayElementVarHandle(long[].class);

        final Kind kind;
        /** The block's address: node {@code i >= 1}'s struct is at {@code base + (i - 1) * kind.size}. */
        final long base;
        final SchemaLayout layout;
        private final AutoCloseable owner;
        private final AtomicInteger live;
        private final long[] released; // a bit per node
        private long key;             // the first registry key, set once by register()

        Tree(Kind kind, long base, SchemaLayout layout, AutoCloseable owner) {
            this.kind = kind;
            this.base = base;
            this.layout = layout;
            this.owner = owner;
            this.live = new AtomicInteger(layout.size());
            this.released = new long[(layout.size() + 63) >>> 6];
        }

        /**
         * Registers this tree; returns the {@code private_data} of node 0 (node i's is that plus i). On a throw
         * nothing is registered.
         */
        long register() {
            long first = kind.registry.register(this, keyCount());
            if (first >= KEY_LIMIT - keyCount()) {
                kind.registry.remove(first, keyCount());
                throw new DeviceBridgeException("internal error: the export key space is exhausted");
            }
            key = first;
            return first << NODE_BITS;
        }

        private int keyCount() {
            return ((layout.size() - 1) >>> NODE_BITS) + 1;
        }

        /** The address of node {@code i}'s struct in the block ({@code i >= 1}; the root is the caller's). */
        long struct(int i) {
            return base + (i - 1L) * kind.size;
        }

        long privateData(int i) {
            return (key << NODE_BITS) + i;
        }

        /** The node {@code privateData} names in this tree, or -1. */
        private int node(long privateData) {
            long i = privateData - (key << NODE_BITS);
            return i >= 0 && i < layout.size() ? (int) i : -1;
        }

        /** Marks node {@code i} released; {@code false} if it was already. */
        private boolean claim(int i) {
            long bit = 1L << (i & 63);
            return ((long) BITS.getAndBitwiseOr(released, i >>> 6, bit) & bit) == 0;
        }

        /**
         * Releases the dependents of claimed node {@code i} (children, then the dictionary): ours still in place
         * here, recursively; anything else in place through its own {@code release}; those the consumer moved
         * out (NULL {@code release} in place) not at all. Returns the number of this tree's nodes released here.
         */
        private int releaseDependents(int i) {
            int count = 0;
            int children = layout.childCount(i);
            int dictionary = layout.dictionary(i);
            for (int k = 0; k < children + (dictionary < 0 ? 0 : 1); k++) {
                int d = k < children ? layout.child(i, k) : dictionary;
                long s = struct(d);
                try {
                    long fn = ALL.get(ValueLayout.JAVA_LONG, s + kind.releaseOff);
                    if (fn == 0) {
                        continue; // moved out by the consumer, or released already
                    }
                    if (fn == kind.stub && ALL.get(ValueLayout.JAVA_LONG, s + kind.privateOff) == privateData(d)) {
                        if (claim(d)) {
                            count += 1 + releaseDependents(d);
                            ALL.set(ValueLayout.JAVA_LONG, s + kind.releaseOff, 0L);
                        }
                    } else if (fn == kind.stub) {
                        release(kind, s); // another export's struct: its own lookup
                    } else {
                        Callbacks.invokeVoidPointer(MemorySegment.ofAddress(fn),
                                MemorySegment.ofAddress(s).reinterpret(kind.size));
                    }
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported child "
                            + kind.name + " failed", t);
                }
            }
            return count;
        }

        /** {@code n} nodes were released (their structs marked): the last one frees the block and closes the owner. */
        private void drop(int n) {
            if (live.addAndGet(-n) != 0) {
                return;
            }
            kind.registry.remove(key, keyCount());
            Native.free(MemorySegment.ofAddress(base));
            if (owner != null) {
                try {
                    owner.close();
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: closing the owner of an exported "
                            + kind.name + " failed (on the consumer's release)", t);
                }
            }
        }
    }

    // ---- upcalls: never throw ----

    private static void releaseSchema(MemorySegment schema) {
        try {
            release(SCHEMA, schema.address());
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported ArrowSchema failed", t);
        }
    }

    private static void releaseArray(MemorySegment array) {
        try {
            release(ARRAY, array.address());
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported ArrowArray failed", t);
        }
    }

    /**
     * Releases the node whose struct is at {@code struct} (the release callback's argument: in place, or moved
     * by the consumer), then marks it released ({@code release = NULL}).
     */
    private static void release(Kind kind, long struct) {
        long privateData = ALL.get(ValueLayout.JAVA_LONG, struct + kind.privateOff);
        Tree tree = kind.registry.get(privateData >>> NODE_BITS);
        int node = tree == null ? -1 : tree.node(privateData);
        if (node < 0 || !tree.claim(node)) {
            LOG.log(System.Logger.Level.WARNING, "devicebridge: release called on an exported " + kind.name
                    + " that was already released (or not exported by devicebridge)");
            ALL.set(ValueLayout.JAVA_LONG, struct + kind.releaseOff, 0L);
            return;
        }
        int released = 1;
        try {
            released += tree.releaseDependents(node);
        } finally {
            ALL.set(ValueLayout.JAVA_LONG, struct + kind.releaseOff, 0L);
            tree.drop(released);
        }
    }
}
