package org.devicebridge.internal;

import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * How the library makes its threads, and how many {@link WorkerThreads} there are: decided once, when the
 * workers are first used. Until then {@link #configure(int)} or {@link #configure(Executor)} may change it;
 * otherwise the system property {@value #PROPERTY} (0 turns the workers off), else the default.
 */
public final class LibraryThreads {
    /** The system property that sizes the workers (0: off), read at first use unless {@link #configure} ran. */
    public static final String PROPERTY = "devicebridge.workerThreads";
    /** The default number of worker threads: the machine's cores less the caller's, at most 15. */
    public static final int DEFAULT_COUNT = Math.max(1, Math.min(16, Runtime.getRuntime().availableProcessors()) - 1);

    private LibraryThreads() {}

    /**
     * A daemon thread of the library: no context class loader, no inherited thread-locals (the JDK's
     * Cleaner thread is made the same way), so it keeps nothing of the thread that happened to start it.
     *
     * @param body what it runs
     * @param name its name
     * @return the thread, not started
     */
    public static Thread newThread(Runnable body, String name) {
        Thread t = new Thread(null, body, name, 0, false);
        t.setDaemon(true);
        t.setContextClassLoader(null);
        return t;
    }

    /** What {@link #configure} asked for: an Integer, an Executor, or null (the property, or the default). */
    private static Object requested;
    /** Set when the shared workers are made: from then on {@link #configure} refuses. Guarded by the class. */
    private static boolean inUse;

    /**
     * Sizes the shared workers: {@code threads} daemon threads, 0 for none (every part runs on the caller's
     * thread). Effective only before first use.
     *
     * @param threads how many, {@code >= 0}
     * @throws IllegalArgumentException if {@code threads < 0}
     * @throws IllegalStateException if the workers are already in use
     */
    public static void configure(int threads) {
        if (threads < 0) {
            throw new IllegalArgumentException("expected a thread count >= 0 but found " + threads);
        }
        request(threads);
    }

    /**
     * Replaces the shared workers by {@code executor}: each helper of a task is one {@code execute} call.
     * Effective only before first use.
     *
     * @param executor the caller's executor; the library never shuts it down
     * @throws IllegalStateException if the workers are already in use
     */
    public static void configure(Executor executor) {
        request(Objects.requireNonNull(executor, "executor"));
    }

    private static synchronized void request(Object config) {
        if (inUse) {
            throw new IllegalStateException("the library's worker threads are already in use: configure them before"
                    + " the first transfer or large scan");
        }
        requested = config;
    }

    static synchronized WorkerThreads createWorkers() {
        inUse = true;
        if (requested instanceof Executor e) {
            return new WorkerThreads(0, e);
        }
        int n = requested instanceof Integer i ? i : countFromProperty();
        return new WorkerThreads(n, null);
    }

    private static int countFromProperty() {
        String v = System.getProperty(PROPERTY);
        if (v == null) {
            return DEFAULT_COUNT;
        }
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        System.getLogger("org.devicebridge").log(System.Logger.Level.WARNING,
                "devicebridge: " + PROPERTY + "=" + v + " is not a thread count >= 0; using " + DEFAULT_COUNT);
        return DEFAULT_COUNT;
    }
}
