package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.devicebridge.DeviceBridgeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The split of one chunk's host copies into slices copied by several threads. */
class StagingCopyTest {
    private static MemorySegment random(Arena arena, Random r, long size) {
        MemorySegment s = arena.allocate(Math.max(1, size)).asSlice(0, size);
        byte[] b = new byte[(int) size];
        r.nextBytes(b);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
        return s;
    }

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(ints = {1, 2, 3, 8})
    void manyOddSizedCopiesAndZeroFillsLandExactlyWhateverTheSplit(int threads) {
        Random r = new Random(threads);
        try (Arena arena = Arena.ofShared()) {
            StagingCopy copy = new StagingCopy(1, 1, threads);
            for (int round = 0; round < 20; round++) {
                int n = 1 + r.nextInt(300);
                long[] sizes = new long[n];
                long total = 0;
                for (int i = 0; i < n; i++) {
                    sizes[i] = r.nextInt(4) == 0 ? r.nextInt(3) : r.nextInt(5000);
                    total += sizes[i];
                }
                MemorySegment dst = arena.allocate(total + 1);
                dst.fill((byte) 0x5A);
                byte[] expected = new byte[(int) total + 1];
                expected[(int) total] = 0x5A; // the byte after the last piece is untouched
                long at = 0;
                for (int i = 0; i < n; i++) {
                    if (r.nextInt(5) == 0) {
                        copy.zero(dst, at, sizes[i]);
                    } else {
                        MemorySegment src = random(arena, r, sizes[i] + 3);
                        if (r.nextBoolean()) {
                            copy.copy(src, 3, dst, at, sizes[i]);
                        } else {
                            copy.pack(src, 3, dst, at, sizes[i]); // the upload's copies into staging
                        }
                        MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 3, expected, (int) at, (int) sizes[i]);
                    }
                    at += sizes[i];
                }
                assertEquals(total, copy.totalBytes());
                assertEquals(total < 2 ? 1 : (int) Math.min(threads, total), copy.slices(), "slices");
                copy.run();
                assertEquals(0, copy.totalBytes(), "run clears the pieces");
                assertArrayEquals(expected, dst.toArray(ValueLayout.JAVA_BYTE), "round " + round);
            }
        }
    }

    @Test
    void smallChunksAndThreadConfinedSegmentsStayOnTheCallersThread() {
        StagingCopy copy = new StagingCopy(4L << 20, 1L << 20, 8);
        try (Arena shared = Arena.ofShared(); Arena confined = Arena.ofConfined()) {
            MemorySegment big = shared.allocate(16L << 20);
            MemorySegment bigToo = shared.allocate(16L << 20);
            copy.copy(big, 0, bigToo, 0, (4L << 20) - 1);
            assertEquals(1, copy.slices(), "under the threshold");
            copy.clear();
            copy.copy(big, 0, bigToo, 0, 16L << 20);
            assertEquals(8, copy.slices(), "16 MiB over 8 threads");
            copy.clear();
            copy.copy(big, 0, bigToo, 0, 5L << 20);
            assertEquals(5, copy.slices(), "no slice under 1 MiB");
            copy.clear();
            MemorySegment mine = confined.allocate(16L << 20);
            copy.copy(big, 0, mine, 0, 16L << 20);
            assertEquals(1, copy.slices(), "a confined segment is not touched by other threads");
            copy.run();
        }
    }

    @Test
    void aFailingSliceThrowsOnTheCallerAfterEverySliceStoppedAndTheCopyIsReusable() {
        Random r = new Random(3);
        try (Arena arena = Arena.ofShared()) {
            StagingCopy copy = new StagingCopy(1, 1, 4);
            Arena gone = Arena.ofShared();
            MemorySegment dead = gone.allocate(1000);
            gone.close();
            MemorySegment dst = arena.allocate(4000);
            MemorySegment src = random(arena, r, 3000);
            copy.copy(src, 0, dst, 0, 3000);
            copy.copy(dead, 0, dst, 3000, 1000); // the last slice, taken by a worker or the caller
            DeviceBridgeException e = assertThrows(DeviceBridgeException.class, copy::run);
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertEquals(0, copy.totalBytes(), "a failed run clears the pieces too");

            copy.copy(src, 0, dst, 1000, 3000);
            copy.run();
            assertArrayEquals(src.toArray(ValueLayout.JAVA_BYTE),
                    dst.asSlice(1000, 3000).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void anInterruptedCallerStillWaitsForEverySliceAndKeepsItsInterrupt() {
        Random r = new Random(5);
        try (Arena arena = Arena.ofShared()) {
            StagingCopy copy = new StagingCopy(1, 1024, 4);
            MemorySegment src = random(arena, r, 1 << 20);
            MemorySegment dst = arena.allocate(1 << 20);
            copy.copy(src, 0, dst, 0, 1 << 20);
            Thread.currentThread().interrupt();
            try {
                copy.run();
                assertTrue(Thread.interrupted(), "the interrupt is kept");
            } finally {
                Thread.interrupted();
            }
            assertArrayEquals(src.toArray(ValueLayout.JAVA_BYTE), dst.toArray(ValueLayout.JAVA_BYTE));
        }
    }
}
