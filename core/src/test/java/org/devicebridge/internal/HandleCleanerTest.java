package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The lock-free safety net: an action runs once its referent is unreachable, never once unregistered, whichever
 * thread registered it (one that ended, a virtual one).
 */
class HandleCleanerTest {

    /** Drops {@code referents} and drives the GC until {@code done} reaches zero or 30 s passed. */
    private static boolean collect(List<Object> referents, CountDownLatch done) throws InterruptedException {
        referents.clear();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            System.gc();
            if (done.await(20, TimeUnit.MILLISECONDS)) {
                return true;
            }
        }
        return false;
    }

    @Test
    void registrationsOfAThreadThatEndedStillRunAndUnregisteredOnesNever() throws Exception {
        int n = 100;
        List<Object> referents = new ArrayList<>();
        CountDownLatch ran = new CountDownLatch(n);
        AtomicInteger unregisteredRuns = new AtomicInteger();
        Thread producer = new Thread(() -> {
            for (int i = 0; i < n; i++) {
                Object kept = new Object();
                referents.add(kept);
                HandleCleaner.register(kept, ran::countDown);
                Object dropped = new Object();
                HandleCleaner.register(dropped, unregisteredRuns::incrementAndGet).unregister();
            }
        });
        producer.start();
        producer.join();
        // a new thread's first registration adopts the ended thread's stripe
        Thread next = new Thread(() -> HandleCleaner.register(new Object(), () -> { }).unregister());
        next.start();
        next.join();
        assertTrue(collect(referents, ran), "every action of the ended thread's registrations ran");
        assertEquals(0, unregisteredRuns.get(), "an unregistered action never runs");
    }

    @Test
    void liveRegistrationsSurviveTheStripeGrowingAndShrinking() throws Exception {
        // one thread: thousands unregistered at once, a few kept across many compactions into new arrays
        List<Object> referents = new ArrayList<>();
        int kept = 64;
        CountDownLatch ran = new CountDownLatch(kept);
        AtomicInteger unregisteredRuns = new AtomicInteger();
        for (int i = 0; i < 20_000; i++) {
            if (i % 50 == 0 && referents.size() < kept) {
                Object o = new Object();
                referents.add(o);
                HandleCleaner.register(o, ran::countDown);
            } else {
                HandleCleaner.register(new Object(), unregisteredRuns::incrementAndGet).unregister();
            }
        }
        assertEquals(kept, referents.size());
        assertTrue(collect(referents, ran), "every kept registration ran after the compactions");
        assertEquals(0, unregisteredRuns.get(), "an unregistered action never runs");
    }

    @Test
    void registrationsFromVirtualThreadsRun() throws Exception {
        int n = 50;
        List<Object> referents = new ArrayList<>();
        CountDownLatch ran = new CountDownLatch(n);
        Thread.ofVirtual().start(() -> {
            for (int i = 0; i < n; i++) {
                Object kept = new Object();
                referents.add(kept);
                HandleCleaner.register(kept, ran::countDown);
            }
        }).join();
        assertTrue(collect(referents, ran));
    }
}
