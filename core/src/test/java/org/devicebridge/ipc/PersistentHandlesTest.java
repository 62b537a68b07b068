package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;

/**
 * The channel's cache of the worker's persistent allocations and events, without a driver: a fake opening
 * counts its references and every open and close, and the result headers come from {@link WorkerProtocol#read}
 * as a worker writes them. A handle the worker marks persistent is opened once however many results name it,
 * one it does not is opened per result, a retired one is closed once no result holds it and confirmed once,
 * and a cleared cache holds nothing and keeps nothing more.
 */
class PersistentHandlesTest {
    private static final String HEX_A = "0a".repeat(64);
    private static final String HEX_B = "0b".repeat(64);

    /** An opened handle: its references; closed at 0. */
    private static final class Opened {
        final String hex;
        int refs = 1;

        Opened(String hex) {
            this.hex = hex;
        }
    }

    /** Fake operations that record every open and close. */
    private static final class Counting implements PersistentHandles.Ops<Opened> {
        final List<String> opened = new ArrayList<>();
        final List<String> closed = new ArrayList<>();
        final List<Opened> all = new ArrayList<>();

        @Override
        public Opened open(int device, byte[] handle) {
            Opened o = new Opened(WorkerProtocol.hex(handle));
            opened.add(o.hex);
            all.add(o);
            return o;
        }

        @Override
        public Opened retain(Opened o) {
            assertTrue(o.refs > 0, "retained after its last close");
            o.refs++;
            return o;
        }

        @Override
        public int references(Opened o) {
            return o.refs;
        }

        @Override
        public void close(Opened o) {
            assertTrue(o.refs > 0, "closed once too often");
            if (--o.refs == 0) {
                closed.add(o.hex);
            }
        }

        long live() {
            return all.stream().filter(o -> o.refs > 0).count();
        }
    }

    private static byte[] handle(String hex) {
        return java.util.HexFormat.of().parseHex(hex);
    }

    private static WorkerProtocol.Message result(long seq, String extra) {
        return WorkerProtocol.read("{\"devicebridge_worker\": 1, \"kind\": \"result\", \"seq\": " + seq
                + ", \"payload\": \"arrow_batch\", \"unmapped\": []" + extra + "}");
    }

    @Test
    void aHandleTheWorkerSendsAsPersistentTwiceIsOpenedOnceAndEachResultHoldsItsOwnReference() {
        Counting ops = new Counting();
        PersistentHandles<Opened> cache = new PersistentHandles<>(ops, 4);
        List<Opened> results = new ArrayList<>();
        for (long seq = 1; seq <= 2; seq++) {
            WorkerProtocol.Message h = result(seq, ", \"persistent\": [0], \"persistent_event\": true");
            assertEquals(List.of(0), h.persistent());
            assertTrue(h.persistentEvent());
            results.add(cache.acquire(0, handle(HEX_A), h.persistent().contains(0)));
        }
        assertEquals(List.of(HEX_A), ops.opened, "mapped once for two results");
        assertSame(results.get(0), results.get(1));
        assertEquals(3, results.get(0).refs, "the cache's reference and one per result");
        results.forEach(ops::close);
        assertEquals(List.of(), ops.closed, "closing the results drops only their references");
        assertEquals(1, cache.size());
        cache.clear();
        assertEquals(List.of(HEX_A), ops.closed, "clear unmaps what only the cache held");
        cache.clear(); // idempotent
        assertEquals(0, ops.live());
    }

    @Test
    void aHandleNotMarkedPersistentIsOpenedPerResultAndNeverKept() {
        Counting ops = new Counting();
        PersistentHandles<Opened> cache = new PersistentHandles<>(ops, 4);
        WorkerProtocol.Message h = result(1, "");
        assertEquals(List.of(), h.persistent());
        Opened first = cache.acquire(0, handle(HEX_B), h.persistent().contains(0));
        Opened second = cache.acquire(0, handle(HEX_B), false);
        assertNotSame(first, second);
        assertEquals(List.of(HEX_B, HEX_B), ops.opened);
        assertEquals(0, cache.size());
        ops.close(first);
        ops.close(second);
        assertEquals(2, cache.opens());
        assertEquals(0, ops.live());
    }

