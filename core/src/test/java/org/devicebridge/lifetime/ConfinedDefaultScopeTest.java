package org.devicebridge.lifetime;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.devicebridge.HandleBusyException;
import org.devicebridge.NativeHandle;
import org.devicebridge.NativeHandle.State;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.lifetime.Scenarios.HandOver;
import org.devicebridge.lifetime.Subject.Opened;
import org.devicebridge.testing.AllowsLeaks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The default scope of an import made without an {@code Arena}: confined to the thread that takes its first
 * segment. Another thread that takes a segment, closes the handle or hands it over gets
 * {@link HandleBusyException} caused by a {@link WrongThreadException} and changes nothing (the owner still reads the data, and its close
 * releases exactly once); a handle whose segments were never taken closes from any thread; and the Cleaner
 * releases a forgotten import exactly once, only after its segments became unreachable too.
 */
@AllowsLeaks("the Cleaner case drops a live handle on purpose; it asserts exactly one such release itself")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConfinedDefaultScopeTest {
    private long failedReleases;

    static List<Subject> subjects() {
        return Subject.cpu();
    }

    static Stream<Arguments> handOvers() {
        return Stream.of(Arguments.of(Subject.ARROW_ARRAY, HandOver.ARROW_JAVA_IMPORT),
                Arguments.of(Subject.DLPACK_VERSIONED, HandOver.DLPACK_ARROW_IMPORT));
    }

    @BeforeEach
    void countFailedReleases() {
        failedReleases = HandleTracker.failedReleases();
    }

    @AfterEach
    void noReleaseFailedAndPoisonedBlocksFreed() {
        HoldSegment.freeReleased();
        assertEquals(failedReleases, HandleTracker.failedReleases(), "release steps that threw (and were only logged)");
    }

    /** A new segment of the handle's data, through its public API (what a second reader would call). */
    private static MemorySegment takeSegment(NativeHandle h) {
        return switch (h) {
            case ImportedArray a -> a.root().buffer(1);
            case ImportedTensor t -> t.segment();
            default -> throw new AssertionError("no segment accessor for " + h);
        };
    }

    /** Runs {@code action} on a new platform thread and returns what it threw, or null. */
    private static Throwable onAnotherThread(Runnable action) throws InterruptedException {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name("lifetime-other").start(() -> {
            try {
                action.run();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        assertTrue(t.join(Scenarios.CLOSER_WAIT), "the other thread did not end within " + Scenarios.CLOSER_WAIT);
        return thrown.get();
    }

    private static void assertConfined(String what, Throwable thrown) {
        HandleBusyException e = assertInstanceOf(HandleBusyException.class, thrown, what);
        assertInstanceOf(WrongThreadException.class, e.getCause(), what + ": the cause says it was the wrong thread");
        assertTrue(e.getMessage().contains("Arena.ofShared()"), what + ": the message names the shared-arena overload: "
                + e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subjects")
    void anotherThreadTakingASegmentOrClosingIsRefusedAndChangesNothing(Subject s) throws Exception {
        try (Opened o = s.open()) {
            MemorySegment data = o.data();
            Throwable taking = onAnotherThread(() -> takeSegment(o.handle()));
            Throwable closing = onAnotherThread(() -> o.handle().close());
            Throwable reading = onAnotherThread(() -> data.get(JAVA_BYTE, 0));
            assertAll(s + ", another thread",
                    () -> assertConfined("taking a segment", taking),
                    () -> assertConfined("close()", closing),
                    () -> assertInstanceOf(WrongThreadException.class, reading,
                            "reading a segment handed out to the owner (FFM's own check)"));
            Scenarios.assertLiveAfterTheCall(o);
            assertEquals(HoldSegment.expectedSum(Subject.N, s.seed), sumOf(takeSegment(o.handle())),
                    s + ": a segment the owner takes after the refusals");
            o.handle().close();
            Scenarios.assertReleasedOnce(o.handle(), data, o::released);
        }
    }

    @ParameterizedTest(name = "{0} via {1}")
    @MethodSource("handOvers")
    void aHandOverOnAnotherThreadIsRefusedAndTheOwnersHandOverSucceeds(Subject s, HandOver handOver) throws Exception {
        try (BufferAllocator allocator = new RootAllocator(); Opened o = s.open()) {
            AtomicReference<FieldVector> wrongly = new AtomicReference<>();
            Throwable thrown = onAnotherThread(() -> wrongly.set(handOver.apply(o.handle(), allocator)));
            if (wrongly.get() != null) {
                wrongly.get().close();
            }
            assertConfined(s + ", " + handOver + " on another thread", thrown);
            Scenarios.assertLiveAfterTheCall(o);
            try (FieldVector v = handOver.apply(o.handle(), allocator)) {
                assertEquals(State.CONSUMED, o.handle().state(), s + ": state after the owner's hand-over");
                Scenarios.assertUnusable(s + " after the hand-over", o.data());
                assertEquals(Subject.N, v.getValueCount(), s + ": values in the vector");
                assertEquals(0, o.released(), s + ": releases while the vector holds the data");
            }
            assertEquals(1, o.released(), s + ": releases after the vector was closed");
        }
    }

    @Test
    void aDefaultImportWhoseSegmentWasNeverTakenIsClosedByAnyThreadOnce() throws Exception {
        HoldSegment.require();
        Subject s = Subject.DLPACK_VERSIONED;
        long before = HoldSegment.releasesOf(s.seed);
        ImportedTensor t = Subject.importVersioned(HoldSegment.makeVersioned(Subject.N, s.seed), null);
        Throwable thrown = onAnotherThread(t::close);
        assertEquals(null, thrown, "close() on another thread of a handle that handed out no segment");
        assertEquals(1, HoldSegment.releasesOf(s.seed) - before, "releases");
        assertEquals(State.RELEASED, t.state());
        t.close();
        assertEquals(1, HoldSegment.releasesOf(s.seed) - before, "releases after a second close()");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subjects")
    void aForgottenDefaultImportIsReleasedOnceByTheCleanerOnlyAfterItsSegmentIsUnreachable(Subject s) throws Exception {
        long leaked = HandleTracker.leakedHandles();
        AtomicReference<MemorySegment> data = new AtomicReference<>();
        AtomicReference<WeakReference<NativeHandle>> weakHolder = new AtomicReference<>();
        Subject.Detached d = openDropped(s, weakHolder, data);
        WeakReference<NativeHandle> weak = weakHolder.get();
        WeakReference<MemorySegment> weakData = new WeakReference<>(data.get());
        long live = HandleTracker.liveHandles(); // the import's handle and whatever else the subject opened
        try {
            assertTrue(Scenarios.awaitWithGc(() -> weak.get() == null, Scenarios.GC_WAIT),
                    s + ": the dropped handle stayed reachable for " + Scenarios.GC_WAIT);
            Scenarios.awaitWithGc(() -> HandleTracker.leakedHandles() > leaked, Scenarios.CLEANER_TURN);
            assertAll(s + ", handle dropped, its segment still held",
                    () -> assertEquals(0, d.released(), "releases while a segment is reachable"),
                    () -> assertEquals(leaked, HandleTracker.leakedHandles(), "handles the Cleaner released"),
                    () -> assertEquals(d.expectedSum(), sumOf(data.get()), "the data, read through the held segment"));
            data.set(null);
            assertTrue(Scenarios.awaitWithGc(() -> d.released() > 0, Scenarios.CLEANER_WAIT),
                    s + ": the Cleaner did not release the import within " + Scenarios.CLEANER_WAIT
                            + " after its segment became unreachable");
            Scenarios.settle(() -> d.released() > 1);
            assertEquals(1, d.released(), s + ": releases by the Cleaner");
            assertEquals(null, weakData.get(), s + ": a segment is still reachable after the release");
            assertEquals(live - 1, HandleTracker.liveHandles(), s + ": live handles");
            assertEquals(leaked + 1, HandleTracker.leakedHandles(), s + ": handles the Cleaner released");
        } finally {
            NativeHandle h = weak.get();
            if (h != null) {
                h.close(); // the test failed before the handle became unreachable
            }
            if (d.rest() != null) {
                d.rest().close();
            }
        }
    }

    /** Opens a subject and keeps only a weak reference to its handle: no frame of the caller refers to it. */
    private static Subject.Detached openDropped(Subject s, AtomicReference<WeakReference<NativeHandle>> weak,
                                                AtomicReference<MemorySegment> data) {
        Opened o = s.open();
        weak.set(new WeakReference<>(o.handle()));
        return o.detach(data);
    }

    private static long sumOf(MemorySegment segment) {
        long sum = 0;
        for (long i = 0; i < segment.byteSize(); i++) {
            sum += segment.get(JAVA_BYTE, i) & 0xff;
        }
        return sum;
    }
}
