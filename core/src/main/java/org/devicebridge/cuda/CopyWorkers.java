package org.devicebridge.cuda;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The threads that help with staging copies: daemon threads made on first use, shared by every transfer,
 * never torn down.
 *
 * <p>Why not a {@link java.util.concurrent.ThreadPoolExecutor}: its queue wakes idle workers one after the
 * other (each woken worker wakes the next), so the eighth helper of a chunk started about 8 wake-ups
 * (~35 us each on the GPU machine) after the first, and an 8 MiB chunk took 460 us to pack where 16 threads
 * woken at once take 140 us (measured). Here {@link #submit} unparks every helper a task wants at once, and
 * a worker that just finished a task spins for {@value #SPIN_NANOS} ns before it parks, so that the next
 * chunk of the same transfer finds it awake.
 */
final class CopyWorkers {
    /** How long an idle worker polls for the next task before it parks. */
    static final long SPIN_NANOS = 50_000;

    /** Work split into parts that any number of threads claim one at a time. */
    interface Task {
        /** Claims and runs parts until every part is claimed; never throws (a task keeps its own failure). */
        void help();
    }

    private final ConcurrentLinkedQueue<Task> tasks = new ConcurrentLinkedQueue<>();
    private final Thread[] threads;
    private final AtomicIntegerArray parked; // 1: thread i is parked, or about to park, and may be woken

    private CopyWorkers(int count) {
        threads = new Thread[count];
        parked = new AtomicIntegerArray(count);
        for (int i = 0; i < count; i++) {
            int index = i;
            Thread t = new Thread(() -> work(index), "devicebridge-staging-copy-" + (i + 1));
            t.setDaemon(true);
            threads[i] = t;
        }
        for (Thread t : threads) {
            t.start();
        }
    }

    /** The shared workers ({@link StagingCopy#WORKERS} threads), started on first use. */
    static CopyWorkers shared() {
        return Shared.WORKERS;
    }

    /** Offers {@code task} to the workers and wakes up to {@code helpers} parked ones. */
    void submit(Task task, int helpers) {
        tasks.add(task);
        int woken = 0;
        for (int i = 0; i < threads.length && woken < helpers; i++) {
            if (parked.get(i) == 1 && parked.compareAndSet(i, 1, 0)) {
                LockSupport.unpark(threads[i]);
                woken++;
            }
        }
    }

    /** Takes {@code task} off the queue (its owner finished it), so that no worker keeps a reference to it. */
    void withdraw(Task task) {
        tasks.remove(task);
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
        static final CopyWorkers WORKERS = new CopyWorkers(StagingCopy.WORKERS);
    }
}
