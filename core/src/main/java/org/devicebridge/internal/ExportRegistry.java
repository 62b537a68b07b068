package org.devicebridge.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Per-export state of structs this library hands to native code, keyed by the value stored in the
 * struct's {@code private_data} / {@code manager_ctx}. A key is never 0 (NULL) and never reused, so a
 * stale or forged {@code private_data} finds nothing instead of someone else's state.
 *
 * @param <T> what one export holds (buffers, device memory references, the event)
 */
public final class ExportRegistry<T> {
    // Keys are handed to each thread in blocks, so exports on many threads never contend on one counter.
    private static final long KEY_BLOCK = 4096;
    private static final AtomicLong NEXT_BLOCK = new AtomicLong(1);
    private static final ThreadLocal<KeyBlock> KEYS = ThreadLocal.withInitial(KeyBlock::new);

    /** The keys [next, end) this thread may hand out. */
    private static final class KeyBlock {
        long next;
        long end;
    }
    private static final LongAdder OUTSTANDING = new LongAdder();
    private final ConcurrentHashMap<Long, T> entries = new ConcurrentHashMap<>();

    /** Stores {@code state}; returns the key to write into {@code private_data}. */
    public long register(T state) {
        long key = nextKeys(1);
        entries.put(key, state);
        OUTSTANDING.increment();
        return key;
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
        long first = nextKeys(count);
        for (int i = 0; i < count; i++) {
            entries.put(first + i, state);
        }
        OUTSTANDING.increment();
        return first;
    }

    /** Removes and returns the state under {@code key}, or {@code null} if there is none (released twice, forged). */
    public T remove(long key) {
        T state = entries.remove(key);
        if (state != null) {
            OUTSTANDING.decrement();
        }
        return state;
    }

    /**
     * Removes the state {@link #register(Object, int)} stored under {@code count} keys from {@code first};
     * returns it, or {@code null} if there was none under {@code first} (released twice, forged).
     */
    public T remove(long first, int count) {
        T state = entries.remove(first);
        if (state == null) {
            return null;
        }
        for (int i = 1; i < count; i++) {
            entries.remove(first + i, state);
        }
        OUTSTANDING.decrement();
        return state;
    }

    /**
     * {@code count} consecutive keys never handed out before: the next of this thread's block, a new block
     * when it has too few left; a run of more than a quarter block gets a range of its own.
     */
    private static long nextKeys(int count) {
        if (count > KEY_BLOCK / 4) {
            return NEXT_BLOCK.getAndAdd(count);
        }
        KeyBlock block = KEYS.get();
        if (block.end - block.next < count) {
            block.next = NEXT_BLOCK.getAndAdd(KEY_BLOCK);
            block.end = block.next + KEY_BLOCK;
        }
        long first = block.next;
        block.next += count;
        return first;
    }

    /** The state under {@code key}, left in place, or {@code null}. */
    public T get(long key) {
        return entries.get(key);
    }

    /** Exports of every registry in this JVM not released yet (the leak-check extension watches it). */
    public static long outstandingExports() {
        return OUTSTANDING.sum();
    }

    /** Exports not released yet (tests assert this returns to its baseline). */
    public int size() {
        return entries.size();
    }
}
