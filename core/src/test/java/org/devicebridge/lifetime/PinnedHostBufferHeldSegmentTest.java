package org.devicebridge.lifetime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link org.devicebridge.cuda.PinnedHostBuffer} while a native call holds its segment (GPU machines only):
 * the close is refused and {@code cuMemFreeHost} does not run; after the call one close frees it once.
 * CUDA device arrays hand out no host segments (their nodes give pointers and lengths only), so they have
 * no row here.
 */
@RequiresCuda
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PinnedHostBufferHeldSegmentTest {
    private long failedReleases;

    @BeforeEach
    void countFailedReleases() {
        failedReleases = HandleTracker.failedReleases();
    }

    @AfterEach
    void noReleaseFailed() {
        assertEquals(failedReleases, HandleTracker.failedReleases(), "release steps that threw (and were only logged)");
    }

    @Test
    void closeOnTheCallingThreadDuringANativeCallThrowsAndFreesNothing() throws Exception {
        Scenarios.closeOnTheCallingThreadIsRefused(Subject.PINNED_HOST_BUFFER);
    }

    @Test
    void closeOnAnotherThreadDuringANativeCallThrowsAndFreesNothing() throws Exception {
        Scenarios.closeOnAnotherThreadIsRefused(Subject.PINNED_HOST_BUFFER);
    }

    @Test
    void closeAfterTheNativeCallFreesOnceAndEndsTheSegment() throws Exception {
        Scenarios.closeAfterTheCallReleasesOnce(Subject.PINNED_HOST_BUFFER);
    }
}
