package org.devicebridge.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Exact, always-on accounting of what the library itself allocated and has not freed: malloc blocks, the
 * arenas it owns beyond one call, pinned host blocks, blocks a pinned pool lent, device allocations and
 * IPC mappings (blocks and bytes of each), with the live handles ({@link HandleTracker}) and unreleased
 * exports ({@link ExportRegistry}) beside them. Tests compare two {@link #inUse()} snapshots and expect
 * no difference; this is the leak verdict, not the C heap's statistics (which include the JVM's own).
 *
 * <p>What a pool keeps idle for reuse (a thread's kept struct block, a host block cache, the slabs of a
 * pinned pool) is counted as allocated <em>and</em> as pooled: {@link #inUse()} is allocated less pooled,
 * so a pool that grows while a test runs is not a leak, while a block lent from it and never given back is.
 * The counters are {@link ThreadCounts}: a thread's add is a store to its own slots, from any thread.
 */
public final class Allocations {

    /** What is counted. */
    public enum Kind {
        /** {@code malloc}, {@code calloc} and {@code aligned_alloc} blocks (bytes: their usable size). */
        HEAP("malloc block"),
        /** Arenas the library made that outlive the call making them (a handle's own arena). */
        ARENA("library arena"),
        /** {@code cuMemHostAlloc} allocations. */
        PINNED("pinned host allocation"),
        /** Blocks a pinned host pool lent and has not had back. */
        POOL_BLOCK("pinned pool block lent"),
        /** {@code cuMemAlloc} and {@code cuMemAllocFromPoolAsync} allocations. */
        DEVICE("device allocation"),
        /** Device memory mapped by {@code cuIpcOpenMemHandle}. */
        IPC("IPC mapping");

        final String noun;

        Kind(String noun) {
            this.noun = noun;
        }
    }

    private static final int KINDS = Kind.values().length;
    // slots of COUNTS: blocks, bytes, pooled blocks, pooled bytes (KINDS each), then the pools' own handles
    private static final int BLOCKS = 0;
    private static final int BYTES = KINDS;
    private static final int POOLED_BLOCKS = 2 * KINDS;
    private static final int POOLED_BYTES = 3 * KINDS;
    private static final int POOLED_HANDLES = 4 * KINDS;
    private static final ThreadCounts COUNTS = new ThreadCounts(4 * KINDS + 1);

    private Allocations() {}

    /** One {@code kind} block of {@code bytes} was allocated. */
    public static void allocated(Kind kind, long bytes) {
        COUNTS.add(BLOCKS + kind.ordinal(), 1);
        COUNTS.add(BYTES + kind.ordinal(), bytes);
    }

    /** One {@code kind} block of {@code bytes} (as counted when it was allocated) was freed. */
    public static void freed(Kind kind, long bytes) {
        COUNTS.add(BLOCKS + kind.ordinal(), -1);
        COUNTS.add(BYTES + kind.ordinal(), -bytes);
    }

    /** A pool now keeps an allocated {@code kind} block of {@code bytes} idle (or holds it for lending). */
    public static void pooled(Kind kind, long bytes) {
        COUNTS.add(POOLED_BLOCKS + kind.ordinal(), 1);
        COUNTS.add(POOLED_BYTES + kind.ordinal(), bytes);
    }

    /** A pool no longer keeps that block: it lent it as a whole again, or freed it. */
    public static void unpooled(Kind kind, long bytes) {
        COUNTS.add(POOLED_BLOCKS + kind.ordinal(), -1);
        COUNTS.add(POOLED_BYTES + kind.ordinal(), -bytes);
    }

    /** {@code delta} live handles are a pool's own (its slabs), not the caller's. */
    public static void pooledHandles(int delta) {
        COUNTS.add(POOLED_HANDLES, delta);
    }

    /**
     * Counts {@code arena} as a library arena until it closes (whoever closes it, however often close is
     * tried): its close runs the cleanup that takes it off the count.
     *
     * @return {@code arena}
     */
    public static Arena track(Arena arena) {
        MemorySegment.NULL.reinterpret(arena, ignored -> freed(Kind.ARENA, 0));
        allocated(Kind.ARENA, 0);
        return arena;
    }

    /** What the library holds and no pool keeps: allocated less pooled, live handles less pools' own. */
    public static Snapshot inUse() {
        long[] blocks = new long[KINDS];
        long[] bytes = new long[KINDS];
        for (int i = 0; i < KINDS; i++) {
            blocks[i] = COUNTS.sum(BLOCKS + i) - COUNTS.sum(POOLED_BLOCKS + i);
            bytes[i] = COUNTS.sum(BYTES + i) - COUNTS.sum(POOLED_BYTES + i);
        }
        return new Snapshot(blocks, bytes, HandleTracker.liveHandles() - COUNTS.sum(POOLED_HANDLES),
                ExportRegistry.outstandingExports());
    }

    /** What pools keep idle (or hold for lending) now; handles: the pools' own. */
    public static Snapshot pooled() {
        long[] blocks = new long[KINDS];
        long[] bytes = new long[KINDS];
        for (int i = 0; i < KINDS; i++) {
            blocks[i] = COUNTS.sum(POOLED_BLOCKS + i);
            bytes[i] = COUNTS.sum(POOLED_BYTES + i);
        }
        return new Snapshot(blocks, bytes, COUNTS.sum(POOLED_HANDLES), 0);
    }

    /** Bytes of {@code kind} allocated and not freed, pooled ones included. */
    public static long allocatedBytes(Kind kind) {
        return COUNTS.sum(BYTES + kind.ordinal());
    }

    /** The counts at one moment (the sums are read one after another: exact once other threads are quiet). */
    public static final class Snapshot {
        private final long[] blocks;
        private final long[] bytes;
        private final long handles;
        private final long exports;

        Snapshot(long[] blocks, long[] bytes, long handles, long exports) {
            this.blocks = blocks;
            this.bytes = bytes;
            this.handles = handles;
            this.exports = exports;
        }

        /** {@return blocks of {@code kind}} */
        public long blocks(Kind kind) {
            return blocks[kind.ordinal()];
        }

        /** {@return bytes of {@code kind}} */
        public long bytes(Kind kind) {
            return bytes[kind.ordinal()];
        }

        /** {@return live handles} */
        public long handles() {
            return handles;
        }

        /** {@return exports not released} */
        public long exports() {
            return exports;
        }

        /** {@return this less {@code before}, count by count} */
        public Snapshot minus(Snapshot before) {
            long[] b = new long[KINDS];
            long[] n = new long[KINDS];
            for (int i = 0; i < KINDS; i++) {
                b[i] = blocks[i] - before.blocks[i];
                n[i] = bytes[i] - before.bytes[i];
            }
            return new Snapshot(b, n, handles - before.handles, exports - before.exports);
        }

        /** {@return whether every count is zero} */
        public boolean isZero() {
            return describe(false).isEmpty();
        }

        /** {@return whether some count is above zero} */
        public boolean hasGrowth() {
            return !describe(true).isEmpty();
        }

        /**
         * The non-zero counts (only those above zero if {@code growthOnly}), e.g.
         * {@code "2 malloc block(s) (96 bytes); 1 handle(s)"}; empty when there are none.
         */
        public String describe(boolean growthOnly) {
            List<String> parts = new ArrayList<>();
            for (Kind k : Kind.values()) {
                long b = blocks[k.ordinal()];
                long n = bytes[k.ordinal()];
                if (growthOnly ? b > 0 || n > 0 : b != 0 || n != 0) {
                    parts.add(String.format(Locale.ROOT, "%d %s(s) (%d bytes)", b, k.noun, n));
                }
            }
            if (growthOnly ? handles > 0 : handles != 0) {
                parts.add(handles + " handle(s)");
            }
            if (growthOnly ? exports > 0 : exports != 0) {
                parts.add(exports + " export(s) unreleased");
            }
            return String.join("; ", parts);
        }

        @Override
        public String toString() {
            String s = describe(false);
            return s.isEmpty() ? "nothing" : s;
        }
    }
}
