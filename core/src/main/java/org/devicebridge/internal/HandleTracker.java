package org.devicebridge.internal;

/**
 * Process-wide bookkeeping for owning handles: counts of live and leaked handles (tests assert on them),
 * and the log lines for leaks and failed releases. The safety net itself is {@link HandleCleaner}.
 */
public final class HandleTracker {
    private static final System.Logger LOG = System.getLogger("org.devicebridge");
    // Per-thread counters: every handle's open and close passes here, from any number of threads at once.
    private static final int LIVE = 0;
    private static final int LEAKED = 1;
    private static final int FAILED_RELEASES = 2;
    private static final int PENDING_DEFERRED = 3;
    private static final ThreadCounts COUNTS = new ThreadCounts(4);

    private HandleTracker() {}

    public static void opened() {
        COUNTS.add(LIVE, 1);
    }

    public static void closed() {
        COUNTS.add(LIVE, -1);
    }

    public static void leaked(String description) {
        COUNTS.add(LEAKED, 1);
        LOG.log(System.Logger.Level.WARNING, "devicebridge: a handle ({0}) was never closed; the Cleaner released it."
                + " Close every handle (try-with-resources) to release native memory promptly.", description);
    }

    public static void releaseFailed(String description, Throwable t) {
        COUNTS.add(FAILED_RELEASES, 1);
        LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing a handle (" + description + ") failed", t);
    }

    /** Handles created and neither closed, consumed nor cleaned yet. */
    public static long liveHandles() {
        return COUNTS.sum(LIVE);
    }

    /** Handles the Cleaner had to release since the JVM started. */
    public static long leakedHandles() {
        return COUNTS.sum(LEAKED);
    }

    /** Release steps that threw (and were logged) since the JVM started. */
    public static long failedReleases() {
        return COUNTS.sum(FAILED_RELEASES);
    }

    /** A release of a forgotten handle was put off (a native call holds one of its segments); see {@link #deferredReleaseRan()}. */
    public static void deferredReleaseScheduled() {
        COUNTS.add(PENDING_DEFERRED, 1);
    }

    /** A put-off release ran (and either released, or was put off again: then scheduled anew). */
    public static void deferredReleaseRan() {
        COUNTS.add(PENDING_DEFERRED, -1);
    }

    /** Releases put off and not run yet: a test that ends with some left has a release that could not complete. */
    public static long pendingDeferredReleases() {
        return COUNTS.sum(PENDING_DEFERRED);
    }
}