    @Test
    void persistentHandlesBeyondTheCapacityAreOpenedPerResult() {
        Counting ops = new Counting();
        PersistentHandles<Opened> cache = new PersistentHandles<>(ops, 1);
        Opened a = cache.acquire(0, handle(HEX_A), true);
        Opened b1 = cache.acquire(0, handle(HEX_B), true);
        Opened b2 = cache.acquire(0, handle(HEX_B), true);
        assertEquals(List.of(HEX_A, HEX_B, HEX_B), ops.opened, "the second handle does not fit: opened per result");
        assertEquals(1, cache.size());
        List.of(a, b1, b2).forEach(ops::close);
        cache.clear();
        assertEquals(0, ops.live());
    }

    @Test
    void aRetiredHandleIsClosedOnceNoResultHoldsItThenConfirmedOnce() {
        Counting ops = new Counting();
        PersistentHandles<Opened> cache = new PersistentHandles<>(ops, 4);
        Opened held = cache.acquire(0, handle(HEX_A), true);
        WorkerProtocol.Message h = result(2, ", \"retire\": [\"" + HEX_A + "\", \"" + HEX_B + "\"]");
        cache.retire(h.retire());
        assertEquals(List.of(HEX_B), cache.drainRetired(16), "never mapped here: confirmed at once");
        assertEquals(List.of(), ops.closed, "a result still holds the retired mapping");
        Opened again = cache.acquire(0, handle(HEX_A), false);
        assertSame(held, again, "a retiring handle named again shares the mapping: the driver opens a handle once");
        assertEquals(List.of(HEX_A), ops.opened);
        ops.close(again);
        assertEquals(List.of(), cache.drainRetired(16), "still held by a result");
        ops.close(held);
        assertEquals(List.of(HEX_A), cache.drainRetired(16));
        assertEquals(List.of(HEX_A), ops.closed);
        assertEquals(List.of(), cache.drainRetired(16), "confirmed once");
        assertEquals(0, cache.size());
        assertEquals(0, ops.live());
    }

    @Test
    void confirmationsAreHandedOutAtMostMaxAtATime() {
        Counting ops = new Counting();
        PersistentHandles<Opened> cache = new PersistentHandles<>(ops, 4);
        List<String> hex = new ArrayList<>();
        for (int k = 0; k < 20; k++) {
            char[] c = new char[128];
            Arrays.fill(c, Character.forDigit(k % 16, 16));
            hex.add(String.valueOf(c).substring(0, 126) + String.format(java.util.Locale.ROOT, "%02x", k));
        }
        cache.retire(hex);
        assertEquals(hex.subList(0, 16), cache.drainRetired(WorkerProtocol.MAX_RETIRE_LIST));
        assertEquals(hex.subList(16, 20), cache.drainRetired(WorkerProtocol.MAX_RETIRE_LIST));
    }

    @Test
    void aClearedCacheKeepsNothingMoreAndAnEventIsUsedUnderTheCacheThenKept() {
        Counting ops = new Counting();
        PersistentHandles<Opened> events = new PersistentHandles<>(ops, 4);
        List<Opened> seen = new ArrayList<>();
        events.use(0, handle(HEX_A), true, seen::add);
        events.use(0, handle(HEX_A), true, seen::add);
        assertEquals(List.of(HEX_A), ops.opened, "a persistent event is opened once");
        assertSame(seen.get(0), seen.get(1));
        events.use(0, handle(HEX_B), false, seen::add);
        assertEquals(List.of(HEX_B), ops.closed, "a transient event is closed after its use");
        events.clear();
        events.use(0, handle(HEX_A), true, seen::add);
        assertEquals(0, events.size(), "nothing is kept after clear");
        assertEquals(0, ops.live());
    }

