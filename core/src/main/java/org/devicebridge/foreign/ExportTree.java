package org.devicebridge.foreign;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * One exported tree of {@code ArrowSchema} or {@code ArrowArray} structs, and the release callbacks of every
 * such export (one upcall stub per struct kind, made once in the global arena, shared by the Arrow Java export
 * of {@code arrow.java} and the FFM-only export of {@code arrow}).
 *
 * <p>One export is one tree: one malloc block holding the structs of nodes {@code 1..n-1} (node {@code i} at
 * {@code base + (i - 1) * size}; node 0 is the caller's struct) and whatever else the subclass puts there, and
 * one registry entry. Node {@code i}'s struct carries {@code private_data = key << NODE_BITS | i}, so a consumer
 * may move a child out and release it after its parent, as the C Data Interface allows: its release finds the
 * tree by the key and the node by the index, and releases that node alone. Each node is released exactly once
 * (a bit per node, claimed atomically); a parent's release releases its dependents (children, then the
 * dictionary) still in place, and leaves those moved out to their own release. A release of a node released
 * already, or of a forged {@code private_data}, is counted and logged and touches nothing but its own
 * {@code release} field. The last node released frees the block, removes the entry, then runs {@link #freed}.
 *
 * <p>A subclass says which nodes depend on a node ({@link #dependentCount}, {@link #dependent}: any indices,
 * consecutive or not) and what a node itself holds ({@link #releaseHeld}). Nothing of the block is read for a
 * node before it is claimed, and a claimed node keeps the block alive.
 */
public abstract class ExportTree {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    /** Low bits of {@code private_data} that hold the node index; the key is above them. */
    public static final int NODE_BITS = 16;
    /** Keys from {@link ExportRegistry} fit above the node bits below this (2^48: centuries of exports). */
    private static final long KEY_LIMIT = 1L << (64 - NODE_BITS);
    /** Every address: our own blocks and the structs handed to us are read and written by address. */
    private static final MemorySegment ALL = ArrowArrayFields.BY_ADDRESS;

    private static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(), ExportTree.class,
            "releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    private static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), ExportTree.class,
            "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    /** Exported ArrowSchema trees. */
    public static final Kind SCHEMA = new Kind("ArrowSchema", ArrowSchema.sizeof(), ArrowSchema.release$offset(),
            ArrowSchema.private_data$offset(), RELEASE_SCHEMA.address());
    /** Exported ArrowArray trees. */
    public static final Kind ARRAY = new Kind("ArrowArray", ArrowArray.sizeof(), ArrowArray.release$offset(),
            ArrowArray.private_data$offset(), RELEASE_ARRAY.address());

    /** Release calls that found no live node under their private_data (a second release, a forged struct). */
    private static final AtomicLong STALE_RELEASES = new AtomicLong();

    static {
        // A struct exported here and imported here is released by a Java call, not a native round trip.
        LocalCallbacks.register(RELEASE_SCHEMA, ExportTree::releaseSchema);
        LocalCallbacks.register(RELEASE_ARRAY, ExportTree::releaseArray);
    }

    /** One struct kind: its layout facts, its release stub, its registry and its counters. */
    public static final class Kind {
        public final String name;
        /** Bytes of one struct. */
        public final long size;
        private final long releaseOff;
        private final long privateOff;
        /** The address of the release callback every exported struct of this kind carries. */
        public final long stub;
        private final ExportRegistry<ExportTree> registry = new ExportRegistry<>();
        private final LongAdder releases = new LongAdder();
        private final LongAdder exported = new LongAdder();

        private Kind(String name, long size, long releaseOff, long privateOff, long stub) {
            this.name = name;
            this.size = size;
            this.releaseOff = releaseOff;
            this.privateOff = privateOff;
            this.stub = stub;
        }

        /** Nodes released (each once) since the JVM started; tests compare it with what they exported. */
        public long releases() {
            return releases.sum();
        }

        /** Nodes exported and not released yet; tests assert it returns to its baseline. */
        public long liveNodes() {
            return exported.sum() - releases.sum();
        }
    }

    private static final VarHandle LIVE;
    private static final VarHandle RELEASED;
    private static final VarHandle BITS = MethodHandles.arrayElementVarHandle(long[].class);

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            LIVE = l.findVarHandle(ExportTree.class, "live", int.class);
            RELEASED = l.findVarHandle(ExportTree.class, "released", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    protected final Kind kind;
    /** The block's address. */
    public final long base;
    private final int nodes;
    /** The first registry key (set once, when registered). */
    private long key;
    /** Nodes not released yet. */
    @SuppressWarnings("unused")
    private volatile int live;
    /** Released nodes, one bit each, for trees of at most 64 nodes. */
    @SuppressWarnings("unused")
    private volatile long released;
    /** Released nodes of larger trees; {@code null} for trees of at most 64. */
    private final long[] releasedBits;

    /** A tree of {@code nodes} nodes whose block (malloc'ed, freed by the last release) is at {@code base}. */
    protected ExportTree(Kind kind, long base, int nodes) {
        this.kind = kind;
        this.base = base;
        this.nodes = nodes;
        this.releasedBits = nodes > 64 ? new long[(nodes + 63) >>> 6] : null;
        this.live = nodes;
    }

    /** The number of nodes that depend on node {@code i} (its children, then its dictionary). */
    protected abstract int dependentCount(int i);

    /** The index of dependent {@code k} of node {@code i}. */
    protected abstract int dependent(int i, int k);

    /** Drops what node {@code i} itself holds, after its dependents; never throws (logs a failure). */
    protected abstract void releaseHeld(int i);

    /** Runs once, after the block is freed and the entry removed; never throws (logs a failure). */
    protected void freed() {}

    /**
     * Registers this tree; returns the {@code private_data} of node 0 (node i's is that plus i). On a throw
     * nothing is registered.
     */
    public final long register() {
        long first = kind.registry.register(this, keyCount());
        if (first >= KEY_LIMIT - keyCount()) {
            kind.registry.remove(first, keyCount());
            throw new DeviceBridgeException("internal error: the export key space is exhausted");
        }
        key = first;
        kind.exported.add(nodes);
        return first << NODE_BITS;
    }

    private int keyCount() {
        return ((nodes - 1) >>> NODE_BITS) + 1;
    }

    /** The address of node {@code i}'s struct in the block ({@code i >= 1}; the root is the caller's). */
    public final long struct(int i) {
        return base + (i - 1L) * kind.size;
    }

    public final long privateData(int i) {
        return (key << NODE_BITS) + i;
    }

    /** The node {@code privateData} names in this tree, or -1. */
    private int node(long privateData) {
        long i = privateData - (key << NODE_BITS);
        return i >= 0 && i < nodes ? (int) i : -1;
    }

    /** Marks node {@code i} released; {@code false} if it was already. */
    private boolean claim(int i) {
        long bit = 1L << (i & 63);
        long old = releasedBits == null ? (long) RELEASED.getAndBitwiseOr(this, bit)
                : (long) BITS.getAndBitwiseOr(releasedBits, i >>> 6, bit);
        return (old & bit) == 0;
    }

    /**
     * Releases claimed node {@code i}: its dependents still in place first (ours recursively, here; anyone
     * else's through their release), then what it holds. Returns the number of nodes of this tree released
     * here; the caller marks the struct released and then calls {@link #drop}.
     */
    private int releaseClaimed(int i, int depth) {
        int count = 1;
        int dependents = dependentCount(i);
        // A tree of at most 64 nodes claims every dependent still in place with one atomic operation.
        long won = releasedBits == null && dependents > 0 ? claimInPlace(i, dependents, depth) : 0L;
        for (int k = 0; k < dependents; k++) {
            int d = dependent(i, k);
            long s = struct(d);
            try {
                if (releasedBits == null ? (won & (1L << d)) != 0 : inPlace(d, depth) && claim(d)) {
                    count += releaseClaimed(d, depth + 1);
                    ALL.set(ValueLayout.JAVA_LONG, s + kind.releaseOff, 0L);
                    continue;
                }
                long fn = ALL.get(ValueLayout.JAVA_LONG, s + kind.releaseOff);
                if (fn == 0) {
                    continue; // moved out by the consumer, or released already
                }
                if (fn == kind.stub) {
                    release(kind, s); // not this node: its own lookup
                } else {
                    Callbacks.invokeVoidPointer(MemorySegment.ofAddress(fn), MemorySegment.ofAddress(s).reinterpret(kind.size));
                }
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported child " + kind.name + " failed", t);
            }
        }
        releaseHeld(i);
        return count;
    }

    /** Whether dependent {@code d} is still in its place in the block, this tree's node, not released. */
    private boolean inPlace(int d, int depth) {
        long s = struct(d);
        return depth < 1024 && ALL.get(ValueLayout.JAVA_LONG, s + kind.releaseOff) == kind.stub
                && ALL.get(ValueLayout.JAVA_LONG, s + kind.privateOff) == privateData(d);
    }

    /**
     * Claims, in a tree of at most 64 nodes, the dependents of node {@code i} that are {@link #inPlace}; returns
     * the bits of those this call claimed (not claimed before by another release).
     */
    private long claimInPlace(int i, int dependents, int depth) {
        long mask = 0;
        for (int k = 0; k < dependents; k++) {
            int d = dependent(i, k);
            if (inPlace(d, depth)) {
                mask |= 1L << d;
            }
        }
        if (mask == 0) {
            return 0;
        }
        long old = (long) RELEASED.getAndBitwiseOr(this, mask);
        return mask & ~old;
    }

    /** {@code n} nodes were released (their structs marked): the last one frees the block. */
    private void drop(int n) {
        kind.releases.add(n);
        if ((int) LIVE.getAndAdd(this, -n) == n) {
            kind.registry.remove(key, keyCount());
            Native.free(MemorySegment.ofAddress(base));
            freed();
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

    /** {@link #release(Kind, long)} of {@code struct} (already sized). */
    public static void release(Kind kind, MemorySegment struct) {
        release(kind, struct.address());
    }

    /**
     * Releases the node whose struct is at {@code struct} (the release callback's argument: in place, or moved
     * by the consumer), then marks it released ({@code release = NULL}). Dependents still in place are released
     * first; ones the consumer moved away (release NULL in place) are left to their own release.
     */
    public static void release(Kind kind, long struct) {
        long privateData = ALL.get(ValueLayout.JAVA_LONG, struct + kind.privateOff);
        ExportTree tree = kind.registry.get(privateData >>> NODE_BITS);
        int node = tree == null ? -1 : tree.node(privateData);
        if (node < 0 || !tree.claim(node)) {
            STALE_RELEASES.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "devicebridge: release called on an exported " + kind.name
                    + " that was already released (or not exported by devicebridge)");
            ALL.set(ValueLayout.JAVA_LONG, struct + kind.releaseOff, 0L);
            return;
        }
        int released = 1;
        try {
            released = tree.releaseClaimed(node, 0);
        } finally {
            ALL.set(ValueLayout.JAVA_LONG, struct + kind.releaseOff, 0L);
            tree.drop(released);
        }
    }

    /** Release calls since the JVM started that found no live node (a second release, a forged struct). */
    public static long staleReleases() {
        return STALE_RELEASES.get();
    }

    /** Exported nodes (schema and array, of every export) not released yet; tests assert it returns to its baseline. */
    public static int liveNodes() {
        return Math.toIntExact(SCHEMA.liveNodes() + ARRAY.liveNodes());
    }
}
