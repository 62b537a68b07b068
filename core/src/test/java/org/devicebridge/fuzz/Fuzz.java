package org.devicebridge.fuzz;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.Native;

/**
 * Shared plumbing of the structure-aware fuzz targets: counting release/deleter upcalls (per thread), and
 * the per-input memory whose buffers are recorded so that the oracle can check that every segment the
 * importer hands out lies inside memory the generator owns.
 *
 * <p>Memory-safety contract of the generators (why a bad input can never make the JVM read memory it
 * does not own unless the importer is wrong): every pointer is NULL or points into the input's memory at
 * an object of the right kind (struct pointers at structs of the same kind, pointer arrays at 8-slot
 * pointer arrays, strings at NUL-terminated strings); every data buffer has {@link #BUFFER_CAPACITY}
 * bytes (allocated at least as large as anything can claim), and
 * every length, offset and count the metadata can claim (mutations included) is bounded so that any buffer
 * size derived from it stays below that capacity, or is negative. Buffer contents follow a "small
 * lattice": in every 8-byte word byte 0 is free, byte 1 is below 0x40 and the rest are 0, so read as a
 * little-endian int32 or int64 at a 4-byte aligned position any buffer yields a value below 16,384
 * (semantic offsets are at most 4,096), and even a buffer reinterpreted under a mutated format cannot
 * claim bytes beyond its capacity. The one exception, int32 offsets (list views, dense unions) read as
 * int64 offsets, is excluded by construction (see {@link ArrowFuzz}). Metadata blobs: only the pair count
 * and negative lengths are mutated (a positive length change would shift the parse into key bytes). What
 * remains - a too-small buffer - is the one inconsistency the C interfaces give an importer no way to
 * detect, so it is never generated. Inputs of {@link MalformedArrow} get no random mutation, only the one
 * corruption of their table row, so they need no lattice: their claims are those of the declared formats,
 * bounded by {@link ArrowFuzz#EXACT_MAX_COUNT} elements.
 */
final class Fuzz {
    private Fuzz() {}

    /** Bytes of every data buffer: the largest claim is 128 elements of 96 bytes, or offsets up to 16,383, plus a 64-byte shift. */
    static final long BUFFER_CAPACITY = 16_384 + 128;

    /**
     * Release and deleter calls seen by one fuzzing thread. The callbacks run on the thread that releases
     * (the oracle's thread, which closes every handle itself), so each thread counts its own inputs' calls;
     * a release run on any other thread (a Cleaner) is missing from the oracle's count and fails it.
     */
    static final class Counters {
        long rootReleases;
        long schemaReleases;
        long childReleases;
        long deletes;
        long streamReleases;
        /** The stream the current input's callbacks serve ({@link StreamFuzz}); null outside a stream input. */
        StreamFuzz.State stream;

        void reset() {
            rootReleases = 0;
            schemaReleases = 0;
            childReleases = 0;
            deletes = 0;
            streamReleases = 0;
            stream = null;
        }
    }

    private static final ThreadLocal<Counters> COUNTERS = ThreadLocal.withInitial(Counters::new);

    /** This thread's counters. */
    static Counters counters() {
        return COUNTERS.get();
    }

