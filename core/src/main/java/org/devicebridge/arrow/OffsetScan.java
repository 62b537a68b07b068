package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.internal.WorkerThreads;

/**
 * FULL's monotonic-offsets check, the one content check every string, binary and list column pays once per
 * offset (the Arrow Java bridge makes it at every level): large offset buffers are scanned in parts by the
 * library's {@link WorkerThreads}, so that checking a large download's offsets does not take longer than
 * copying them. Segments confined to a thread are scanned on that thread.
 *
 * <p>Stateless and thread-safe.
 */
final class OffsetScan {
    /** Offsets from which a scan is split: below, handing parts to other threads costs more than it saves. */
    static final long PARALLEL_FROM = 1L << 18;
    private static final long PART = 1L << 16;

    private OffsetScan() {}

    /**
     * The first index {@code i} in {@code (from, to]} whose offset is smaller than offset {@code i - 1}, or -1
     * if the offsets are monotonic.
     */
    static long firstDecrease(MemorySegment s, long from, long to, int width) {
        long n = to - from;
        if (n < PARALLEL_FROM || !WorkerThreads.canShare(s)) {
            return scan(s, from, to, width);
        }
        int parts = WorkerThreads.parts(n, PART);
        long step = (n + parts - 1) / parts;
        long first = WorkerThreads.reduce(parts, k -> {
            long a = from + k * step;
            long i = a >= to ? -1 : scan(s, a, Math.min(to, a + step), width);
            return i < 0 ? Long.MAX_VALUE : i;
        }, Long.MAX_VALUE, Math::min);
        return first == Long.MAX_VALUE ? -1 : first;
    }

    /** {@link #firstDecrease} on this thread. */
    static long scan(MemorySegment s, long from, long to, int width) {
        if (width == 4) {
            int prev = s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, from);
            for (long i = from + 1; i <= to; i++) {
                int v = s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
                if (v < prev) {
                    return i;
                }
                prev = v;
            }
        } else {
            long prev = s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, from);
            for (long i = from + 1; i <= to; i++) {
                long v = s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                if (v < prev) {
                    return i;
                }
                prev = v;
            }
        }
        return -1;
    }
}