    @Test
    void theResultHeadersPersistentRetireAndEventFieldsAreBounded() {
        assertEquals(List.of(), result(1, "").retire());
        assertTrue(!result(1, "").persistentEvent());
        assertEquals(List.of(3, 0), result(1, ", \"persistent\": [3, 0]").persistent());
        record Bad(String extra, Category category, String path) {}
        String hex = "\"" + HEX_A + "\"";
        List<Bad> bad = List.of(
                new Bad(", \"persistent\": [256]", Category.SIZE, "persistent[0]"),
                new Bad(", \"persistent\": [-1]", Category.SIZE, "persistent[0]"),
                new Bad(", \"persistent\": [1, 1]", Category.CONTENT, "persistent[1]"),
                new Bad(", \"persistent\": [\"0\"]", Category.FORMAT, "persistent[0]"),
                new Bad(", \"persistent\": 0", Category.FORMAT, "persistent"),
                new Bad(", \"persistent\": [" + String.join(", ", java.util.Collections.nCopies(257, "0")) + "]",
                        Category.SIZE, "persistent"),
                new Bad(", \"retire\": [" + String.join(", ", java.util.Collections.nCopies(17, hex)) + "]",
                        Category.SIZE, "retire"),
                new Bad(", \"retire\": [\"abcd\"]", Category.STRUCTURE, "retire[0]"),
                new Bad(", \"persistent_event\": 1", Category.FORMAT, "persistent_event"),
                new Bad(", \"persistent_event\": null", Category.FORMAT, "persistent_event"));
        for (Bad b : bad) {
            ValidationException e = assertThrows(ValidationException.class, () -> result(1, b.extra()), b.extra());
            assertEquals(b.category(), e.category(), b.extra() + ": " + e.getMessage());
            assertEquals(b.path(), e.path(), b.extra() + ": " + e.getMessage());
        }
    }

    @Test
    void aPersistentIndexBeyondTheDescriptorsHandlesIsRefusedBeforeAnythingIsMapped() {
        WorkerResults results = new WorkerResults();
        ValidationException e = assertThrows(ValidationException.class,
                () -> results.mappings(result(1, ", \"persistent\": [0, 2]"), 2));
        assertEquals(Category.STRUCTURE, e.category());
        assertEquals("persistent[1]", e.path());
        assertEquals(0, results.allocationOpens());
    }

    @Test
    void theCallHeaderCarriesRetiredHandlesWithinTheLineBound() {
        String call = WorkerProtocol.call(4, WorkerProtocol.Payload.ARROW_BATCH, List.of(), List.of());
        assertSame(call, WorkerProtocol.withRetired(call, List.of()));
        var m = StrictJson.object(WorkerProtocol.withRetired(call, List.of(HEX_A, HEX_B)), WorkerProtocol.MAX_HEADER_BYTES);
        assertEquals(List.of(HEX_A, HEX_B), m.get("retired"));
        assertEquals(4L, m.get("seq"));
        String longest = WorkerProtocol.withRetired(WorkerProtocol.call(Long.MAX_VALUE, WorkerProtocol.Payload.ARROW_BATCH,
                java.util.Collections.nCopies(WorkerProtocol.MAX_HANDLE_LIST, HEX_A), List.of()),
                java.util.Collections.nCopies(WorkerProtocol.MAX_RETIRE_LIST, HEX_B));
        assertTrue(longest.length() < WorkerProtocol.MAX_HEADER_BYTES, "the longest call header fits the line bound");
        assertThrows(IllegalArgumentException.class, () -> WorkerProtocol.withRetired(call,
                java.util.Collections.nCopies(WorkerProtocol.MAX_RETIRE_LIST + 1, HEX_A)));
    }
}
