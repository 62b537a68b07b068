package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.devicebridge.Device;
import org.devicebridge.HandleClosedException;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Streams, pooled events, and a producer/consumer race that shows the event wait is what orders them. */
@RequiresCuda
class CudaStreamEventTest {
    private static final Device DEVICE = Device.cuda(0);
    private long liveBefore;
    private long failedBefore;

    @BeforeEach
    void baseline() {
        liveBefore = HandleTracker.liveHandles();
        failedBefore = HandleTracker.failedReleases();
    }

    @AfterEach
    void nothingLeaked() {
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(failedBefore, HandleTracker.failedReleases(), "failed (logged) releases");
    }

    @Test
    void everyHandleReportsTheDeviceItWasMadeOnAndBothStreamKindsRunWork() {
        try (CudaStream nonBlocking = CudaStream.create(DEVICE);
             CudaStream blocking = CudaStream.createBlocking(DEVICE);
             CudaStream legacy = CudaStream.borrow(DEVICE, 0);
             CudaEvent event = CudaEvent.acquire(DEVICE);
             DeviceBuffer buffer = DeviceBuffer.allocate(DEVICE, 64);
             DeviceBuffer ordered = DeviceBuffer.allocateAsync(DEVICE, 64, blocking);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 1 << 20)) {
            for (Device d : List.of(nonBlocking.device(), blocking.device(), legacy.device(), event.device(),
                    buffer.device(), ordered.device(), transfer.device())) {
                assertEquals(DEVICE, d);
            }
            assertNotEquals(nonBlocking.address(), blocking.address(), "two streams");
            for (CudaStream s : List.of(nonBlocking, blocking)) {
                CudaCopies.fillAsync(buffer.range(0, 64), (byte) 7, s);
                event.record(s);
                event.synchronize();
                assertTrue(s.query(), "the work queued on the stream ran");
            }
        }
    }

    @Test
    void eventsComeFromThePoolSoTheSteadyStateCreatesNone() {
        int n = 8;
        List<CudaEvent> first = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            first.add(CudaEvent.acquire(DEVICE));
        }
        Set<Long> addresses = new HashSet<>();
        for (CudaEvent e : first) {
            addresses.add(e.address());
            e.close();
        }
        assertEquals(n, addresses.size(), "distinct events while held together");
        long created = CudaCounters.snapshot().eventCreateCalls();
        try (CudaStream s = CudaStream.create(DEVICE)) {
            for (int round = 0; round < 100; round++) {
                List<CudaEvent> again = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    CudaEvent e = CudaEvent.acquire(DEVICE);
                    assertTrue(addresses.contains(e.address()), "reused from the pool");
                    e.record(s);
                    again.add(e);
                }
                again.forEach(CudaEvent::close);
            }
            s.synchronize();
        }
        assertEquals(created, CudaCounters.snapshot().eventCreateCalls(), "no cuEventCreate in the steady state");
    }

    @Test
    void eventRecordQuerySynchronizeAndUseAfterClose() {
        try (CudaStream s = CudaStream.create(DEVICE);
             DeviceBuffer big = DeviceBuffer.allocate(DEVICE, 256L << 20);
             DeviceBuffer big2 = DeviceBuffer.allocate(DEVICE, 256L << 20)) {
            CudaEvent e = CudaEvent.acquire(DEVICE);
            assertEquals(DEVICE, e.device());
            e.record(s);
            e.synchronize();
            assertTrue(e.query());
            CudaCopies.deviceToDeviceAsync(big.range(0, big.byteSize()), big2, 0, s);
            e.record(s);
            e.synchronize();
            assertTrue(e.query(), "synchronize returned, so the recorded copy is done");
            assertTrue(s.query());
            e.close();
            assertThrows(HandleClosedException.class, () -> e.record(s));
            assertThrows(HandleClosedException.class, () -> s.waitEvent(e));
        }
    }

    @Test
    void borrowedStreamIsNotDestroyedByClose() {
        try (CudaStream owner = CudaStream.create(DEVICE)) {
            CudaStream view = CudaStream.borrow(DEVICE, owner.address());
            assertEquals(owner.address(), view.address());
            view.close();
            owner.synchronize(); // still a valid stream
            assertTrue(owner.query());
        }
        long created = CudaCounters.snapshot().streamCreateCalls();
        try (CudaStream legacy = CudaStream.borrow(DEVICE, 0)) {
            legacy.synchronize();
        }
        assertEquals(created, CudaCounters.snapshot().streamCreateCalls());
    }

    /*
     * The race: the producer stream first copies 512 MiB into a scratch buffer (a few hundred
     * microseconds to milliseconds of copy-engine time) and only then copies `src` into `dst`, and records
     * the event; the consumer stream copies the last 4 KiB of `dst` to pinned host memory. With
     * waitEvent the consumer must see the new bytes in every trial. Without it (the negative control) the
     * consumer's copy is queued microseconds after the producer's and starts long before the producer
     * reaches `dst`, so it reads the stale bytes; the test demands that at least once in TRIALS.
     *
     * How the control could be flaky: if the host thread were descheduled for longer than the producer's
     * whole copy chain between queuing the two streams' work in every single trial, or if a driver ran
     * both streams' copies on one copy-engine queue in submission order (then no race exists to detect;
     * the control would then fail every time, which points at the hardware, not at a missing wait).
     */
    private static final long BIG = 512L << 20;
    private static final int TAIL = 4096;
    private static final int TRIALS = 20;

    @Test
    void consumerThatWaitsOnTheEventAlwaysSeesTheProducersData() {
        assertEquals(TRIALS, raceTrials(true), "every trial with the wait must see the new data");
    }

    @Test
    void negativeControlWithoutTheWaitSeesStaleDataAtLeastOnce() {
        int fresh = raceTrials(false);
        assertTrue(fresh < TRIALS, "without the wait the consumer saw the producer's data in all " + TRIALS
                + " trials: the race test could not detect a missing wait");
    }

    /** Runs the race TRIALS times and returns how often the consumer saw the new data. */
    private static int raceTrials(boolean wait) {
        int fresh = 0;
        try (CudaStream producer = CudaStream.create(DEVICE);
             CudaStream consumer = CudaStream.create(DEVICE);
             DeviceBuffer scratch = DeviceBuffer.allocate(DEVICE, BIG);
             DeviceBuffer src = DeviceBuffer.allocate(DEVICE, BIG);
             DeviceBuffer dst = DeviceBuffer.allocate(DEVICE, BIG);
             PinnedHostBuffer tail = PinnedHostBuffer.allocate(TAIL)) {
            MemorySegment host = tail.segment();
            for (int t = 0; t < TRIALS; t++) {
                byte stale = (byte) (2 * t + 1);
                byte fresh0 = (byte) (2 * t + 2);
                CudaCopies.fill(dst.range(0, BIG), stale);
                CudaCopies.fill(src.range(0, BIG), fresh0);
                host.fill((byte) 0);
                Cuda.synchronize(DEVICE);
                CudaCopies.deviceToDeviceAsync(src.range(0, BIG), scratch, 0, producer);
                CudaCopies.deviceToDeviceAsync(src.range(0, BIG), dst, 0, producer);
                try (CudaEvent ready = CudaEvent.acquire(DEVICE)) {
                    ready.record(producer);
                    if (wait) {
                        consumer.waitEvent(ready);
                    }
                }
                CudaCopies.deviceToHostAsync(dst, BIG - TAIL, host, consumer);
                consumer.synchronize();
                producer.synchronize();
                byte first = host.get(ValueLayout.JAVA_BYTE, 0);
                byte last = host.get(ValueLayout.JAVA_BYTE, TAIL - 1);
                if (first == fresh0 && last == fresh0) {
                    fresh++;
                } else {
                    assertNotEquals(0, first, "the consumer's copy ran");
                }
            }
        }
        return fresh;
    }
}
