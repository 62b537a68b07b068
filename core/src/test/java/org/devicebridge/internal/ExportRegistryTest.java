package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * The export registry: a key finds its state until removed, once; stale and forged keys find nothing, whether
 * the state sits in a slot of the direct-mapped table or in the map that takes busy slots.
 */
class ExportRegistryTest {

    @Test
    void aKeyFindsItsStateUntilRemovedOnce() {
        ExportRegistry<Object> registry = new ExportRegistry<>();
        long outstanding = ExportRegistry.outstandingExports();
        Object state = new Object();
        long key = registry.register(state);
        assertNotEquals(0, key);
        assertSame(state, registry.get(key));
        assertEquals(1, registry.size());
        assertEquals(outstanding + 1, ExportRegistry.outstandingExports());
        assertSame(state, registry.remove(key));
        assertNull(registry.remove(key), "a second remove finds nothing");
        assertNull(registry.get(key), "a stale key finds nothing");
        assertNull(registry.get(0), "NULL is never a key");
        assertEquals(0, registry.size());
        assertEquals(outstanding, ExportRegistry.outstandingExports());
    }

    @Test
    void moreLiveExportsThanSlotsAllStayFoundAndRemovable() {
        ExportRegistry<Object> registry = new ExportRegistry<>();
        long outstanding = ExportRegistry.outstandingExports();
        int n = 10_000; // more than the table's slots: later keys meet busy slots and go to the map
        List<Object> states = new ArrayList<>();
        long[] keys = new long[n];
        Set<Long> distinct = new HashSet<>();
        for (int i = 0; i < n; i++) {
            states.add(new Object());
            keys[i] = registry.register(states.get(i));
            distinct.add(keys[i]);
        }
        assertEquals(n, distinct.size(), "keys are never handed out twice");
        assertEquals(n, registry.size());
        for (int i = 0; i < n; i++) {
            assertSame(states.get(i), registry.get(keys[i]), "key " + i);
        }
        for (int i = n - 1; i >= 0; i -= 2) { // every other one, from the map's end first
            assertSame(states.get(i), registry.remove(keys[i]));
        }
        for (int i = 0; i < n; i++) {
            if ((n - 1 - i) % 2 == 0) {
                assertNull(registry.get(keys[i]), "removed key " + i);
            } else {
                assertSame(states.get(i), registry.get(keys[i]), "live key " + i);
            }
        }
        Object late = new Object();
        long lateKey = registry.register(late); // may take a slot freed above
        assertSame(late, registry.get(lateKey));
        assertSame(late, registry.remove(lateKey));
        for (int i = 0; i < n; i++) {
            if ((n - 1 - i) % 2 != 0) {
                assertSame(states.get(i), registry.remove(keys[i]));
            }
        }
        assertEquals(0, registry.size());
        assertEquals(outstanding, ExportRegistry.outstandingExports());
    }

    @Test
    void multiKeyEntriesAreFoundUnderEveryKeyAndRemovedOnce() {
        ExportRegistry<Object> registry = new ExportRegistry<>();
        Object state = new Object();
        long first = registry.register(state, 3);
        for (int i = 0; i < 3; i++) {
            assertSame(state, registry.get(first + i));
        }
        assertSame(state, registry.remove(first, 3));
        assertNull(registry.remove(first, 3));
        assertNull(registry.get(first + 1));
        assertSame(state, registry.remove(registry.register(state, 1), 1), "one key: the table's path");
    }

    @Test
    void concurrentRemovesOfOneKeyReturnTheStateOnce() throws InterruptedException {
        ExportRegistry<Object> registry = new ExportRegistry<>();
        for (int round = 0; round < 200; round++) {
            Object state = new Object();
            long key = registry.register(state);
            ConcurrentLinkedQueue<Object> got = new ConcurrentLinkedQueue<>();
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    Object s = registry.remove(key);
                    if (s != null) {
                        got.add(s);
                    }
                }));
            }
            start.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertEquals(List.of(state), List.copyOf(got), "round " + round);
        }
        assertEquals(0, registry.size());
    }
}
