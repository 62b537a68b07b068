package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/** Reading the run ends of a run-end encoded array (16, 32 or 64 bits wide), for {@link ContentChecks}. */
final class RunEnds {
    private RunEnds() {}


    /** Run end {@code i} of {@code s}, {@code w} bytes wide. */
    static long at(MemorySegment s, long i, int w) {
        return switch (w) {
            case 2 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
            case 4 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
            default -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
        };
    }

    /** Run ends [first, first + runs) of {@code s} strictly increasing (the first one is at least 1 already). */
    static void checkRunEndsIncrease(MemorySegment s, long first, long runs, int w, String path) {
        long prev = 0;
        for (long i = 0; i < runs; i++) {
            long v = at(s, first + i, w);
            if (v <= prev) {
                throw new ValidationException(Category.CONTENT, path, "run ends not strictly increasing at index " + i
                        + ": expected more than " + prev + " but found " + v);
            }
            prev = v;
        }
    }
}
