package org.devicebridge.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.AllowsLeaks;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Cleaner safety net and a native call: a handle whose only reference is dropped while a native call
 * holds one of its segments must not be released under that call; once the call returned, the Cleaner
 * releases it exactly once. Each test asserts its own counts (one leak, one release, no handle left open).
 */
@AllowsLeaks("each test drops a live handle on purpose so that the Cleaner has to release it; "
        + "the test asserts exactly one such release itself")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HeldSegmentCleanerTest {
    private static final java.util.logging.Logger LOG = java.util.logging.Logger.getLogger("org.devicebridge");
    private static java.util.logging.Level level;

    static List<Subject> subjects() {
        return Subject.cpu();
    }

    @BeforeAll
    static void quietLeakWarnings() {
        level = LOG.getLevel(); // the leak warning of every dropped handle is the point here, not news
        LOG.setLevel(java.util.logging.Level.SEVERE);
    }

    @AfterAll
    static void restoreLogging() {
        LOG.setLevel(level);
    }

    private long failedReleases;

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
    void aHandleDroppedDuringANativeCallIsReleasedOnceByTheCleanerOnlyAfterTheCall(Subject s) throws Exception {
        Scenarios.cleanerWaitsForTheCall(s);
    }

    @Test
    @RequiresCuda
    void aPinnedHostBufferDroppedDuringANativeCallIsFreedOnceByTheCleanerOnlyAfterTheCall() throws Exception {
        Scenarios.cleanerWaitsForTheCall(Subject.PINNED_HOST_BUFFER);
    }
}
