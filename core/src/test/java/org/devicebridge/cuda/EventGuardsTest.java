package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The order of {@link EventGuards}, with fake fences that log every call: a resource is closed only after its
 * fence was seen completed (and the fence goes back to its pool after the resource), never before; oldest
 * first; a drain waits for each fence in turn.
 */
class EventGuardsTest {
    private final List<String> log = new ArrayList<>();

    /** A fence that completes when the test says so, or when awaited (as a device finishing its work). */
    private final class FakeFence implements EventGuards.Fence {
        private final String name;
        private boolean done;
        private RuntimeException queryFailure;

        FakeFence(String name) {
            this.name = name;
        }

        void complete() {
            done = true;
        }

        @Override
        public boolean isDone() {
            log.add(name + ".isDone=" + done);
            if (queryFailure != null) {
                throw queryFailure;
            }
            return done;
        }

        @Override
        public void await() {
            log.add(name + ".await");
            done = true;
        }

        @Override
        public void close() {
            log.add(name + ".close");
        }
    }

    private AutoCloseable resource(String name) {
        return () -> log.add(name + ".close");
    }

    @Test
    void aResourceIsClosedOnlyAfterItsFenceCompleted() {
        EventGuards guards = new EventGuards();
        FakeFence f1 = new FakeFence("f1");
        guards.add(f1, resource("r1"));
        guards.poll();
        assertFalse(guards.isEmpty());
        f1.complete();
        guards.poll();
        assertTrue(guards.isEmpty());
        guards.poll();
        assertEquals(List.of("f1.isDone=false", "f1.isDone=false", "f1.isDone=true", "r1.close", "f1.close"), log);
    }

    @Test
    void addReleasesWhatCompletedOldestFirstAndStopsAtTheFirstPending() {
        EventGuards guards = new EventGuards();
        FakeFence f1 = new FakeFence("f1");
        FakeFence f2 = new FakeFence("f2");
        FakeFence f3 = new FakeFence("f3");
        guards.add(f1, resource("r1"));
        f2.complete(); // a later fence done before an earlier one: r2 still waits behind r1
        guards.add(f2, resource("r2"));
        f1.complete();
        guards.add(f3, resource("r3"));
        assertEquals(List.of(
                "f1.isDone=false",
                "f1.isDone=false",
                "f1.isDone=true", "r1.close", "f1.close", "f2.isDone=true", "r2.close", "f2.close", "f3.isDone=false"),
                log);
        assertFalse(guards.isEmpty());
    }

    @Test
    void drainWaitsForEachFenceBeforeItsResource() {
        EventGuards guards = new EventGuards();
        guards.add(new FakeFence("f1"), resource("r1"));
        guards.add(new FakeFence("f2"), resource("r2"));
        log.clear();
        guards.drain();
        assertTrue(guards.isEmpty());
        assertEquals(List.of("f1.await", "r1.close", "f1.close", "f2.await", "r2.close", "f2.close"), log);
        guards.drain();
        assertEquals(6, log.size(), "a drained queue holds nothing");
    }

    @Test
    void aFailingCloseStillReleasesTheRestAndThrowsAfterwards() {
        EventGuards guards = new EventGuards();
        IllegalStateException boom = new IllegalStateException("boom");
        guards.add(new FakeFence("f1"), () -> {
            log.add("r1.close");
            throw boom;
        });
        guards.add(new FakeFence("f2"), resource("r2"));
        log.clear();
        IllegalStateException thrown = assertThrows(IllegalStateException.class, guards::drain);
        assertSame(boom, thrown);
        assertEquals(List.of("f1.await", "r1.close", "f1.close", "f2.await", "r2.close", "f2.close"), log);
        assertTrue(guards.isEmpty());
    }

    @Test
    void aFenceThatCannotBeQueriedKeepsItsResource() {
        EventGuards guards = new EventGuards();
        FakeFence f1 = new FakeFence("f1");
        f1.queryFailure = new CudaException("cuEventQuery", 999, "CUDA_ERROR_UNKNOWN", "unknown error");
        FakeFence f0 = new FakeFence("f0");
        f0.complete();
        guards.add(f0, resource("r0"));
        assertThrows(CudaException.class, () -> guards.add(f1, resource("r1")));
        assertEquals(List.of("f0.isDone=true", "r0.close", "f0.close", "f1.isDone=false"), log);
        assertFalse(guards.isEmpty(), "nothing is freed under a copy that may still run");
    }

    /** A fence done once {@code done} is set, for the threads test (the logging fakes are single-threaded). */
    private record FlagFence(java.util.concurrent.atomic.AtomicBoolean done) implements EventGuards.Fence {
        @Override
        public boolean isDone() {
            return done.get();
        }

        @Override
        public void await() {}

        @Override
        public void close() {}
    }

    @Test
    @org.junit.jupiter.api.Timeout(30)
    void aPollThatFindsAnotherThreadReleasingReturnsOnlyOnceWhatIsDoneIsClosed() throws Exception {
        EventGuards guards = new EventGuards();
        java.util.concurrent.CountDownLatch inFirstClose = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch finishFirstClose = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean secondClosed = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            java.util.concurrent.atomic.AtomicBoolean firstDone = new java.util.concurrent.atomic.AtomicBoolean();
            guards.add(new FlagFence(firstDone), () -> {
                inFirstClose.countDown();
                finishFirstClose.await();
            });
            firstDone.set(true); // closed by the poll of thread A below, which then blocks in it
            java.util.concurrent.Future<?> a = threads.submit(guards::poll);
            inFirstClose.await();
            java.util.concurrent.atomic.AtomicReference<Thread> b = new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.Future<Boolean> polled = threads.submit(() -> {
                b.set(Thread.currentThread());
                // its poll finds A releasing, as Flight's Uploads.close may after waiting for a later event
                guards.add(new FlagFence(new java.util.concurrent.atomic.AtomicBoolean(true)), () -> secondClosed.set(true));
                return secondClosed.get();
            });
            while (!polled.isDone() && (b.get() == null || b.get().getState() != Thread.State.WAITING)) {
                Thread.onSpinWait(); // until B waits for A's release (or returned without waiting)
            }
            finishFirstClose.countDown();
            assertTrue(polled.get(), "the poll returned before the entry it found done was closed");
            a.get();
            assertTrue(guards.isEmpty());
        } finally {
            finishFirstClose.countDown();
            threads.shutdownNow();
        }
    }
}
