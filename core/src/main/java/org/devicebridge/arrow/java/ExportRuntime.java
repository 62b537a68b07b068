package org.devicebridge.arrow.java;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.arrow.memory.ArrowBuf;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.foreign.LocalCallbacks;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * What exported ArrowSchema/ArrowArray trees hold, and their release callbacks (one upcall stub per
 * kind, made once in the global arena).
 *
 * <p>One export is one {@link Tree}: one malloc block (the child structs, buffer and child pointer arrays,
 * strings, variadic sizes and a table of the nodes) and one registry entry. Node {@code i}'s struct
 * carries {@code private_data = key << NODE_BITS | i}, so a consumer may move a child out and release it
 * after the parent, as the C Data Interface allows: its release finds the tree by the key, the node by
 * the index, and releases that node alone. Each node is released exactly once (a bit per node); a release
 * of a node released already, or of a forged {@code private_data}, is counted and logged and touches
 * nothing. The block is freed, and the entry removed, when the last node is released. A node holds one
 * reference to each Arrow buffer it exports and drops it in its release.
 *
 * <p>Block layout: the structs of nodes {@code 1..n-1} first ({@code (i - 1) * structSize}), node 0 being
 * the caller's struct; the node table at {@link Tree#table}, 16 bytes per node ({@code int} first retained
 * buffer, {@code int} end of its retained buffers, {@code int} first dependent, {@code int} number of
 * dependents). A node's dependents (children, then the dictionary) have consecutive indices. Nothing of
 * the table is read before the node is claimed, and a claimed node keeps the block alive.
 */
final class ExportRuntime {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    /** Low bits of {@code private_data} that hold the node index; the key is above them. */
    static final int NODE_BITS = 16;
    static final int NODES_PER_KEY = 1 << NODE_BITS;
    /** Keys from {@link ExportRegistry} fit above the node bits below this (2^48: centuries of exports). */
    private static final long KEY_LIMIT = 1L << (64 - NODE_BITS);
    /** Bytes of one node table entry. */
    static final long TABLE_ENTRY = 16;

    /** Every address, for reading and writing our own structs and blocks by address. */
    static final MemorySegment ALL = ArrowArrayFields.BY_ADDRESS;

    static final long SCHEMA_SIZE = ArrowSchema.sizeof();
    static final long ARRAY_SIZE = ArrowArray.sizeof();

    /** 64 zero bytes: the target of every exported buffer that has no bytes (never NULL, see the spec's note). */
    static final MemorySegment ZEROS = Arena.global().allocate(64, 64);

