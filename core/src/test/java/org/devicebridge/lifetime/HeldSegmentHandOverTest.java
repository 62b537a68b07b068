package org.devicebridge.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.lifetime.Scenarios.HandOver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Handing a handle over to a consumer (Arrow Java) while a native call holds one of its segments: refused
 * like a close, with {@link org.devicebridge.HandleBusyException}, nothing released and the handle still
 * live; after the call the hand-over succeeds and the consumer's close releases exactly once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HeldSegmentHandOverTest {
    private long failedReleases;

    static Stream<Arguments> handOvers() {
        return Stream.of(
                Arguments.of(Subject.ARROW_ARRAY, HandOver.ARROW_JAVA_IMPORT),
                Arguments.of(Subject.ARROW_DEVICE_ARRAY_CPU, HandOver.ARROW_JAVA_IMPORT),
                Arguments.of(Subject.ARROW_STREAM_BATCH, HandOver.ARROW_JAVA_IMPORT),
                Arguments.of(Subject.DLPACK_VERSIONED, HandOver.DLPACK_ARROW_IMPORT),
                Arguments.of(Subject.DLPACK_LEGACY, HandOver.DLPACK_ARROW_IMPORT));
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

    @ParameterizedTest(name = "{0} via {1}")
    @MethodSource("handOvers")
    void handOverDuringANativeCallThrowsAndReleasesNothingThenSucceedsAfterIt(Subject s, HandOver handOver)
            throws Exception {
        Scenarios.handOverDuringTheCallIsRefused(s, handOver);
    }
}
