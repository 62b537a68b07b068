package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.devicebridge.Device;
import org.devicebridge.ipc.IpcEventPool.Taken;
import org.junit.jupiter.api.Test;

/**
 * A worker channel's pool of interprocess events, without a driver: a fake event records its creation and close.
 * An event acknowledged by the worker is reused by the next call; one released without the acknowledgement, one
 * beyond the pool's bound and every event after {@link IpcEventPool#closeAll()} is closed; events are reused only
 * on their own device; and the call header says which events are pooled, within the header's bound.
 */
class IpcEventPoolTest {
    private static final Device GPU0 = Device.cuda(0);
    private static final Device GPU1 = Device.cuda(1);

    /** A fake event: its number and device, closed at most once. */
    private static final class Fake {
        final int number;
        final Device device;
        boolean closed;

        Fake(int number, Device device) {
            this.number = number;
            this.device = device;
        }
    }

    /** Fake operations that record every creation and close. */
    private static final class Counting implements IpcEventPool.Ops<Fake> {
        final List<Fake> created = new ArrayList<>();
        final List<Integer> closed = new ArrayList<>();
        boolean fail;

        @Override
        public Fake create(Device device) {
            if (fail) {
                throw new IllegalStateException("the driver refuses");
            }
            Fake f = new Fake(created.size(), device);
            created.add(f);
            return f;
        }

        @Override
        public void close(Fake event) {
            assertFalse(event.closed, "event " + event.number + " closed twice");
            event.closed = true;
            closed.add(event.number);
        }

        long live() {
            return created.stream().filter(f -> !f.closed).count();
        }
    }

    @Test
    void anEventGivenBackAfterTheAcknowledgementIsReusedByTheNextCall() {
        Counting ops = new Counting();
        IpcEventPool<Fake> pool = new IpcEventPool<>(ops, 8);
        Taken<Fake> first = pool.take(GPU0);
        assertTrue(first.persistent(), "the pool has room: the event is the pool's");
        pool.give(first, true);
        for (int call = 2; call <= 20; call++) {
            Taken<Fake> t = pool.take(GPU0);
            assertSame(first.event(), t.event(), "call " + call + " reuses the acknowledged event");
            assertTrue(t.persistent());
            pool.give(t, true);
        }
        assertEquals(1, pool.created(), "twenty calls, one event");
        assertEquals(List.of(), ops.closed);
        assertEquals(1, pool.free());
        pool.closeAll();
        assertEquals(List.of(0), ops.closed, "closeAll closes the free event");
        assertEquals(0, pool.owned());
        assertEquals(0, ops.live());
    }

    @Test
    void aPooledEventReleasedWithoutTheAcknowledgementIsClosedNotReused() {
        Counting ops = new Counting();
        IpcEventPool<Fake> pool = new IpcEventPool<>(ops, 8);
        Taken<Fake> gone = pool.take(GPU0);
        pool.give(gone, false); // the worker is gone: it may still have waited on nothing, or on anything
        assertEquals(List.of(0), ops.closed);
        assertEquals(0, pool.owned(), "the closed event no longer counts against the bound");
        Taken<Fake> next = pool.take(GPU0);
        assertNotSame(gone.event(), next.event());
        assertEquals(2, pool.created());
        pool.give(next, true);
        pool.closeAll();
        assertEquals(0, ops.live());
    }

    @Test
    void eventsBeyondTheBoundAreTransientAndClosedOnRelease() {
        Counting ops = new Counting();
        IpcEventPool<Fake> pool = new IpcEventPool<>(ops, 8);
        List<Taken<Fake>> out = new ArrayList<>();
        for (int k = 0; k < 10; k++) {
            out.add(pool.take(GPU0));
        }
        assertEquals(8, out.stream().filter(Taken::persistent).count(), "the pool owns at most 8 events");
        assertFalse(out.get(8).persistent());
        assertFalse(out.get(9).persistent());
        assertEquals(8, pool.owned());
        out.forEach(t -> pool.give(t, true));
        assertEquals(List.of(8, 9), ops.closed, "the transient events are closed even when acknowledged");
        assertEquals(8, pool.free());
        for (int k = 0; k < 8; k++) {
            assertTrue(pool.take(GPU0).event().number < 8, "the pooled events are reused");
        }
        assertEquals(10, pool.created());
        assertFalse(pool.take(GPU0).persistent(), "all 8 out: the next is transient again");
        assertEquals(11, pool.created());
    }

