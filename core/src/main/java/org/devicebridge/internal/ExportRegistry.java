package org.devicebridge.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Per-export state of structs this library hands to native code, keyed by the value stored in the
 * struct's {@code private_data} / {@code manager_ctx}. A key is never 0 (NULL) and never reused, so a
 * stale or forged {@code private_data} finds nothing instead of someone else's state.
 *
 * <p>A single-key entry lives in slot {@code key % SLOTS} of a direct-mapped table when that slot is free (a
 * thread's keys are consecutive and map to its region's slots, so a slot is busy only while an export its
 * region made a block of keys earlier is still live), else in a map: registering and releasing a batch then boxes no
 * key and allocates no map node. A slot's key is published after its state and cleared before it, so a
 * lookup that reads the same key before and after reading the state has read that key's state (the key's
 * clearing is a compare-and-set, so one remover wins it; the rest is release/acquire ordering).
 *
 * @param <T> what one export holds (buffers, device memory references, the event)
 */
public final class ExportRegistry<T> {
    // A thread takes its keys in blocks of KEY_BLOCK from a region of its own (regions are dealt out in turn
    // to the threads that export), and every block of a region maps to the same KEY_BLOCK slots: a thread
    // that exports keeps registering into and removing from the same few cache lines, which no other thread
    // touches while there are no more exporting threads than regions. A key is (round * REGIONS + region) *
    // KEY_BLOCK + index, rounds counted per region from 1 (so no key is 0), so no key is handed out twice.
    private static final int KEY_BLOCK = 128;
    /** Slots of the direct-mapped table (a power of two); keys of the map's entries are never in a slot. */
    private static final int SLOTS = 4096;
    private static final int REGIONS = SLOTS / KEY_BLOCK;
    private static final AtomicLongArray ROUNDS = new AtomicLongArray(REGIONS);
    private static final AtomicInteger NEXT_REGION = new AtomicInteger();
    /** Runs too long for a block: keys from a space of their own, above every regional key. */
    private static final AtomicLong NEXT_RUN = new AtomicLong(1L << 62);
    private static final ThreadLocal<KeyBlock> KEYS = ThreadLocal.withInitial(KeyBlock::new);

    /** The keys [next, end) this thread may hand out, from its region. */
    private static class KeyBlockFields extends CacheLinePadding {
        final int region = Math.floorMod(NEXT_REGION.getAndIncrement(), REGIONS);
        long next;
        long end;
    }

    /** A {@link KeyBlockFields} padded after its fields too: its thread writes it on every export. */
    @SuppressWarnings("unused")
    private static final class KeyBlock extends KeyBlockFields {
        private long q0, q1, q2, q3, q4, q5, q6, q7;
    }
    private static final ThreadCounts OUTSTANDING = new ThreadCounts(1);
    private final AtomicReferenceArray<T> slotStates = new AtomicReferenceArray<>(SLOTS);
    /** The key of each slot's state, 0 while the slot is free or being filled or emptied. */
    private final AtomicLongArray slotKeys = new AtomicLongArray(SLOTS);
    /** Entries whose slot was busy, and multi-key entries. */
    private final ConcurrentHashMap<Long, T> entries = new ConcurrentHashMap<>();

    /** Stores {@code state}; returns the key to write into {@code private_data}. */
    public long register(T state) {
        long key = nextKeys(1);
        int slot = slot(key);
        if (slotStates.compareAndSet(slot, null, state)) {
            slotKeys.setRelease(slot, key); // after the state: a lookup that sees the key sees the state
        } else {
            entries.put(key, state);
        }
        OUTSTANDING.add(0, 1);
        return key;
    }

    private static int slot(long key) {
        return (int) key & (SLOTS - 1);
    }

    /** The state of {@code key} in its slot, or {@code null} when the slot holds another key (or none). */
    private T inSlot(long key) {
        int slot = slot(key);
        if (slotKeys.getAcquire(slot) != key) {
            return null;
        }
        T state = slotStates.getAcquire(slot);
        // the key is set after the state and cleared before it: still this key, so that was its state
        return slotKeys.getAcquire(slot) == key ? state : null;
    }

    /**
     * Stores {@code state} under {@code count} consecutive keys never handed out before (one export whose
     * structs carry more distinct {@code private_data} values than one key can tell apart) and counts it
     * as one export; returns the first key. {@link #remove(long, int)} with the same arguments removes it.
     *
     * @throws IllegalArgumentException if {@code count} is not positive
     */
    public long register(T state, int count) {
        if (count < 1) {
            throw new IllegalArgumentException("expected at least one key but found " + count);
        }
        if (count == 1) {
            return register(state);
        }
        long first = nextKeys(count);
        for (int i = 0; i < count; i++) {
            entries.put(first + i, state);
        }
        OUTSTANDING.add(0, 1);
        return first;
    }

    /** Removes and returns the state under {@code key}, or {@code null} if there is none (released twice, forged). */
    public T remove(long key) {
        int slot = slot(key);
        if (key != 0 && slotKeys.compareAndSet(slot, key, 0L)) { // one remover wins the key
            T state = slotStates.get(slot); // the winner's alone until it is emptied
            slotStates.setRelease(slot, null);
            OUTSTANDING.add(0, -1);
            return state;
        }
        T state = entries.remove(key);
        if (state != null) {
            OUTSTANDING.add(0, -1);
        }
        return state;
    }

    /**
     * Removes the state {@link #register(Object, int)} stored under {@code count} keys from {@code first};
     * returns it, or {@code null} if there was none under {@code first} (released twice, forged).
     */
    public T remove(long first, int count) {
        if (count == 1) {
            return remove(first);
        }
        T state = entries.remove(first);
        if (state == null) {
            return null;
        }
        for (int i = 1; i < count; i++) {
            entries.remove(first + i, state);
        }
        OUTSTANDING.add(0, -1);
        return state;
    }

    /**
     * {@code count} consecutive keys never handed out before: the next of this thread's block, a new block
     * of its region when it has too few left; a run of more than a quarter block gets a range of its own.
     */
    private static long nextKeys(int count) {
        if (count > KEY_BLOCK / 4) {
            return NEXT_RUN.getAndAdd(count);
        }
        KeyBlock block = KEYS.get();
        if (block.end - block.next < count) {
            long round = ROUNDS.incrementAndGet(block.region);
            block.next = (round * REGIONS + block.region) * KEY_BLOCK;
            block.end = block.next + KEY_BLOCK;
        }
        long first = block.next;
        block.next += count;
        return first;
    }

    /** The state under {@code key}, left in place, or {@code null}. */
    public T get(long key) {
        T state = inSlot(key);
        return state != null || key == 0 ? state : entries.get(key);
    }

    /** Exports of every registry in this JVM not released yet (the leak-check extension watches it). */
    public static long outstandingExports() {
        return OUTSTANDING.sum(0);
    }

    /** Exports not released yet (tests assert this returns to its baseline). */
    public int size() {
        int n = entries.size();
        for (int i = 0; i < SLOTS; i++) {
            n += slotKeys.get(i) != 0 ? 1 : 0;
        }
        return n;
    }
}
