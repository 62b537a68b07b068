package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Counting set bits: word-at-a-time on one thread, and split over the common pool for large ranges. */
class BitmapsTest {
    private static long naive(MemorySegment bitmap, long from, long count) {
        long set = 0;
        for (long i = from; i < from + count; i++) {
            set += Bitmaps.bit(bitmap, i) ? 1 : 0;
        }
        return set;
    }

    private static MemorySegment random(Arena arena, long bytes, long seed) {
        MemorySegment s = arena.allocate(bytes);
        Random r = new Random(seed);
        for (long i = 0; i + 8 <= bytes; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        return s;
    }

    @Test
    void smallRangesAtEveryBitOffsetMatchABitByBitCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment b = random(arena, 256, 1);
            for (long from = 0; from < 70; from++) {
                for (long count = 0; count < 1200; count += 7) {
                    assertEquals(naive(b, from, count), Bitmaps.countSet(b, from, count), from + "+" + count);
                }
            }
        }
    }

    @Test
    void largeRangesSplitOverThreadsMatchOneThreadsCountAtOddBounds() {
        long bits = 3 * Bitmaps.PARALLEL_FROM + 12345;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment b = random(arena, Bitmaps.bytes(bits) + 16, 2);
            for (long from : new long[]{0, 1, 63, 64, 1000, 77777}) {
                long count = bits - from - 3;
                long expected = Bitmaps.countSetHere(b, 0, from, count);
                assertEquals(expected, Bitmaps.countSet(b, from, count), "from " + from);
                assertEquals(naive(b, from, count), expected, "from " + from);
            }
            // through one segment spanning memory, as the exporter reads a validity buffer by address
            MemorySegment all = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
            assertEquals(Bitmaps.countSetHere(b, 0, 5, bits - 8), Bitmaps.countSet(all, b.address(), 5, bits - 8));
        }
    }

    @Test
    void aConfinedBitmapIsCountedOnTheCallersThread() {
        long bits = Bitmaps.PARALLEL_FROM + 99;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment b = random(arena, Bitmaps.bytes(bits), 3);
            assertEquals(naive(b, 0, bits), Bitmaps.countSet(b, 0, bits)); // a worker could not read it
        }
    }
}
