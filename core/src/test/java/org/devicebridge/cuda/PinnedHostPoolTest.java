package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import org.devicebridge.DeviceKind;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link PinnedHostPool}: its size classes (everywhere), its typed failure without a driver, and on a GPU:
 * pinned blocks, reuse with no {@code cuMemHostAlloc} in a steady state, {@code contains}, a refused double
 * free, and the memory freed at close (at once, or when the last lent block comes back).
 */
class PinnedHostPoolTest {
    /** The slab of 1024-byte blocks: 32 blocks, raised to the 64 KiB slab minimum. */
    private static final long ONE_SLAB = 64 * 1024;

    @ParameterizedTest
    @CsvSource({"1, 64", "64, 64", "65, 128", "4096, 4096", "4097, 8192", "262144, 262144",
                "262145, 327680", "300000, 327680", "393216, 393216", "524288, 524288", "524289, 655360",
                "268435456, 268435456", "300000000, 335544320"})
    void sizeClassesArePowersOfTwoThenQuartersWithAtMostAQuarterWasted(long bytes, long block) {
        assertEquals(block, PinnedHostPool.blockSize(bytes));
        assertTrue(block >= bytes && (bytes <= PinnedHostPool.SMALL_MAX || block - bytes <= bytes / 4));
        assertEquals(0, block % 64);
    }

    @Test
    void aNonPositiveSizeIsRefused() {
        assertThrows(InvalidArgumentException.class, () -> PinnedHostPool.blockSize(0));
    }

    @Test
    void withoutADriverCreateFailsTyped() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present");
        assertThrows(CudaUnavailableException.class, PinnedHostPool::create);
        assertThrows(InvalidArgumentException.class, () -> PinnedHostPool.create(0), "the argument is checked first");
    }

    @Test
    @RequiresCuda
    void blocksArePinnedAlignedAndReusedWithoutCallingTheDriverAgain() {
        CudaCounters.Snapshot start = CudaCounters.snapshot();
        try (PinnedHostPool pool = PinnedHostPool.create()) {
            long[] sizes = {10, 100, 1000, 5000, 70_000, 300_000, 3_000_000};
            List<MemorySegment> first = new ArrayList<>();
            for (long s : sizes) {
                MemorySegment b = pool.allocate(s);
                assertEquals(s, b.byteSize());
                assertEquals(0, b.address() % 64);
                assertTrue(pool.contains(b));
                b.set(ValueLayout.JAVA_BYTE, s - 1, (byte) 1);
                PointerAttributes a = PointerAttributes.query(b.address());
                assertEquals(DeviceKind.CUDA_HOST, a.kind(), "block of " + s + " bytes");
                first.add(b);
            }
            first.forEach(pool::free);
            for (int round = 1; round < PinnedHostPool.DEFAULT_ROTATION; round++) { // the large class's blocks in turn
                List<MemorySegment> again = new ArrayList<>();
                for (long s : sizes) {
                    again.add(pool.allocate(s));
                }
                again.forEach(pool::free);
            }
            long calls = CudaCounters.snapshot().memHostAllocCalls();
            for (int round = 0; round < 100; round++) {
                List<MemorySegment> again = new ArrayList<>();
                for (long s : sizes) {
                    again.add(pool.allocate(s));
                }
                again.forEach(pool::free);
            }
            assertEquals(calls, CudaCounters.snapshot().memHostAllocCalls(), "a steady state calls no cuMemHostAlloc");
            assertEquals(0, pool.lentBlocks());
            assertTrue(pool.reservedBytes() > 0);
        }
        assertEquals(start.pinnedBytesOutstanding(), CudaCounters.snapshot().pinnedBytesOutstanding());
    }

    @Test
    @RequiresCuda
    void largeBlocksAreUsedInTurnSmallOnesAndHugeOnesAreReusedAtOnce() {
        for (int rotation : new int[] {1, 3}) {
            try (PinnedHostPool pool = PinnedHostPool.create(rotation)) {
                List<Long> large = new ArrayList<>();
                List<Long> small = new ArrayList<>();
                for (int round = 0; round < 3 * rotation + 1; round++) {
                    MemorySegment l = pool.allocate(3_000_000);
                    MemorySegment t = pool.allocate(1000);
                    large.add(l.address());
                    small.add(t.address());
                    pool.free(l);
                    pool.free(t);
                }
                for (int k = 0; k < large.size(); k++) {
                    assertEquals(large.get(k % rotation), large.get(k), "block " + k + " of " + rotation + " in turn");
                }
                assertEquals(rotation, new java.util.HashSet<>(large).size(), "exactly the blocks in turn");
                assertEquals(1, new java.util.HashSet<>(small).size(), "a slab block is reused at once");
                MemorySegment huge = pool.allocate(PinnedHostPool.ROTATION_MAX + 1);
                long at = huge.address();
                pool.free(huge);
                MemorySegment again = pool.allocate(PinnedHostPool.ROTATION_MAX + 1);
                assertEquals(at, again.address(), "a block above the rotation's limit is reused at once");
                pool.free(again);
                long expected = rotation * PinnedHostPool.blockSize(3_000_000)
                        + PinnedHostPool.blockSize(PinnedHostPool.ROTATION_MAX + 1);
                assertEquals(expected, pool.reservedBytes() - ONE_SLAB, "pinned memory held");
            }
        }
        assertThrows(InvalidArgumentException.class, () -> PinnedHostPool.create(0));
    }

    @Test
    @RequiresCuda
    @SuppressWarnings("restricted") // ranges made from raw addresses, never accessed
    void containsOnlyLentBlocksAndADoubleFreeIsRefused() {
        try (PinnedHostPool pool = PinnedHostPool.create()) {
            MemorySegment b = pool.allocate(1000);
            assertTrue(pool.contains(b.asSlice(10, 100)));
            assertFalse(pool.contains(MemorySegment.ofAddress(b.address()).reinterpret(2000)), "past the block");
            pool.free(b);
            assertFalse(pool.contains(b));
            assertThrows(InvalidArgumentException.class, () -> pool.free(b));
            assertThrows(InvalidArgumentException.class, () -> pool.free(MemorySegment.ofAddress(64).reinterpret(8)));
        }
    }

    @Test
    @RequiresCuda
    void closingWithALentBlockFreesWhenItComesBack() {
        CudaCounters.Snapshot start = CudaCounters.snapshot();
        PinnedHostPool pool = PinnedHostPool.create();
        MemorySegment b = pool.allocate(4096);
        pool.close();
        assertThrows(HandleClosedException.class, () -> pool.allocate(64));
        b.set(ValueLayout.JAVA_LONG, 0, 42); // still the caller's until freed
        assertTrue(pool.reservedBytes() > 0);
        pool.free(b);
        assertEquals(0, pool.reservedBytes());
        assertThrows(IllegalStateException.class, () -> b.get(ValueLayout.JAVA_LONG, 0), "freed memory is out of reach");
        assertEquals(start.pinnedBytesOutstanding(), CudaCounters.snapshot().pinnedBytesOutstanding());
    }
}