    static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(), ExportRuntime.class,
            "releaseSchema", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), ExportRuntime.class,
            "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    /** The exported ArrowSchema trees. */
    static final Kind SCHEMA = new Kind("ArrowSchema", SCHEMA_SIZE, ArrowSchema.release$offset(),
            ArrowSchema.private_data$offset(), RELEASE_SCHEMA.address());
    /** The exported ArrowArray trees. */
    static final Kind ARRAY = new Kind("ArrowArray", ARRAY_SIZE, ArrowArray.release$offset(),
            ArrowArray.private_data$offset(), RELEASE_ARRAY.address());

    /** Release calls that found no live node under their private_data (a second release, a forged struct). */
    static final AtomicLong STALE_RELEASES = new AtomicLong();

    static {
        // A struct exported here and imported here is released by a Java call, not a native round trip.
        LocalCallbacks.register(RELEASE_SCHEMA, ExportRuntime::releaseSchema);
        LocalCallbacks.register(RELEASE_ARRAY, ExportRuntime::releaseArray);
    }

    private ExportRuntime() {}

    /** One struct kind: its layout facts, its release stub, its registry and its counters. */
    static final class Kind {
        final String name;
        final long size;
        final long releaseOff;
        final long privateOff;
        final long stub;
        final ExportRegistry<Tree> registry = new ExportRegistry<>();
        /** Nodes released (each once); tests compare it with what they exported. */
        final LongAdder releases = new LongAdder();
        /** Nodes exported; with {@link #releases}, one counter per export and one per release. */
        private final LongAdder exported = new LongAdder();

        private Kind(String name, long size, long releaseOff, long privateOff, long stub) {
            this.name = name;
            this.size = size;
            this.releaseOff = releaseOff;
            this.privateOff = privateOff;
            this.stub = stub;
        }

        /** Nodes exported and not released yet; tests assert it returns to its baseline. */
        long liveNodes() {
            return exported.sum() - releases.sum();
        }
    }

    /** One exported tree of structs: its block, the buffers its nodes hold, which nodes are released. */
    static final class Tree {
        private static final VarHandle LIVE;
        private static final VarHandle RELEASED;
        private static final VarHandle BITS = MethodHandles.arrayElementVarHandle(long[].class);

        static {
            try {
                MethodHandles.Lookup l = MethodHandles.lookup();
                LIVE = l.findVarHandle(Tree.class, "live", int.class);
                RELEASED = l.findVarHandle(Tree.class, "released", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final Kind kind;
        /** The block's address. */
        final long base;
        /** Offset of the node table in the block. */
        final long table;
        final int nodes;
        /** The Arrow buffers the nodes hold, node by node (ranges in the node table); {@code null} for none. */
        final ArrowBuf[] retained;
        /** The first registry key (set once, when registered). */
        private long key;
        /** Nodes not released yet. */
        @SuppressWarnings("unused")
        private volatile int live;
        /** Released nodes, one bit each, for trees of at most 64 nodes. */
        @SuppressWarnings("unused")
        private volatile long released;
        /** Released nodes of larger trees. */
        private final long[] releasedBits;

        Tree(Kind kind, long base, long table, int nodes, ArrowBuf[] retained) {
            this.kind = kind;
            this.base = base;
            this.table = table;
            this.nodes = nodes;
            this.retained = retained;
            this.releasedBits = nodes > 64 ? new long[(nodes + 63) >>> 6] : null;
            this.live = nodes;
        }

        /** Registers this tree; returns the {@code private_data} of node 0 (node i's is that plus i). */
        long register() {
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

        /** The address of node {@code i}'s struct (i >= 1) in the block. */
        long struct(int i) {
            return base + (i - 1) * kind.size;
        }

        long privateData(int i) {
            return (key << NODE_BITS) + i;
        }

        /** The node {@code privateData} names in this tree, or -1. */
        int node(long privateData) {
            long i = privateData - (key << NODE_BITS);
            return i >= 0 && i < nodes ? (int) i : -1;
        }

        /** Marks node {@code i} released; {@code false} if it was already. */
        boolean claim(int i) {
            long bit = 1L << (i & 63);
            if (releasedBits == null) {
                long old = (long) RELEASED.getAndBitwiseOr(this, bit);
                return (old & bit) == 0;
            }
            long old = (long) BITS.getAndBitwiseOr(releasedBits, i >>> 6, bit);
            return (old & bit) == 0;
        }

        /**
         * Releases claimed node {@code i}: its dependents still in place first (ours recursively, here;
         * anyone else's through their release), then its buffers. Returns the number of nodes of this tree
         * released here; the caller marks the struct released and then calls {@link #drop}.
         */
        int releaseClaimed(int i, int depth) {
            int count = 1;
            long entry = base + table + TABLE_ENTRY * i;
            int firstDependent = ALL.get(ValueLayout.JAVA_INT, entry + 8);
            int dependents = ALL.get(ValueLayout.JAVA_INT, entry + 12);
            // A tree of at most 64 nodes claims every dependent still in place with one atomic operation.
            long won = releasedBits == null ? claimInPlace(firstDependent, dependents, depth) : 0L;
            for (int d = firstDependent; d < firstDependent + dependents; d++) {
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
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported child struct failed", t);
                }
            }
            if (retained != null) {
                int from = ALL.get(ValueLayout.JAVA_INT, entry);
                int to = ALL.get(ValueLayout.JAVA_INT, entry + 4);
                for (int b = from; b < to; b++) {
                    try {
                        retained[b].getReferenceManager().release();
                    } catch (Throwable t) {
                        LOG.log(System.Logger.Level.ERROR, "devicebridge: dropping an exported Arrow buffer failed", t);
                    }
                }
            }
            return count;
        }

        /** Whether dependent {@code d} is still in its place in the block, this tree's node, not released. */
        private boolean inPlace(int d, int depth) {
            long s = struct(d);
            return depth < 1024 && ALL.get(ValueLayout.JAVA_LONG, s + kind.releaseOff) == kind.stub
                    && ALL.get(ValueLayout.JAVA_LONG, s + kind.privateOff) == privateData(d);
        }

        /**
         * Claims, in a tree of at most 64 nodes, dependents [first, first + count) that are {@link #inPlace};
         * returns the bits of those this call claimed (not claimed before by another release).
         */
        private long claimInPlace(int first, int count, int depth) {
            long mask = 0;
            for (int d = first; d < first + count; d++) {
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
        void drop(int n) {
            kind.releases.add(n);
            if ((int) LIVE.getAndAdd(this, -n) == n) {
                kind.registry.remove(key, keyCount());
                Native.free(MemorySegment.ofAddress(base));
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
     * Releases the node in {@code struct} (already sized), then marks it released. Children and the
     * dictionary still live in place are released first; ones the consumer moved away (release NULL in
     * place) are left to their own release.
     */
    static void release(Kind kind, MemorySegment struct) {
        release(kind, struct.address());
    }

    /** {@link #release(Kind, MemorySegment)} of the struct at {@code struct} (its release callback's argument). */
    static void release(Kind kind, long struct) {
        long privateData = ALL.get(ValueLayout.JAVA_LONG, struct + kind.privateOff);
        Tree tree = kind.registry.get(privateData >>> NODE_BITS);
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

    /** Exported nodes (schema and array) not released yet; tests assert this returns to its baseline. */
    static int liveNodes() {
        return Math.toIntExact(SCHEMA.liveNodes() + ARRAY.liveNodes());
    }
}
