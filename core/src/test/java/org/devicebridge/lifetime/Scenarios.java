package org.devicebridge.lifetime;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.HandleBusyException;
import org.devicebridge.NativeHandle;
import org.devicebridge.NativeHandle.State;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.DLPackArrow;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.lifetime.HoldSegment.Sums;
import org.devicebridge.lifetime.Subject.Detached;
import org.devicebridge.lifetime.Subject.Opened;

/**
 * The lifetime scenarios, each run for every {@link Subject}: a native call holds one of a handle's
 * segments (it sums the bytes, calls back into Java, sums again) while the handle is closed on the same
 * thread, on another thread, or dropped for the Cleaner; and the plain close after the call. The rule they
 * prove: a release never runs while a native call holds a segment; the close is refused with the library's
 * exception, the handle stays live, and a later close releases exactly once and leaves the segment unusable.
 */
final class Scenarios {
    private Scenarios() {}

    /** What {@code close()} must throw while a native call holds one of the handle's segments. */
    static final Class<? extends DeviceBridgeException> BUSY = HandleBusyException.class;

    /** How long a close() on another thread may take before the test calls it blocked. */
    static final Duration CLOSER_WAIT = Duration.ofSeconds(10);
    /** How long the GC may take to find a dropped handle unreachable. */
    static final Duration GC_WAIT = Duration.ofSeconds(10);
    /** How long the Cleaner may take to act on (or to release) an unreachable handle. */
    static final Duration CLEANER_WAIT = Duration.ofSeconds(20);
    /** How long the Cleaner gets, once the GC found the handle unreachable, to take its turn. */
    static final Duration CLEANER_TURN = Duration.ofSeconds(2);
    /** How long a release that wrongly started under the native call gets to show in the counts. */
    static final Duration SETTLE = Duration.ofMillis(200);

