package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The monotonic-offsets scan finds the first decrease exactly, split over threads or not: at the first and
 * last index, on the edges of the parts, with two decreases (the first is named), in int32 and int64 offsets,
 * and in a segment confined to this thread (scanned here).
 */
class OffsetScanTest {
    private static final long N = 3 * OffsetScan.PARALLEL_FROM + 12_345; // split into parts

    @ParameterizedTest
    @ValueSource(ints = {4, 8})
    void theFirstDecreaseIsFoundWhereverItIs(int width) {
        long[] at = {1, 2, 65_536, 65_537, N / 2, N - 1, N};
        for (Arena arena : new Arena[] {Arena.ofShared(), Arena.ofConfined()}) {
            try (arena) {
                MemorySegment s = arena.allocate((N + 1) * width, 8);
                fill(s, width);
                assertEquals(-1, OffsetScan.firstDecrease(s, 0, N, width), "monotonic");
                assertEquals(-1, OffsetScan.firstDecrease(s, 7, N - 3, width), "monotonic, sliced");
                for (long i : at) {
                    set(s, i, width, get(s, i - 1, width) - 1);
                    assertEquals(i, OffsetScan.firstDecrease(s, 0, N, width), "decrease at " + i);
                    if (i + 1000 <= N) {
                        set(s, i + 1000, width, 0);
                        assertEquals(i, OffsetScan.firstDecrease(s, 0, N, width), "the first of two");
                    }
                    fill(s, width);
                }
            }
        }
    }

    private static void fill(MemorySegment s, int width) {
        for (long i = 0; i <= N; i++) {
            set(s, i, width, 3 * i);
        }
    }

    private static void set(MemorySegment s, long i, int width, long v) {
        if (width == 4) {
            s.setAtIndex(ValueLayout.JAVA_INT, i, (int) v);
        } else {
            s.setAtIndex(ValueLayout.JAVA_LONG, i, v);
        }
    }

    private static long get(MemorySegment s, long i, int width) {
        return width == 4 ? s.getAtIndex(ValueLayout.JAVA_INT, i) : s.getAtIndex(ValueLayout.JAVA_LONG, i);
    }
}
