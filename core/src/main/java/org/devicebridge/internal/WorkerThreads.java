package org.devicebridge.internal;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongBinaryOperator;
import java.util.function.LongUnaryOperator;

/**
 * The threads that help the library's large host loops (staging copies, offset and bitmap scans): daemon
 * threads made on first use, shared by every caller, never torn down. The caller always works on its own
 * task too, so a task finishes even if no worker ever comes.
 *
 * <p>How many: {@link LibraryThreads#configure(int)} or {@link LibraryThreads#configure(Executor)} before first
 * use, else the system property {@value LibraryThreads#PROPERTY}, else the machine's cores less the caller's (at most 15). Zero threads turn the
 * helpers off: every part then runs on the caller's thread. A caller's {@link Executor} replaces the threads:
 * each helper of a task is one {@code execute} of a runnable that claims parts (and holds the task only until
 * the task is finished). The library's own threads start with no context class loader and no inherited
 * thread-locals, so they pin no application's class loader and keep none of a caller's objects alive.
 *
 * <p>Why not a {@link java.util.concurrent.ThreadPoolExecutor} or the common pool: their idle workers are
 * woken one after the other (each woken worker wakes the next), so the eighth helper of a staging chunk
 * starts eight wake-ups after the first, and packing the chunk takes several times as long as with threads
 * woken at once. Here {@link #submit} unparks every
 * helper a task wants at once, and a worker that just finished a task polls for {@value #SPIN_NANOS} ns
 * before it parks, so that the next chunk of the same transfer finds it awake.
 *
 * <p>Thread-safe.
 */
public final class WorkerThreads {
    /** How long an idle worker polls for the next task before it parks. */
    static final long SPIN_NANOS = 50_000;
    /** A thread that never runs: a segment it may access is not confined to the caller. */
    private static final Thread ANOTHER_THREAD = LibraryThreads.newThread(() -> { }, "devicebridge-confinement-probe");

    /** Work split into parts that any number of threads claim one at a time. */
    public interface Task {
        /** Claims and runs parts until every part is claimed; never throws (a task keeps its own failure). */
        void help();
    }

    private final ConcurrentLinkedQueue<Task> tasks = new ConcurrentLinkedQueue<>();
    private final Thread[] threads;
    private final AtomicIntegerArray parked; // 1: thread i is parked, or about to park, and may be woken
    private final Executor executor; // the caller's, replacing the threads; null for the library's own
    private final int helpers;
    private final ConcurrentHashMap<Task, Offer> offers = new ConcurrentHashMap<>(); // with an executor only

    WorkerThreads(int count, Executor executor) {
        this.executor = executor;
        this.helpers = executor != null ? LibraryThreads.DEFAULT_COUNT : count;
        int own = executor != null ? 0 : count;
        threads = new Thread[own];
        parked = new AtomicIntegerArray(Math.max(1, own));
        for (int i = 0; i < own; i++) {
            int index = i;
            threads[i] = LibraryThreads.newThread(() -> work(index), "devicebridge-worker-" + (i + 1));
        }
        for (Thread t : threads) {
            t.start();
        }
    }

    /**
     * The shared workers, made on first use as configured (see the class comment).
     *
     * @return the workers
     */
    public static WorkerThreads shared() {
        return Shared.WORKERS;
    }

    /**
     * How many helpers a task may have besides its caller: the worker threads (0 when off), or for a caller's
     * executor the default count. Makes the shared workers if they are not made yet.
     *
     * @return the number of helpers, {@code >= 0}
     */
    public static int helpers() {
        return shared().helpers;
    }

    /** One task offered to a caller's executor; forgets the task once it is withdrawn. */
    private static final class Offer implements Runnable {
        volatile Task task;

        Offer(Task task) {
            this.task = task;
        }

        @Override
        public void run() {
            Task t = task;
            if (t != null) {
                t.help();
            }
        }
    }

    /**
     * Offers {@code task} to the workers and wakes up to {@code helpers} parked ones (idle workers that still
     * poll take it anyway). The caller then works on the task itself and calls {@link #withdraw} when done.
     *
     * @param task the task; its parts may run on any worker from now on
     * @param helpers how many parked workers to wake
     */
    public void submit(Task task, int helpers) {
        if (executor != null) {
            Offer offer = new Offer(task);
            offers.put(task, offer);
            try {
                for (int i = 0; i < helpers; i++) {
                    executor.execute(offer);
                }
            } catch (RuntimeException rejected) {
                // the executor takes no more: the caller does the rest of the work itself
            }
            return;
        }
        tasks.add(task);
        int woken = 0;
        for (int i = 0; i < threads.length && woken < helpers; i++) {
            if (parked.get(i) == 1 && parked.compareAndSet(i, 1, 0)) {
                LockSupport.unpark(threads[i]);
                woken++;
            }
        }
    }

    /**
     * Takes {@code task} off the queue (its owner finished it), so that no worker keeps a reference to it.
     *
     * @param task a task given to {@link #submit}
     */
    public void withdraw(Task task) {
        if (executor != null) {
            Offer offer = offers.remove(task);
            if (offer != null) {
                offer.task = null; // the executor may still hold the offer: it must not hold the task
            }
            return;
        }
        tasks.remove(task);
    }

    /**
     * Whether the workers may read and write {@code segment}: {@code false} for memory confined to the
     * calling thread, which only that thread may touch.
     *
     * @param segment the memory a job would touch
     * @return whether another thread may access it
     */
    public static boolean canShare(MemorySegment segment) {
        return segment.isAccessibleBy(ANOTHER_THREAD);
    }

