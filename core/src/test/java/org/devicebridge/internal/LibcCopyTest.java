package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The glibc tunable as glibc reads it, and copies through memcpy that behave as MemorySegment.copy does. */
class LibcCopyTest {
    private static final String T = LibcCopy.TUNABLE;

    @Test
    void theThresholdIsTheTunablesValueOnX86LinuxOnly() {
        assertEquals(0x20000, LibcCopy.threshold(T + "=0x20000", "Linux", "amd64"));
        assertEquals(131072, LibcCopy.threshold(T + "=131072", "Linux", "x86_64"));
        assertEquals(0x20000, LibcCopy.threshold("glibc.malloc.check=1:" + T + "=0x20000", "Linux", "amd64"));
        assertEquals(0x30000, LibcCopy.threshold(T + "=0x20000:" + T + "=0x30000", "Linux", "amd64")); // the last wins
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(null, "Linux", "amd64"));
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(T + "=0x20000", "Linux", "aarch64"));
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(T + "=0x20000", "Mac OS X", "x86_64"));
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold("glibc.cpu.x86_rep_movsb_threshold=0x20000", "Linux", "amd64"));
    }

    @Test
    void valuesGlibcWouldIgnoreLeaveCopiesInJava() {
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(T + "=0x100", "Linux", "amd64")); // below glibc's minimum
        assertEquals(LibcCopy.GLIBC_MINIMUM, LibcCopy.threshold(T + "=" + LibcCopy.GLIBC_MINIMUM, "Linux", "amd64"));
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(T + "=big", "Linux", "amd64"));
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(T + "=", "Linux", "amd64"));
        assertEquals(Long.MAX_VALUE, LibcCopy.threshold(T + "=-5", "Linux", "amd64"));
    }

    @Test
    void memcpyCopiesEveryByteAtOddOffsets() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(1 << 20);
            new Random(3).ints(1 << 18).forEach(new java.util.function.IntConsumer() {
                long at;

                @Override
                public void accept(int v) {
                    src.set(ValueLayout.JAVA_INT_UNALIGNED, at, v);
                    at += 4;
                }
            });
            MemorySegment viaMemcpy = arena.allocate(1 << 20);
            MemorySegment viaJava = arena.allocate(1 << 20);
            for (long[] c : new long[][]{{0, 0, 1 << 20}, {3, 17, 1000}, {5, 1, (1 << 20) - 9}, {7, 7, 0}}) {
                LibcCopy.copy(src, c[0], viaMemcpy, c[1], c[2], 0);
                MemorySegment.copy(src, c[0], viaJava, c[1], c[2]);
                assertEquals(-1, viaMemcpy.mismatch(viaJava), () -> java.util.Arrays.toString(c));
            }
        }
    }

    @Test
    void boundsClosedSegmentsReadOnlyHeapAndOverlapBehaveAsMemorySegmentCopy() {
        Arena arena = Arena.ofShared();
        MemorySegment a = arena.allocate(4096);
        MemorySegment b = arena.allocate(4096);
        assertThrows(IndexOutOfBoundsException.class, () -> LibcCopy.copy(a, 4000, b, 0, 200, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> LibcCopy.copy(a, 0, b, 4000, 200, 0));
        assertThrows(IllegalArgumentException.class, () -> LibcCopy.copy(a, 0, b.asReadOnly(), 0, 200, 0));
        // a heap segment is copied by MemorySegment.copy (memcpy cannot take it)
        MemorySegment heap = MemorySegment.ofArray(new byte[4096]);
        a.fill((byte) 9);
        LibcCopy.copy(a, 0, heap, 0, 4096, 0);
        assertEquals(-1, heap.mismatch(a));
        // overlapping ranges of one segment: the result of a memmove, not memcpy's undefined one
        for (int i = 0; i < 4096; i++) {
            a.set(ValueLayout.JAVA_BYTE, i, (byte) i);
        }
        MemorySegment expected = MemorySegment.ofArray(new byte[4096]);
        MemorySegment.copy(a, 0, expected, 0, 4096);
        MemorySegment.copy(expected, 0, expected, 100, 3000);
        LibcCopy.copy(a, 0, a, 100, 3000, 0);
        assertEquals(-1, a.mismatch(expected));
        arena.close();
        assertThrows(IllegalStateException.class, () -> LibcCopy.copy(a, 0, b, 0, 100, 0));
    }
}
