package org.devicebridge;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.LibraryThreads;

/**
 * Retries the release of a forgotten handle whose segment a native call still holds when the Cleaner
 * finds it: releasing then would free memory under the call, so the release waits for the call to
 * return. One daemon thread, made on first need; never on a path that closes handles explicitly.
 */
final class DeferredRelease {
    private static final long RETRY_MILLIS = 10;

    private DeferredRelease() {}

    private static final class Holder {
        // a library thread: no context class loader, no inherited thread-locals of whoever forgot a handle
        static final ScheduledExecutorService RETRIES = Executors.newSingleThreadScheduledExecutor(
                r -> LibraryThreads.newThread(r, "devicebridge-deferred-release"));
    }

    /** Runs {@code retry} in a while; counted as pending until it runs ({@link HandleTracker#pendingDeferredReleases()}). */
    static void schedule(Runnable retry) {
        HandleTracker.deferredReleaseScheduled();
        Holder.RETRIES.schedule(() -> {
            HandleTracker.deferredReleaseRan();
            retry.run();
        }, RETRY_MILLIS, TimeUnit.MILLISECONDS);
    }
}
