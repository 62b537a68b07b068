package org.devicebridge.lifetime;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Closing a handle while a native call holds one of its segments, for every CPU handle kind that hands out
 * segments (see {@link Subject#cpu()}; the Python rows skip where CPython or NumPy is missing). The close
 * is refused with the library's exception and releases nothing, whichever thread makes it; once the call
 * has returned, a close releases exactly once and leaves the segment unusable.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HeldSegmentCloseTest {

    static List<Subject> subjects() {
        return Subject.cpu();
    }

    @AfterEach
    void freePoisonedBlocks() {
        HoldSegment.freeReleased();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subjects")
    void closeOnTheCallingThreadDuringANativeCallThrowsAndReleasesNothing(Subject s) throws Exception {
        Scenarios.closeOnTheCallingThreadIsRefused(s);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subjects")
    void closeOnAnotherThreadDuringANativeCallThrowsAndReleasesNothing(Subject s) throws Exception {
        Scenarios.closeOnAnotherThreadIsRefused(s);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subjects")
    void closeAfterTheNativeCallReleasesOnceAndEndsTheSegment(Subject s) throws Exception {
        Scenarios.closeAfterTheCallReleasesOnce(s);
    }
}