    /** a. Inside the native call, the calling thread closes the handle. */
    static void closeOnTheCallingThreadIsRefused(Subject s) throws Exception {
        try (Opened o = s.open()) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            long[] releasedInside = {-1};
            State[] stateInside = {null};
            Sums sums = HoldSegment.holdAndCall(o.data(), () -> {
                try {
                    o.handle().close();
                } catch (Throwable t) {
                    thrown.set(t);
                }
                settle(() -> o.released() > 0);
                releasedInside[0] = o.released();
                stateInside[0] = o.handle().state();
            });
            assertRefusedUnderTheCall(s + ", close() on the calling thread", o.expectedSum(), sums, thrown.get(),
                    releasedInside[0], stateInside[0]);
            assertLiveAfterTheCall(o);
            o.handle().close();
            assertReleasedOnce(o.handle(), o.data(), o::released);
        }
    }

    /** b. Inside the native call, another thread closes the handle; the call waits for that thread. */
    static void closeOnAnotherThreadIsRefused(Subject s) throws Exception {
        try (Opened o = s.open()) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            long[] releasedInside = {-1};
            State[] stateInside = {null};
            boolean[] closerReturned = {false};
            Thread closer = Thread.ofPlatform().name("lifetime-closer").unstarted(() -> {
                try {
                    o.handle().close();
                } catch (Throwable t) {
                    thrown.set(t);
                }
            });
            Sums sums = HoldSegment.holdAndCall(o.data(), () -> {
                closer.start();
                try {
                    closerReturned[0] = closer.join(CLOSER_WAIT);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                settle(() -> o.released() > 0);
                releasedInside[0] = o.released();
                stateInside[0] = o.handle().state();
            });
            // a closer that blocked on the native call is let finish before anything else is checked
            boolean closerEnded = closer.join(CLOSER_WAIT);
            assertTrue(closerReturned[0], s + ": close() on another thread did not return within " + CLOSER_WAIT
                    + " while a native call held a segment (it must throw, not wait)");
            assertTrue(closerEnded, s + ": the closing thread never ended");
            assertRefusedUnderTheCall(s + ", close() on another thread", o.expectedSum(), sums, thrown.get(),
                    releasedInside[0], stateInside[0]);
            assertLiveAfterTheCall(o);
            o.handle().close();
            assertReleasedOnce(o.handle(), o.data(), o::released);
        }
    }

    /**
     * c. Inside the native call, the only reference to the handle is dropped and the GC is driven until the
     * handle is unreachable and the Cleaner has had its turn: nothing may be released under the call; after
     * it returns, exactly one release follows (the Cleaner's retry) within {@link #CLEANER_WAIT}. A segment
     * in a confined scope (an import without an arena) keeps that scope, and so the release, waiting until it
     * too is unreachable: there the test drops its reference to the segment as well, so that the native call
     * holds the only one, and no segment is left to read after the release (checked through a weak
     * reference); a shared scope's segment stays with the test, which checks it is unusable after the release.
     */
    static void cleanerWaitsForTheCall(Subject s) throws Exception {
        AtomicReference<NativeHandle> holder = new AtomicReference<>();
        AtomicReference<MemorySegment> data = new AtomicReference<>();
        Detached d = openInto(s, holder, data);
        WeakReference<NativeHandle> weak = new WeakReference<>(holder.get());
        WeakReference<MemorySegment> weakData = new WeakReference<>(data.get());
        boolean confined = !data.get().isAccessibleBy(Thread.ofPlatform().unstarted(() -> { }));
        long live = HandleTracker.liveHandles();
        long leaked = HandleTracker.leakedHandles();
        try {
            boolean[] unreachable = {false};
            boolean[] cleanerRan = {false};
            long[] releasedInside = {-1};
            Sums sums = HoldSegment.holdAndCall(data.get(), () -> {
                holder.set(null);
                if (confined) {
                    data.set(null);
                }
                unreachable[0] = awaitWithGc(() -> weak.get() == null, GC_WAIT);
                cleanerRan[0] = unreachable[0] && awaitWithGc(() -> HandleTracker.leakedHandles() > leaked, CLEANER_TURN);
                settle(() -> d.released() > 0);
                releasedInside[0] = d.released();
            });
            assertTrue(unreachable[0], s + ": the dropped handle stayed reachable for " + GC_WAIT
                    + ", so this test could not drive the Cleaner");
            assertAll(s + ", handle dropped for the Cleaner",
                    () -> assertEquals(d.expectedSum(), sums.before(), "the native call read the data"),
                    () -> assertEquals(0, releasedInside[0], "releases while the native call held the segment"
                            + (cleanerRan[0] ? " (the Cleaner ran)" : "")),
                    () -> assertEquals(sums.before(), sums.after(),
                            "the bytes changed under the native call: released (poisoned or freed) under it"));
            assertTrue(awaitWithGc(() -> d.released() > 0, CLEANER_WAIT),
                    s + ": the Cleaner did not release the dropped handle within " + CLEANER_WAIT + " after the call returned");
            settle(() -> d.released() > 1);
            assertEquals(1, d.released(), s + ": releases after the call returned");
            if (confined) {
                assertNull(weakData.get(), s + ": a segment of the confined scope is still reachable after the release");
            } else {
                assertUnusable(s.toString(), data.get());
            }
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

    /** d. After the native call returned, close() releases exactly once; a second close() does nothing. */
    static void closeAfterTheCallReleasesOnce(Subject s) throws Exception {
        try (Opened o = s.open()) {
            Sums sums = HoldSegment.holdAndCall(o.data(), () -> { });
            assertEquals(o.expectedSum(), sums.before(), s + ": the native call read the data");
            assertEquals(sums.before(), sums.after(), s + ": the bytes changed during the native call");
            assertLiveAfterTheCall(o);
            o.handle().close();
            assertReleasedOnce(o.handle(), o.data(), o::released);
        }
    }

    /** The kinds of arena a caller may bind an import to. */
    enum CallerArena {
        SHARED {
            @Override
            Arena open() {
                return Arena.ofShared();
            }
        },
        CONFINED {
            @Override
            Arena open() {
                return Arena.ofConfined();
            }
        };

        abstract Arena open();
    }

    /**
     * e. The import is bound to the caller's arena: inside the native call, closing that arena fails with
     * FFM's own {@link IllegalStateException} and releases nothing; {@code close()} on the handle does
     * nothing; after the call, closing the arena releases exactly once and ends the segment.
     */
    static void closingTheCallersArenaDuringTheCallFails(Subject s, CallerArena kind) throws Exception {
        Arena arena = kind.open();
        boolean arenaClosed = false;
        Opened o = null;
        try {
            o = s.openIn(arena);
            Opened opened = o;
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            long[] releasedInside = {-1};
            boolean[] arenaAliveInside = {false};
            Sums sums = HoldSegment.holdAndCall(o.data(), () -> {
                try {
                    arena.close();
                } catch (Throwable t) {
                    thrown.set(t);
                }
                settle(() -> opened.released() > 0);
                releasedInside[0] = opened.released();
                arenaAliveInside[0] = arena.scope().isAlive();
            });
            assertAll(s + ", " + kind + " caller arena closed while a native call holds one of its segments",
                    () -> assertEquals(opened.expectedSum(), sums.before(), "the native call read the data"),
                    () -> assertInstanceOf(IllegalStateException.class, thrown.get(),
                            "Arena.close() must fail (FFM's own exception)"),
                    () -> assertEquals(0, releasedInside[0], "releases under the native call"),
                    () -> assertEquals(sums.before(), sums.after(),
                            "the bytes changed under the native call: released (poisoned or freed) under it"),
                    () -> assertTrue(arenaAliveInside[0], "the arena is alive after its refused close()"));
            o.handle().close(); // bound to the caller's arena: does nothing
            assertLiveAfterTheCall(o);
            arena.close();
            arenaClosed = true;
            assertReleasedOnce(o.handle(), o.data(), o::released);
        } finally {
            if (!arenaClosed && arena.scope().isAlive()) {
                arena.close();
            }
            if (o != null && o.rest() != null) {
                o.rest().close();
            }
        }
    }

    /**
     * e, many imports in one arena: while a native call holds a segment of one of them, closing the arena
     * fails and releases none; after the call, one close releases every import exactly once.
     */
    static void oneCallerArenaHoldsManyImports(List<Subject> subjects, CallerArena kind) throws Exception {
        Arena arena = kind.open();
        boolean arenaClosed = false;
        List<Opened> opened = new ArrayList<>();
        try {
            for (Subject s : subjects) {
                opened.add(s.openIn(arena));
            }
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            long[] releasedInside = {-1};
            Sums sums = HoldSegment.holdAndCall(opened.get(0).data(), () -> {
                try {
                    arena.close();
                } catch (Throwable t) {
                    thrown.set(t);
                }
                settle(() -> totalReleased(opened) > 0);
                releasedInside[0] = totalReleased(opened);
            });
            assertAll(subjects + " in one " + kind + " arena, closed while a native call holds a segment of the first",
                    () -> assertInstanceOf(IllegalStateException.class, thrown.get(), "Arena.close() must fail"),
                    () -> assertEquals(0, releasedInside[0], "releases under the native call"),
                    () -> assertEquals(sums.before(), sums.after(), "the bytes changed under the native call"));
            for (Opened o : opened) {
                assertLiveAfterTheCall(o);
            }
            arena.close();
            arenaClosed = true;
            for (Opened o : opened) {
                assertReleasedOnce(o.handle(), o.data(), o::released);
            }
        } finally {
            if (!arenaClosed && arena.scope().isAlive()) {
                arena.close();
            }
            for (Opened o : opened) {
                if (o.rest() != null) {
                    o.rest().close();
                }
            }
        }
    }

    private static long totalReleased(List<Opened> opened) {
        return opened.stream().mapToLong(Opened::released).sum();
    }

    /** The public hand-overs that consume a handle which hands out segments, each into an Arrow Java vector. */
    enum HandOver {
        /** {@link ArrowJava#importFieldVector}: the {@link ImportedArray} becomes CONSUMED. */
        ARROW_JAVA_IMPORT {
            @Override
            FieldVector apply(NativeHandle h, BufferAllocator allocator) {
                return ArrowJava.importFieldVector(allocator, (ImportedArray) h, null);
            }
        },
        /** {@link DLPackArrow#importVector}: the {@link ImportedTensor} becomes CONSUMED. */
        DLPACK_ARROW_IMPORT {
            @Override
            FieldVector apply(NativeHandle h, BufferAllocator allocator) {
                return DLPackArrow.importVector((ImportedTensor) h, allocator, "x");
            }
        };

        abstract FieldVector apply(NativeHandle h, BufferAllocator allocator);
    }

    /**
     * f. Inside the native call, the handle is handed over to a consumer: refused with {@link #BUSY} as a
     * close is, nothing released, the handle still live; after the call the hand-over succeeds, the vector
     * reads the producer's bytes, the earlier segment is unusable, and closing the vector releases once.
     */
    static void handOverDuringTheCallIsRefused(Subject s, HandOver handOver) throws Exception {
        try (BufferAllocator allocator = new RootAllocator(); Opened o = s.open()) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicReference<FieldVector> wronglyHandedOver = new AtomicReference<>();
            long[] releasedInside = {-1};
            State[] stateInside = {null};
            try {
                Sums sums = HoldSegment.holdAndCall(o.data(), () -> {
                    try {
                        wronglyHandedOver.set(handOver.apply(o.handle(), allocator));
                    } catch (Throwable t) {
                        thrown.set(t);
                    }
                    settle(() -> o.released() > 0);
                    releasedInside[0] = o.released();
                    stateInside[0] = o.handle().state();
                });
                assertRefusedUnderTheCall(s + ", " + handOver + " hand-over", o.expectedSum(), sums, thrown.get(),
                        releasedInside[0], stateInside[0]);
            } finally {
                FieldVector v = wronglyHandedOver.get();
                if (v != null) {
                    v.close();
                }
            }
            assertLiveAfterTheCall(o);
            try (FieldVector v = handOver.apply(o.handle(), allocator)) {
                assertEquals(State.CONSUMED, o.handle().state(), s + ": state after the hand-over");
                assertUnusable(s + " after the hand-over", o.data());
                assertEquals(Subject.N, v.getValueCount(), s + ": values in the vector");
                ArrowBuf data = v.getDataBuffer();
                long sum = 0;
                for (long i = 0; i < Subject.N; i++) {
                    sum += data.getByte(i) & 0xff;
                }
                assertEquals(o.expectedSum(), sum, s + ": the vector's bytes");
                assertEquals(0, o.released(), s + ": releases while the vector holds the data");
            }
            assertEquals(1, o.released(), s + ": releases after the vector was closed");
        }
    }

    // ---------------------------------------------------------------- shared assertions

    static void assertRefusedUnderTheCall(String what, long expectedSum, Sums sums, Throwable thrown,
                                          long releasedInside, State stateInside) {
        assertAll(what + " while a native call holds one of the handle's segments",
                () -> assertEquals(expectedSum, sums.before(), "the native call read the data"),
                () -> assertBusy(thrown),
                () -> assertEquals(0, releasedInside, "releases under the native call"),
                () -> assertEquals(sums.before(), sums.after(),
                        "the bytes changed under the native call: released (poisoned or freed) under it"),
                () -> assertEquals(State.LIVE, stateInside, "the handle's state after the refused close()"));
    }

    static void assertBusy(Throwable thrown) {
        if (thrown == null) {
            fail("close() returned normally; expected " + BUSY.getName());
        }
        if (!BUSY.isInstance(thrown)) {
            throw new AssertionError("close() threw " + thrown + "; expected " + BUSY.getName(), thrown);
        }
    }

    /** After a refused close, once the native call has returned: still live, nothing released, data readable. */
    static void assertLiveAfterTheCall(Opened o) {
        assertAll(o.handle().description() + " after the native call returned",
                () -> assertEquals(0, o.released(), "releases"),
                () -> assertTrue(o.handle().isLive(), "the handle is live"),
                () -> assertTrue(o.data().scope().isAlive(), "the segment's scope is alive"),
                () -> assertEquals(o.expectedSum(), HoldSegment.holdAndCall(o.data(), () -> { }).before(),
                        "the data, read again by native code"));
    }

    /** Released exactly once by the close() just made, the segment unusable, and a second close() a no-op. */
    static void assertReleasedOnce(NativeHandle h, MemorySegment data, java.util.function.LongSupplier released) {
        assertEquals(1, released.getAsLong(), h.description() + ": releases after close()");
        assertEquals(State.RELEASED, h.state(), h.description() + ": state after close()");
        assertUnusable(h.description(), data);
        h.close();
        assertEquals(1, released.getAsLong(), h.description() + ": releases after a second close()");
        assertEquals(State.RELEASED, h.state(), h.description() + ": state after a second close()");
    }

    /** The segment of released data: its scope is dead, and neither Java nor a native call may use it. */
    static void assertUnusable(String what, MemorySegment data) {
        assertFalse(data.scope().isAlive(), what + ": the segment's scope is still alive after the release");
        assertThrows(IllegalStateException.class, () -> data.get(JAVA_BYTE, 0),
                what + ": reading the segment after the release");
        assertThrows(IllegalStateException.class, () -> HoldSegment.holdAndCall(data, () -> { }),
                what + ": passing the segment to native code after the release");
    }

    // ---------------------------------------------------------------- helpers

    /**
     * Opens a subject and leaves its handle only in {@code holder} and its segment only in {@code data}: no
     * frame of the caller refers to either.
     */
    private static Detached openInto(Subject s, AtomicReference<NativeHandle> holder, AtomicReference<MemorySegment> data) {
        Opened o = s.open();
        holder.set(o.handle());
        return o.detach(data);
    }

    /** Calls System.gc() until {@code condition} holds or {@code limit} passed; says whether it holds. */
    static boolean awaitWithGc(BooleanSupplier condition, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            System.gc();
            sleep(10);
        }
        return true;
    }

    /** Gives a release that should not happen {@link #SETTLE} to show: returns early once {@code happened}. */
    static void settle(BooleanSupplier happened) {
        long deadline = System.nanoTime() + SETTLE.toNanos();
        while (!happened.getAsBoolean() && System.nanoTime() < deadline) {
            sleep(10);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