    @Test
    void anEventIsReusedOnlyOnItsOwnDevice() {
        Counting ops = new Counting();
        IpcEventPool<Fake> pool = new IpcEventPool<>(ops, 8);
        Taken<Fake> on0 = pool.take(GPU0);
        pool.give(on0, true);
        Taken<Fake> on1 = pool.take(GPU1);
        assertNotSame(on0.event(), on1.event());
        assertEquals(GPU1, on1.event().device);
        assertEquals(GPU1, on1.device());
        assertSame(on0.event(), pool.take(GPU0).event());
        assertEquals(2, pool.created());
    }

    @Test
    void afterCloseAllEveryEventGivenBackIsClosedAndNothingIsPooledAgain() {
        Counting ops = new Counting();
        IpcEventPool<Fake> pool = new IpcEventPool<>(ops, 8);
        Taken<Fake> free = pool.take(GPU0);
        Taken<Fake> inFlight = pool.take(GPU0);
        pool.give(free, true);
        pool.closeAll();
        assertEquals(List.of(0), ops.closed, "the free event is closed at once");
        pool.give(inFlight, true); // acknowledged after the channel ended
        assertEquals(List.of(0, 1), ops.closed, "an event given back after closeAll is closed");
        Taken<Fake> late = pool.take(GPU0);
        assertFalse(late.persistent(), "a closed pool keeps nothing");
        pool.give(late, true);
        pool.closeAll(); // idempotent
        assertEquals(List.of(0, 1, 2), ops.closed);
        assertEquals(0, pool.owned());
        assertEquals(0, pool.free());
        assertEquals(0, ops.live());
    }

    @Test
    void anUnpooledExportMakesOneEventPerExportAndClosesItOnRelease() {
        Counting ops = new Counting();
        IpcEventPool<Fake> none = new IpcEventPool<>(ops, 0);
        for (int k = 0; k < 3; k++) {
            Taken<Fake> t = none.take(GPU0);
            assertFalse(t.persistent());
            none.give(t, true);
        }
        assertEquals(List.of(0, 1, 2), ops.closed);
        assertEquals(3, none.created());
        assertEquals(0, ops.live());
    }

    @Test
    void aFailedCreationTakesNothingFromTheBound() {
        Counting ops = new Counting();
        IpcEventPool<Fake> pool = new IpcEventPool<>(ops, 1);
        ops.fail = true;
        assertThrows(IllegalStateException.class, () -> pool.take(GPU0));
        assertEquals(0, pool.owned());
        assertEquals(0, pool.created());
        ops.fail = false;
        assertTrue(pool.take(GPU0).persistent(), "the bound's one place is still free");
        assertThrows(NullPointerException.class, () -> pool.take(null));
    }

    @Test
    void theCallHeaderSaysWhenItsEventIsPooledWithinTheLineBound() {
        String call = WorkerProtocol.call(3, WorkerProtocol.Payload.TENSOR, List.of(), List.of(0));
        assertSame(call, WorkerProtocol.withPersistentEvent(call, false));
        Map<String, Object> m = StrictJson.object(WorkerProtocol.withPersistentEvent(call, true),
                WorkerProtocol.MAX_HEADER_BYTES);
        assertEquals(Boolean.TRUE, m.get("persistent_event"));
        assertEquals(3L, m.get("seq"));
        assertEquals(List.of(0L), m.get("transient"));
        String hex = "0c".repeat(64);
        String longest = WorkerProtocol.withRetired(WorkerProtocol.withPersistentEvent(WorkerProtocol.call(
                Long.MAX_VALUE, WorkerProtocol.Payload.ARROW_BATCH, Collections.nCopies(WorkerProtocol.MAX_HANDLE_LIST,
                        hex), List.of(), IpcBatchDescriptor.MAX_POOLS), true),
                Collections.nCopies(WorkerProtocol.MAX_RETIRE_LIST, hex));
        assertTrue(longest.length() < WorkerProtocol.MAX_HEADER_BYTES, "the longest call header fits the line bound");
        assertEquals(Boolean.TRUE, StrictJson.object(longest, WorkerProtocol.MAX_HEADER_BYTES).get("persistent_event"));
    }
}
