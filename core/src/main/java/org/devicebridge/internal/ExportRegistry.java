package org.devicebridge.internal;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per-export state of structs this library hands to native code, keyed by the value stored in the
 * struct's {@code private_data} / {@code manager_ctx}. A key is never 0 (NULL) and never reused, so a
 * stale or forged {@code private_data} finds nothing instead of someone else's state.
 *
 * @param <T> what one export holds (buffers, device memory references, the event)
 */
public final class ExportRegistry<T> {
    private static final AtomicLong NEXT_KEY = new AtomicLong(1);
    private static final AtomicLong OUTSTANDING = new AtomicLong();
    private final ConcurrentHashMap<Long, T> entries = new ConcurrentHashMap<>();

    /** Stores {@code state}; returns the key to write into {@code private_data}. */
    public long register(T state) {
        long key = NEXT_KEY.getAndIncrement();
        entries.put(key, state);
        OUTSTANDING.incrementAndGet();
        return key;
    }

    /** Removes and returns the state under {@code key}, or {@code null} if there is none (released twice, forged). */
    public T remove(long key) {
        T state = entries.remove(key);
        if (state != null) {
            OUTSTANDING.decrementAndGet();
        }
        return state;
    }

    /** The state under {@code key}, left in place, or {@code null}. */
    public T get(long key) {
        return entries.get(key);
    }

    /** Exports of every registry in this JVM not released yet (the leak-check extension watches it). */
    public static long outstandingExports() {
        return OUTSTANDING.get();
    }

    /** Exports not released yet (tests assert this returns to its baseline). */
    public int size() {
        return entries.size();
    }
}
