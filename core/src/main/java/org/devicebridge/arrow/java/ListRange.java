package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.arrow.ArrayNode;

/** First and last offsets of a validated host list or variable-size node, read where the loader plans it. */
final class ListRange {
    private ListRange() {}

    /** The {first, last} offsets of {@code n} over physical elements [phys, phys + count]. */
    static long[] of(ArrayNode n, long phys, long count) {
        if (n.isBufferNull(1)) {
            return new long[] {0, 0};
        }
        int w = n.type().layout().offsetWidth();
        MemorySegment s = VectorLoader.hostBuffer(n, 1);
        return new long[] {read(s, phys, w), read(s, phys + count, w)};
    }

    /** Offset {@code i} of an offsets buffer of {@code w}-byte offsets. */
    static long read(MemorySegment s, long i, int w) {
        return w == 4 ? s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) : s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
    }
}
