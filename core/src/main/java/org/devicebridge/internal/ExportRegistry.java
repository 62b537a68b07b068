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
        long key = nextKey();
        entries.put(key, state);
        OUTSTANDING.increment();
        return key;
    }

    /** Removes and returns the state under {@code key}, or {@code null} if there is none (released twice, forged). */
    public T remove(long key) {
        T state = entries.remove(key);
        if (state != null) {
            OUTSTANDING.decrement();
        }
        return state;
    }

    /** A key never handed out before: the next of this thread's block, a new block when it is used up. */
    private static long nextKey() {
        KeyBlock block = KEYS.get();
        if (block.next == block.end) {
            block.next = NEXT_BLOCK.getAndAdd(KEY_BLOCK);
            block.end = block.next + KEY_BLOCK;
        }
        return block.next++;
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
