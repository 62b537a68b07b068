package org.devicebridge.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.lifetime.Scenarios.CallerArena;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Closing a handle while a native call holds one of its segments, for every CPU handle kind that hands out
 * segments (see {@link Subject#cpu()}; the Python rows skip where CPython or NumPy is missing). The close
 * is refused with {@link org.devicebridge.HandleBusyException} and releases nothing, whichever thread
 * makes it; once the call has returned, a close releases exactly once and leaves the segment unusable. An
 * import bound to the caller's arena is released by that arena's close, which FFM itself refuses while
 * the call holds a segment.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HeldSegmentCloseTest {
    private long failedReleases;

    static List<Subject> subjects() {
        return Subject.cpu();
    }

    static Stream<Arguments> subjectsInCallerArenas() {
        return Subject.cpu().stream().filter(Subject::takesArena)
                .flatMap(s -> Stream.of(CallerArena.values()).map(kind -> Arguments.of(s, kind)));
    }

    @BeforeEach
    void countFailedReleases() {
        failedReleases = HandleTracker.failedReleases();
    }

    @AfterEach
    void noReleaseFailedAndPoisonedBlocksFreed() {
        HoldSegment.freeReleased();
        assertEquals(failedReleases, HandleTracker.failedReleases(), "release steps that threw (and were only logged)");
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

    @ParameterizedTest(name = "{0}, {1} arena")
    @MethodSource("subjectsInCallerArenas")
    void closingTheCallersArenaDuringANativeCallFailsAndReleasesNothingThenReleasesOnce(Subject s, CallerArena kind)
            throws Exception {
        Scenarios.closingTheCallersArenaDuringTheCallFails(s, kind);
    }

    @ParameterizedTest(name = "{0} arena")
    @EnumSource(CallerArena.class)
    void oneCallerArenaHoldingFourImportsReleasesNoneDuringANativeCallAndEachOnceAfter(CallerArena kind)
            throws Exception {
        Scenarios.oneCallerArenaHoldsManyImports(List.of(Subject.ARROW_ARRAY, Subject.DLPACK_VERSIONED,
                Subject.ARROW_DEVICE_ARRAY_CPU, Subject.DLPACK_LEGACY), kind);
    }
}
