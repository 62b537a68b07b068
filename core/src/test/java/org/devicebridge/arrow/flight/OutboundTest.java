package org.devicebridge.arrow.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongPredicate;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.OutboundStreamListener;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The DoGet flow control, deterministically: a fake listener whose readiness and cancellation follow a fake
 * clock that only the waits advance, and that never runs its ready or cancel handler (as inside a blocking
 * {@code DoGet} body, where gRPC cannot run them). The stall this replaced waited Flight's callback strategy
 * out to its 1 s timeout whenever the client was not ready at the first look.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OutboundTest {
    /** A fake clock advanced only by the pauses the flow control asks for; records every pause. */
    private static final class FakeTime implements Outbound.Pause {
        long now = 1_000_000_000L;
        final List<Long> pauses = new ArrayList<>();

        @Override
        public void pause(Object blocker, long nanos) {
            assertTrue(nanos > 0, "a pause of " + nanos);
            pauses.add(nanos);
            now += nanos;
        }

        long paused() {
            return pauses.stream().mapToLong(Long::longValue).sum();
        }
    }

    /** A server listener whose readiness and cancellation are functions of the elapsed fake time. */
    private static class FakeListener implements ServerStreamListener {
        final FakeTime time;
        final long origin;
        LongPredicate readyAfter = elapsed -> true;
        LongPredicate cancelledAfter = elapsed -> false;
        Runnable onReady;
        Runnable onCancel;
        int looks;
        int puts;

        FakeListener(FakeTime time) {
            this.time = time;
            this.origin = time.now;
        }

        @Override
        public boolean isReady() {
            looks++;
            return readyAfter.test(time.now - origin);
        }

        @Override
        public boolean isCancelled() {
            return cancelledAfter.test(time.now - origin);
        }

        @Override
        public void setOnReadyHandler(Runnable handler) {
            onReady = handler;
        }

        @Override
        public void setOnCancelHandler(Runnable handler) {
            onCancel = handler;
        }

        @Override
        public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {}

        @Override
        public void putNext() {
            puts++;
        }

        @Override
        public void putNext(ArrowBuf metadata) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void putMetadata(ArrowBuf metadata) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void error(Throwable ex) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void completed() {
            throw new UnsupportedOperationException();
        }
    }

    private static Outbound outbound(FakeListener listener) {
        return new Outbound(listener, listener.time, () -> listener.time.now);
    }

    @Test
    void aReadyListenerIsNotWaitedOn() {
        FakeListener listener = new FakeListener(new FakeTime());
        Outbound flow = outbound(listener);
        for (int i = 0; i < 100; i++) {
            assertTrue(flow.awaitReady());
        }
        assertEquals(List.of(), listener.time.pauses, "no pause while the client is ready");
    }

    @ParameterizedTest(name = "ready after {0} ns")
    @ValueSource(longs = {1, 5_000, 100_000, 3_000_000, 50_000_000, 2_000_000_000})
    void aClientThatBecomesReadyWithoutTheCallbackIsSeenSoonAfter(long readyAt) {
        FakeListener listener = new FakeListener(new FakeTime());
        listener.readyAfter = elapsed -> elapsed >= readyAt;
        assertTrue(outbound(listener).awaitReady());
        long overshoot = listener.time.paused() - readyAt;
        long bound = Math.min(Outbound.MAX_PAUSE_NANOS, Math.max(Outbound.MIN_PAUSE_NANOS, readyAt / 4));
        assertTrue(overshoot >= 0 && overshoot <= bound,
                "waited " + listener.time.paused() + " ns for a client ready after " + readyAt + " ns");
        assertTrue(listener.time.pauses.stream().allMatch(p -> p <= Outbound.MAX_PAUSE_NANOS), "no pause over 1 ms");
        assertTrue(listener.looks <= 40 + readyAt / Outbound.MAX_PAUSE_NANOS, listener.looks + " looks");
    }

    @Test
    void pausesGrowWithTheWaitFromTheShortestToTheLongest() {
        FakeListener listener = new FakeListener(new FakeTime());
        listener.readyAfter = elapsed -> elapsed >= 20_000_000;
        assertTrue(outbound(listener).awaitReady());
        List<Long> pauses = listener.time.pauses;
        assertEquals(Outbound.MIN_PAUSE_NANOS, pauses.getFirst());
        for (int i = 1; i < pauses.size(); i++) {
            assertTrue(pauses.get(i) >= pauses.get(i - 1), "pauses " + pauses);
        }
        assertEquals(Outbound.MAX_PAUSE_NANOS, pauses.getLast());
    }

    @Test
    void aServerListenerWithoutAReadyHandlerIsWaitedOnAllTheSame() {
        FakeListener listener = new FakeListener(new FakeTime()) {
            @Override
            public void setOnReadyHandler(Runnable handler) {
                throw new UnsupportedOperationException("Not yet implemented."); // OutboundStreamListener's default
            }
        };
        listener.readyAfter = elapsed -> elapsed >= 300_000;
        assertTrue(outbound(listener).awaitReady());
        assertTrue(listener.time.paused() >= 300_000);
        assertNotNull(listener.onCancel, "the cancel handler is set");
    }

    @Test
    void aCancelledCallIsNotWaitedOn() {
        FakeListener listener = new FakeListener(new FakeTime());
        listener.readyAfter = elapsed -> false;
        listener.cancelledAfter = elapsed -> true;
        Outbound flow = outbound(listener);
        assertTrue(flow.cancelled());
        assertFalse(flow.awaitReady());
        assertEquals(List.of(), listener.time.pauses);
    }

    @Test
    void aCancellationDuringTheWaitEndsItWithoutTheCallback() {
        FakeListener listener = new FakeListener(new FakeTime());
        listener.readyAfter = elapsed -> false;
        listener.cancelledAfter = elapsed -> elapsed >= 7_000_000;
        assertFalse(outbound(listener).awaitReady());
        assertTrue(listener.time.paused() - 7_000_000 <= Outbound.MAX_PAUSE_NANOS, "paused " + listener.time.paused());
    }

    @Test
    void aCancelledCallIsNotSentToEvenWhenItLooksReady() {
        FakeListener listener = new FakeListener(new FakeTime());
        listener.cancelledAfter = elapsed -> true;
        assertFalse(outbound(listener).awaitReady());
    }

    @Test
    void anInterruptedSenderGetsFlightsCancelledAndKeepsItsInterruptStatus() {
        FakeListener listener = new FakeListener(new FakeTime());
        listener.readyAfter = elapsed -> false;
        Outbound flow = outbound(listener);
        Thread.currentThread().interrupt();
        try {
            FlightRuntimeException e = assertThrows(FlightRuntimeException.class, flow::awaitReady);
            assertEquals(FlightStatusCode.CANCELLED, e.status().code());
            assertTrue(Thread.currentThread().isInterrupted());
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void aClientStreamIsNeverWaitedOnAndItsHandlersAreLeftAlone() {
        // OutboundStreamListener.setOnReadyHandler's default throws: setting it would fail.
        OutboundStreamListener client = new OutboundStreamListener() {
            @Override
            public boolean isReady() {
                throw new AssertionError("a client stream's putNext waits itself");
            }

            @Override
            public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {}

            @Override
            public void putNext() {}

            @Override
            public void putNext(ArrowBuf metadata) {}

            @Override
            public void putMetadata(ArrowBuf metadata) {}

            @Override
            public void error(Throwable ex) {}

            @Override
            public void completed() {}
        };
        Outbound flow = Outbound.of(client);
        assertTrue(flow.awaitReady());
        assertFalse(flow.cancelled());
    }

    @Test
    void theReadyHandlerEndsAPauseEarlyWhereFlightCanRunIt() throws InterruptedException {
        FakeListener listener = new FakeListener(new FakeTime());
        AtomicBoolean ready = new AtomicBoolean();
        listener.readyAfter = elapsed -> ready.get();
        // Each pause is a real park of 10 s: only the handler, run from another thread, can end it early.
        Outbound flow = new Outbound(listener, (blocker, nanos) -> LockSupport.parkNanos(blocker, 10_000_000_000L),
                System::nanoTime);
        assertNotNull(listener.onReady, "the ready handler is set");
        assertNotNull(listener.onCancel, "the cancel handler is set");
        Thread helper = Thread.ofPlatform().start(() -> {
            LockSupport.parkNanos(20_000_000L);
            ready.set(true);
            listener.onReady.run();
        });
        long start = System.nanoTime();
        assertTrue(flow.awaitReady());
        assertTrue(System.nanoTime() - start < 5_000_000_000L, "woken by the handler, not by the 10 s pause");
        helper.join();
    }

    @Test
    void aCancelledServerStreamTakesNoBatchAndACancelDuringTheWaitSendsNoMore() {
        try (BufferAllocator memory = new RootAllocator();
             VectorSchemaRoot streamRoot = VectorSchemaRoot.create(DeviceFlightLoopbackTest.SCHEMA, memory)) {
            FakeListener cancelled = new FakeListener(new FakeTime());
            cancelled.cancelledAfter = elapsed -> true;
            Iterator<VectorSchemaRoot> none = new Iterator<>() {
                @Override
                public boolean hasNext() {
                    return true;
                }

                @Override
                public VectorSchemaRoot next() {
                    throw new NoSuchElementException("nothing is taken from a cancelled call's batches");
                }
            };
            assertEquals(0, FlightCalls.send(cancelled, streamRoot, none, r -> r, outbound(cancelled)));
            assertEquals(0, cancelled.puts);

            List<VectorSchemaRoot> batches = List.of(DeviceFlightLoopbackTest.batch(memory, 0, 10),
                    DeviceFlightLoopbackTest.batch(memory, 10, 10), DeviceFlightLoopbackTest.batch(memory, 20, 10));
            try {
                FakeListener listener = new FakeListener(new FakeTime());
                // ready for the first batch, then never again; the client cancels 5 ms into the second wait
                listener.readyAfter = elapsed -> listener.puts == 0;
                listener.cancelledAfter = elapsed -> elapsed >= 5_000_000;
                assertEquals(1, FlightCalls.send(listener, streamRoot, batches.iterator(), r -> r,
                        outbound(listener)));
                assertEquals(1, listener.puts);
                DeviceFlightLoopbackTest.assertBatch(streamRoot, 0, 10);
            } finally {
                batches.forEach(VectorSchemaRoot::close);
            }
        }
    }
}
