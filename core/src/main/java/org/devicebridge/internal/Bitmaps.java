package org.devicebridge.internal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Arrow validity and boolean bitmaps: least-significant bit first, as the Arrow format lays them out. */
public final class Bitmaps {
    private Bitmaps() {}

    /** Bit {@code i} of {@code bitmap}. */
    public static boolean bit(MemorySegment bitmap, long i) {
        return (bitmap.get(ValueLayout.JAVA_BYTE, i >>> 3) & (1 << (i & 7))) != 0;
    }

    /** Bytes that hold {@code bits} bits. */
    public static long bytes(long bits) {
        return (bits >>> 3) + ((bits & 7) == 0 ? 0 : 1);
    }
}