    private static final FunctionDescriptor VOID_PTR = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);
    /** Release of a root ArrowArray / ArrowDeviceArray: counts and marks the struct released. */
    static final MemorySegment ARRAY_RELEASE = Native.upcallStub(MethodHandles.lookup(), Fuzz.class, "releaseArray", VOID_PTR);
    /** Release of a root ArrowSchema. */
    static final MemorySegment SCHEMA_RELEASE = Native.upcallStub(MethodHandles.lookup(), Fuzz.class, "releaseSchema", VOID_PTR);
    /** Release of a child struct: a consumer must never call it (the root's release owns children). */
    static final MemorySegment CHILD_RELEASE = Native.upcallStub(MethodHandles.lookup(), Fuzz.class, "releaseChild", VOID_PTR);
    /** DLPack deleter. */
    static final MemorySegment DELETER = Native.upcallStub(MethodHandles.lookup(), Fuzz.class, "delete", VOID_PTR);

    // release offset is 64 in ArrowSchema and ArrowArray (and ArrowDeviceArray: the array is first).
    private static void releaseArray(MemorySegment s) {
        COUNTERS.get().rootReleases++;
        s.reinterpret(80).set(ValueLayout.ADDRESS, 64, MemorySegment.NULL);
    }

    private static void releaseSchema(MemorySegment s) {
        COUNTERS.get().schemaReleases++;
        s.reinterpret(72).set(ValueLayout.ADDRESS, 56, MemorySegment.NULL);
    }

    private static void releaseChild(MemorySegment s) {
        COUNTERS.get().childReleases++;
    }

    private static void delete(MemorySegment self) {
        COUNTERS.get().deletes++;
    }

    /**
     * The exact leak check of every fuzz target: what the library held (its {@link Allocations#inUse()}:
     * malloc blocks and bytes, arenas, pinned and device memory, IPC mappings, handles, exports) when
     * {@link #leakCheck()} was called, compared with what it holds at each {@link LeakCheck#verify}. Call
     * {@code verify} only while no input is in flight on any thread (between blocks, at the end): then the
     * difference must be exactly zero, so a single block left behind by one input of millions fails it.
     * A fuzz target gets it with one call, {@code Fuzz.leakCheck()}, before its first input.
     */
    static LeakCheck leakCheck() {
        return new LeakCheck(Allocations.inUse(), HandleTracker.failedReleases());
    }

    /** See {@link #leakCheck()}. */
    static final class LeakCheck {
        private final Allocations.Snapshot baseline;
        private final long failedReleases;

        private LeakCheck(Allocations.Snapshot baseline, long failedReleases) {
            this.baseline = baseline;
            this.failedReleases = failedReleases;
        }

        /** What the library holds beyond the baseline now, described; empty if nothing (exactly). */
        String outstanding() {
            String held = Allocations.inUse().minus(baseline).describe(false);
            long failed = HandleTracker.failedReleases() - failedReleases;
            return failed == 0 ? held : (held.isEmpty() ? "" : held + "; ") + failed + " release step(s) threw";
        }

        /**
         * Fails unless the library holds exactly what it held at the baseline.
         *
         * @param where what ran since, for the message (e.g. "after seeds 0..8191")
         * @throws AssertionError naming every count that differs
         */
        void verify(String where) {
            String held = outstanding();
            if (!held.isEmpty()) {
                throw new AssertionError("library allocations outstanding " + where + ": " + held);
            }
        }
    }

    /** Resets this thread's counters for the next input and returns them. */
    static Counters resetCounters() {
        Counters c = COUNTERS.get();
        c.reset();
        return c;
    }

    /** Bytes of each thread's slab: what most inputs need (a larger one spills into the input's arena). */
    private static final long SLAB_BYTES = 4L << 20;

    /**
     * A thread's reusable input memory: allocated zeroed once, bump-allocated by one input at a time and
     * zeroed again (only the part used) when that input closes - no malloc, free or arena bookkeeping per
     * allocation, which were a visible share of the time per input.
     */
    private static final class Slab {
        final MemorySegment memory = Arena.global().allocate(SLAB_BYTES, 64);
        long used;
        boolean inUse;
    }

    private static final ThreadLocal<Slab> SLABS = ThreadLocal.withInitial(Slab::new);

    /**
     * One input's memory: the thread's slab (zeroed, as a fresh arena's memory is), or where that is full or
     * already held, a confined arena; plus the ranges of its data buffers.
     */
    static final class Mem implements AutoCloseable {
        final Arena arena = Arena.ofConfined();
        final SplittableRandom r;
        private final TreeMap<Long, Long> buffers = new TreeMap<>();
        /** Allocations outside the slab, by address. */
        private final TreeMap<Long, MemorySegment> spilled = new TreeMap<>();
        private final Slab slab;

        Mem(SplittableRandom r) {
            this.r = r;
            Slab s = SLABS.get();
            if (s.inUse) {
                slab = null;
            } else {
                s.inUse = true;
                slab = s;
            }
        }

        /** {@code size} zeroed bytes aligned to {@code align}, valid until {@link #close()}. */
        MemorySegment allocate(long size, long align) {
            if (slab != null) {
                long at = (slab.used + align - 1) & -align;
                if (at + size <= SLAB_BYTES) {
                    slab.used = at + size;
                    return slab.memory.asSlice(at, size);
                }
            }
            MemorySegment m = arena.allocate(size, align);
            spilled.put(m.address(), m);
            return m;
        }

        /**
         * The generator's memory at [address, address + bytes) as a segment of this input (no restricted
         * reinterpretation: a slice of what was allocated), or null where that range is not inside one
         * allocation of this input.
         */
        MemorySegment view(long address, long bytes) {
            if (bytes < 0) {
                return null;
            }
            if (slab != null) {
                long base = slab.memory.address();
                if (address >= base && address - base <= slab.used - bytes) {
                    return slab.memory.asSlice(address - base, bytes);
                }
            }
            Map.Entry<Long, MemorySegment> e = spilled.floorEntry(address);
            if (e != null && address - e.getKey() <= e.getValue().byteSize() - bytes) {
                return e.getValue().asSlice(address - e.getKey(), bytes);
            }
            return null;
        }

        MemorySegment struct(long size) {
            return allocate(size, 16);
        }

        /** A data buffer of BUFFER_CAPACITY bytes whose first {@code fill} bytes follow the small lattice. */
        MemorySegment buffer(long fill) {
            MemorySegment b = allocate(BUFFER_CAPACITY, 64);
            buffers.put(b.address(), b.address() + BUFFER_CAPACITY);
            long n = Math.min(fill, BUFFER_CAPACITY);
            for (long p = 0; p + 1 < n; p += 8) {
                b.set(ValueLayout.JAVA_BYTE, p, (byte) r.nextInt(256));
                b.set(ValueLayout.JAVA_BYTE, p + 1, (byte) r.nextInt(0x40));
            }
            return b;
        }

        /** A NUL-terminated string with 64 bytes of room. */
        MemorySegment string(String s) {
            byte[] bytes = s.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
            MemorySegment m = allocate(Math.max(64, bytes.length + 1), 8);
            MemorySegment.copy(bytes, 0, m, ValueLayout.JAVA_BYTE, 0, bytes.length);
            return m;
        }

        /** {@code true} if [address, address + size) lies inside one data buffer. */
        boolean insideBuffer(long address, long size) {
            Map.Entry<Long, Long> e = buffers.floorEntry(address);
            return e != null && size >= 0 && address + size <= e.getValue();
        }

        @Override
        public void close() {
            if (slab != null) {
                slab.memory.asSlice(0, slab.used).fill((byte) 0);
                slab.used = 0;
                slab.inUse = false;
            }
            arena.close();
        }
    }
}
