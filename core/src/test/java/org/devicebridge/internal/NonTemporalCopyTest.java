package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The mapped non-temporal loop copies every byte as MemorySegment.copy does, with the same checks. */
class NonTemporalCopyTest {

    private static MethodHandle loop() {
        assumeTrue(NonTemporalCopy.wanted(System.getProperty("os.name"), System.getProperty("os.arch"), "true"),
                "the loop is x86-64 Linux code");
        return NonTemporalCopy.map(NonTemporalCopy.X86_64_LOOP);
    }

    @Test
    void theLoopIsOffUnlessTheUserOptsInOnX86Linux() {
        assertFalse(NonTemporalCopy.wanted("Linux", "amd64", null));
        assertFalse(NonTemporalCopy.wanted("Linux", "amd64", ""));
        assertTrue(NonTemporalCopy.wanted("Linux", "amd64", "true"));
        assertTrue(NonTemporalCopy.wanted("Linux", "x86_64", "TRUE"));
        assertFalse(NonTemporalCopy.wanted("Linux", "amd64", "false"));
        assertFalse(NonTemporalCopy.wanted("Linux", "aarch64", "true"));
        assertFalse(NonTemporalCopy.wanted("Mac OS X", "x86_64", "true"));
        assertFalse(NonTemporalCopy.wanted("Windows 11", "amd64", "true"));
    }

    @Test
    void codeLargerThanAPageIsRefusedBeforeAnythingIsMapped() {
        assertThrows(IllegalArgumentException.class, () -> Native.executablePage(new byte[4097]));
    }

    @Test
    void theLoopIsInUseExactlyWhenTheUserOptedInOnX86Linux() {
        // CI's and the GPU machine's kernels allow one executable page: opted in there, the loop must be in use
        assertEquals(NonTemporalCopy.wanted(System.getProperty("os.name"), System.getProperty("os.arch"),
                System.getProperty(NonTemporalCopy.PROPERTY)), NonTemporalCopy.available());
    }

    @Test
    void everyByteArrivesAtEveryAlignmentAndLength() {
        NonTemporalCopy.Copier copier = new NonTemporalCopy.Copier(loop());
        int size = 1 << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(size, 64);
            Random random = new Random(7);
            for (long at = 0; at < size; at += 8) {
                src.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
            }
            MemorySegment viaLoop = arena.allocate(size, 64);
            MemorySegment viaJava = arena.allocate(size, 64);
            long[] lengths = {512, 513, 575, 576, 577, 639, 640, 4096, 4097, 65536 + 33, size - 200};
            for (long length : lengths) {
                for (long srcOffset : new long[]{0, 1, 7, 63, 64, 100}) {
                    for (long dstOffset : new long[]{0, 1, 15, 16, 63, 64, 65}) {
                        viaLoop.fill((byte) 0x5A);
                        viaJava.fill((byte) 0x5A);
                        copier.copy(src, srcOffset, viaLoop, dstOffset, length);
                        MemorySegment.copy(src, srcOffset, viaJava, dstOffset, length);
                        long[] c = {length, srcOffset, dstOffset};
                        assertEquals(-1, viaLoop.mismatch(viaJava), () -> Arrays.toString(c)); // no byte before or after
                    }
                }
            }
            copier.copy(src, 0, viaLoop, 0, size); // whole megabyte, both aligned
            assertEquals(-1, viaLoop.mismatch(src));
        }
    }

    @Test
    void shortCopiesHeapReadOnlyBoundsOverlapAndClosedSegmentsBehaveAsMemorySegmentCopy() {
        NonTemporalCopy.Copier copier = new NonTemporalCopy.Copier(loop());
        Arena arena = Arena.ofShared();
        MemorySegment a = arena.allocate(8192, 64);
        MemorySegment b = arena.allocate(8192, 64);
        for (int i = 0; i < 8192; i++) {
            a.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
        }
        copier.copy(a, 3, b, 5, NonTemporalCopy.MIN_BYTES - 1); // below the minimum: in Java
        assertEquals(-1, b.asSlice(5, NonTemporalCopy.MIN_BYTES - 1).mismatch(a.asSlice(3, NonTemporalCopy.MIN_BYTES - 1)));
        assertThrows(IndexOutOfBoundsException.class, () -> copier.copy(a, 8000, b, 0, 1000));
        assertThrows(IndexOutOfBoundsException.class, () -> copier.copy(a, 0, b, 8000, 1000));
        assertThrows(IllegalArgumentException.class, () -> copier.copy(a, 0, b.asReadOnly(), 0, 1000));
        MemorySegment heap = MemorySegment.ofArray(new byte[8192]); // the loop cannot take a heap segment
        copier.copy(a, 0, heap, 0, 8192);
        assertEquals(-1, heap.mismatch(a));
        MemorySegment expected = MemorySegment.ofArray(new byte[8192]);
        MemorySegment.copy(a, 0, expected, 0, 8192);
        MemorySegment.copy(expected, 0, expected, 100, 6000);
        copier.copy(a, 0, a, 100, 6000); // overlapping: a memmove's result
        assertEquals(-1, a.mismatch(expected));
        arena.close();
        assertThrows(IllegalStateException.class, () -> copier.copy(a, 0, b, 0, 1000));
    }
}