    /**
     * How many parts to cut {@code units} into for {@link #reduce}: parts of at least {@code minPart} units,
     * at most four per thread (caller and workers), so that threads that finish early take more.
     *
     * @param units the work, in any unit
     * @param minPart the smallest part worth handing to another thread, in the same unit
     * @return the number of parts, at least one
     */
    public static int parts(long units, long minPart) {
        return (int) Math.max(1, Math.min(4L * (helpers() + 1), (units + minPart - 1) / minPart));
    }

    /**
     * Runs {@code part.applyAsLong(k)} for {@code k} in {@code [0, parts)} on the caller and the workers, and
     * folds the results with {@code combine}: {@link #start} then {@link Job#finish}.
     *
     * @param parts how many parts
     * @param part computes part {@code k}; called from several threads at once
     * @param identity the fold's start
     * @param combine folds two results (in no particular order: commutative and associative)
     * @return the folded result
     */
    public static long reduce(int parts, LongUnaryOperator part, long identity, LongBinaryOperator combine) {
        return start(parts, part, identity, combine).finish();
    }

    /**
     * Hands the parts of a job to the workers and returns at once; the caller goes on, then calls
     * {@link Job#finish}. A job of one part is left to the caller's {@link Job#finish} (its memory may be
     * confined to the caller).
     *
     * @param parts how many parts, at least one
     * @param part computes part {@code k}; called from several threads at once
     * @param identity the fold's start
     * @param combine folds two results (in no particular order: commutative and associative)
     * @return the started job
     */
    public static Job start(int parts, LongUnaryOperator part, long identity, LongBinaryOperator combine) {
        WorkerThreads w = shared();
        Job j = new Job(parts, part, identity, combine, parts > 1 && w.helpers > 0);
        if (j.offered) {
            w.submit(j, Math.min(parts - 1, w.helpers));
        }
        return j;
    }

    /**
     * Hands {@code work} to one worker (woken for it) and returns at once: a job of one part that runs beside
     * the caller, who goes on with other things and then calls {@link Job#finish} (which runs the work itself
     * if no worker took it yet). Only for work whose memory any thread may access.
     *
     * @param work the work; returns its result
     * @return the started job
     */
    public static Job startBeside(LongUnaryOperator work) {
        WorkerThreads w = shared();
        Job j = new Job(1, work, 0, Long::sum, w.helpers > 0);
        if (j.offered) {
            w.submit(j, 1);
        }
        return j;
    }

    /** The parts of one job, claimed one at a time by whichever thread (caller or worker) comes first. */
    public static final class Job implements Task {
        private final int parts;
        private final LongUnaryOperator part;
        private final LongBinaryOperator combine;
        private final AtomicInteger next = new AtomicInteger();
        private final CountDownLatch done;
        private final AtomicLong result;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();
        private final boolean offered; // submitted to the workers: withdrawn in finish()

        private Job(int parts, LongUnaryOperator part, long identity, LongBinaryOperator combine, boolean offered) {
            this.parts = parts;
            this.offered = offered;
            this.part = part;
            this.combine = combine;
            this.done = new CountDownLatch(parts);
            this.result = new AtomicLong(identity);
        }

        @Override
        public void help() {
            int k;
            while ((k = next.getAndIncrement()) < parts) {
                try {
                    if (failure.get() == null) { // after a failure the other parts are skipped
                        long r = part.applyAsLong(k);
                        result.accumulateAndGet(r, combine);
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                } finally {
                    done.countDown();
                }
            }
        }

        /**
         * {@code true} if every part finished; never blocks.
         *
         * @return whether the job is done
         */
        public boolean isDone() {
            return done.getCount() == 0;
        }

        /**
         * Runs the parts no worker took yet on the caller's thread, waits for the others, and returns the
         * folded result. Once this returns or throws, no thread runs a part of this job any more.
         *
         * @return the folded result
         * @throws RuntimeException the first failure of a part, as it was thrown (an {@link Error} likewise)
         */
        public long finish() {
            try {
                help(); // the caller takes parts too, so it never waits for a worker to wake up
                awaitUninterruptibly(done);
            } finally {
                if (offered) {
                    shared().withdraw(this);
                }
            }
            Throwable f = failure.get();
            if (f instanceof RuntimeException e) {
                throw e;
            }
            if (f instanceof Error e) {
                throw e;
            }
            return result.get();
        }
    }

    /** Waits for {@code latch}; an interrupt is kept for the caller but does not cut the wait short. */
    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void work(int index) {
        long idleSince = System.nanoTime();
        while (true) {
            Task t = tasks.peek();
            if (t != null) {
                t.help();
                tasks.remove(t); // every part is claimed: the next worker looks at the next task
                idleSince = System.nanoTime();
            } else if (System.nanoTime() - idleSince < SPIN_NANOS) {
                Thread.onSpinWait();
            } else {
                parked.set(index, 1);
                if (tasks.peek() == null) { // checked after the flag: a task added since is seen here or wakes us
                    LockSupport.park(this);
                }
                parked.set(index, 0);
                Thread.interrupted(); // nothing interrupts these threads on purpose; a stray interrupt must not spin
                idleSince = System.nanoTime();
            }
        }
    }

    private static final class Shared {
        static final WorkerThreads WORKERS = LibraryThreads.createWorkers();
    }
}
