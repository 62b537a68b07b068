package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The shared helper threads: every part runs once, results fold, failures come back, one part stays home. */
class WorkerThreadsTest {
    @Test
    void everyPartRunsExactlyOnceAndTheResultsFold() {
        for (int round = 0; round < 200; round++) {
            int parts = 1 + round % 64;
            AtomicInteger[] runs = new AtomicInteger[parts];
            for (int k = 0; k < parts; k++) {
                runs[k] = new AtomicInteger();
            }
            long sum = WorkerThreads.reduce(parts, k -> {
                runs[(int) k].incrementAndGet();
                return k * k;
            }, 0, Long::sum);
            long expected = 0;
            for (int k = 0; k < parts; k++) {
                assertEquals(1, runs[k].get(), "part " + k + " of " + parts);
                expected += (long) k * k;
            }
            assertEquals(expected, sum);
            assertEquals(parts - 1, WorkerThreads.reduce(parts, k -> k, Long.MIN_VALUE, Math::max));
        }
    }

    @Test
    void largeJobsAreSharedWithWorkerThreads() throws InterruptedException {
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        for (int round = 0; round < 50 && threads.size() < 2; round++) {
            WorkerThreads.reduce(64, k -> {
                threads.add(Thread.currentThread());
                long x = 0;
                for (int i = 0; i < 200_000; i++) {
                    x += i ^ k;
                }
                return x;
            }, 0, Long::sum);
        }
        assertTrue(threads.size() >= 2, "some part ran on a worker: " + threads);
    }

    @Test
    void aJobOfOnePartRunsOnTheCallersThreadInFinish() {
        Thread[] ran = new Thread[1];
        WorkerThreads.Job job = WorkerThreads.start(1, k -> {
            ran[0] = Thread.currentThread();
            return 7;
        }, 0, Long::sum);
        assertEquals(null, ran[0], "nothing ran before finish");
        assertEquals(7, job.finish());
        assertSame(Thread.currentThread(), ran[0]);
        assertTrue(job.isDone());
    }

    @Test
    void theFirstFailureIsThrownAsItWasAfterEveryPartStopped() {
        AtomicInteger running = new AtomicInteger();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> WorkerThreads.reduce(32, k -> {
            running.incrementAndGet();
            try {
                if (k == 5) {
                    throw new IllegalStateException("part 5");
                }
                return k;
            } finally {
                running.decrementAndGet();
            }
        }, 0, Long::sum));
        assertEquals("part 5", e.getMessage());
        assertEquals(0, running.get(), "no part still runs once the failure is thrown");
        assertThrows(AssertionError.class, () -> WorkerThreads.reduce(4, k -> {
            throw new AssertionError("an error");
        }, 0, Long::sum));
    }
}
