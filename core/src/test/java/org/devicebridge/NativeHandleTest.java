package org.devicebridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.AllowsLeaks;
import org.junit.jupiter.api.Test;

@AllowsLeaks("the Cleaner test abandons a handle on purpose")
class NativeHandleTest {

    static final class CountingHandle extends NativeHandle {
        CountingHandle(AtomicInteger releases) {
            super("test handle", releases::incrementAndGet);
        }

        void use() {
            ensureLive();
        }

        void handOver() {
            markConsumed();
        }
    }

    @Test
    void closeReleasesExactlyOnceAndIsIdempotent() {
        AtomicInteger releases = new AtomicInteger();
        CountingHandle h = new CountingHandle(releases);
        assertTrue(h.isLive());
        h.close();
        h.close();
        h.close();
        assertEquals(1, releases.get());
        assertEquals(NativeHandle.State.RELEASED, h.state());
        HandleClosedException e = assertThrows(HandleClosedException.class, h::use);
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void consumedHandleIsNeverReleasedByItsOwner() {
        AtomicInteger releases = new AtomicInteger();
        CountingHandle h = new CountingHandle(releases);
        h.handOver();
        h.close();
        assertEquals(0, releases.get());
        assertEquals(NativeHandle.State.CONSUMED, h.state());
        assertThrows(HandleClosedException.class, h::handOver, "consumed twice");
        assertThrows(HandleClosedException.class, h::use);
    }

    @Test
    void closedHandleCannotBeConsumed() {
        AtomicInteger releases = new AtomicInteger();
        CountingHandle h = new CountingHandle(releases);
        h.close();
        assertThrows(HandleClosedException.class, h::handOver);
        assertEquals(1, releases.get());
    }

    @Test
    void twoThreadsClosingTheSameHandleReleaseOnce() throws Exception {
        int iterations = 10_000;
        AtomicInteger releases = new AtomicInteger();
        CyclicBarrier barrier = new CyclicBarrier(2);
        CountingHandle[] handles = new CountingHandle[iterations];
        for (int i = 0; i < iterations; i++) {
            handles[i] = new CountingHandle(releases);
        }
        Runnable closer = () -> {
            try {
                for (CountingHandle h : handles) {
                    barrier.await(10, TimeUnit.SECONDS);
                    h.close();
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };
        Thread a = new Thread(closer);
        Thread b = new Thread(closer);
        a.start();
        b.start();
        a.join();
        b.join();
        assertEquals(iterations, releases.get());
    }

    @Test
    void forgottenHandleIsReleasedByTheCleanerAndCountedAsALeak() throws Exception {
        AtomicInteger releases = new AtomicInteger();
        long leakedBefore = HandleTracker.leakedHandles();
        CountDownLatch released = new CountDownLatch(1);
        abandon(releases, released);
        for (int i = 0; i < 100 && released.getCount() > 0; i++) {
            System.gc();
            released.await(50, TimeUnit.MILLISECONDS);
        }
        assertEquals(0, released.getCount(), "the Cleaner did not release the forgotten handle");
        assertEquals(1, releases.get());
        assertTrue(HandleTracker.leakedHandles() > leakedBefore);
    }

    private static void abandon(AtomicInteger releases, CountDownLatch released) {
        new NativeHandle("forgotten test handle", () -> {
            releases.incrementAndGet();
            released.countDown();
        }) { };
    }

    @Test
    void failingReleaseIsLoggedNotThrownAndNotRetried() {
        AtomicInteger attempts = new AtomicInteger();
        long failedBefore = HandleTracker.failedReleases();
        NativeHandle h = new NativeHandle("failing test handle", () -> {
            attempts.incrementAndGet();
            throw new IllegalStateException("boom");
        }) { };
        h.close();
        h.close();
        assertEquals(1, attempts.get());
        assertEquals(failedBefore + 1, HandleTracker.failedReleases());
        assertFalse(h.isLive());
    }
}
