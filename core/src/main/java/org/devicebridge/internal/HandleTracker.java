package org.devicebridge.internal;

import java.util.concurrent.atomic.LongAdder;

/**
 * Process-wide bookkeeping for owning handles: counts of live and leaked handles (tests assert on them),
 * and the log lines for leaks and failed releases. The safety net itself is {@link HandleCleaner}.
 */
public final class HandleTracker {
    private static final System.Logger LOG = System.getLogger("org.devicebridge");
    // Striped counters: every handle's open and close passes here, from any number of threads at once.
    private static final LongAdder LIVE = new LongAdder();
    private static final LongAdder LEAKED = new LongAdder();
    private static final LongAdder FAILED_RELEASES = new LongAdder();
    private static final LongAdder PENDING_DEFERRED = new LongAdder();

    private HandleTracker() {}

    public static void opened() {
        LIVE.increment();
    }

    public static void closed() {
        LIVE.decrement();
    }

    public static void leaked(String description) {
        LEAKED.increment();
        LOG.log(System.Logger.Level.WARNING, "devicebridge: a handle ({0}) was never closed; the Cleaner released it."
                + " Close every handle (try-with-resources) to release native memory promptly.", description);
    }

    public static void releaseFailed(String description, Throwable t) {
        FAILED_RELEASES.increment();
        LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing a handle (" + description + ") failed", t);
    }

    /** Handles created and neither closed, consumed nor cleaned yet. */
    public static long liveHandles() {
        return LIVE.sum();
    }

    /** Handles the Cleaner had to release since the JVM started. */
    public static long leakedHandles() {
        return LEAKED.sum();
    }

    /** Release steps that threw (and were logged) since the JVM started. */
    public static long failedReleases() {
        return FAILED_RELEASES.sum();
    }

    /** A release of a forgotten handle was put off (a native call holds one of its segments); see {@link #deferredReleaseRan()}. */
    public static void deferredReleaseScheduled() {
        PENDING_DEFERRED.increment();
    }

    /** A put-off release ran (and either released, or was put off again: then scheduled anew). */
    public static void deferredReleaseRan() {
        PENDING_DEFERRED.decrement();
    }

    /** Releases put off and not run yet: a test that ends with some left has a release that could not complete. */
    public static long pendingDeferredReleases() {
        return PENDING_DEFERRED.sum();
    }
}
