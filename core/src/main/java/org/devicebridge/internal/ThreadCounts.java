package org.devicebridge.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counters that every import, export and handle adds to, from any number of threads at once, and that only
 * tests and leak reports sum. Each platform thread adds to slots of its own (a plain store, no atomic
 * operation, no cache line shared with another thread); a sum visits every thread's slots. A
 * {@link java.util.concurrent.atomic.LongAdder} does not fit: its cells are shared by threads whose probes
 * collide, so 16 threads each adding on every import keep moving those lines between cores.
 *
 * <p>Virtual threads, which may be many and short-lived, add atomically to one shared array. The slots of a
 * platform thread that ended are folded into a shared total when the next thread registers or a sum is taken.
 * A sum is exact once the threads that added have stopped adding (as a test reads it); while they run it is
 * a recent value.
 */
public final class ThreadCounts {
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
    /** Longs before and after a thread's slots: two threads' slots never share a cache line. */
    private static final int PAD = 8;

    private final int slots;
    private final AtomicLongArray shared;
    /** Slots of ended threads; guarded by {@code owned}. */
    private final long[] ended;
    /** Every platform thread's slots; guarded by itself. */
    private final List<Owned> owned = new ArrayList<>();
    private final ThreadLocal<long[]> own = ThreadLocal.withInitial(this::register);

    private record Owned(Thread thread, long[] counts) {}

    /** Counters of {@code slots} slots, each starting at 0. */
    public ThreadCounts(int slots) {
        if (slots < 1) {
            throw new IllegalArgumentException("expected at least one slot but found " + slots);
        }
        this.slots = slots;
        this.shared = new AtomicLongArray(slots);
        this.ended = new long[slots];
    }

    /** Adds {@code delta} to {@code slot}. */
    public void add(int slot, long delta) {
        if (Thread.currentThread().isVirtual()) {
            shared.getAndAdd(slot, delta);
            return;
        }
        long[] c = own.get();
        int i = PAD + slot;
        // only this thread writes its slots: a plain read of its own last write, then an untorn store
        SLOT.setRelease(c, i, c[i] + delta);
    }

    /** {@return the sum of {@code slot} over every thread} */
    public long sum(int slot) {
        synchronized (owned) {
            foldEnded();
            long s = ended[slot] + shared.get(slot);
            for (Owned o : owned) {
                s += (long) SLOT.getAcquire(o.counts, PAD + slot);
            }
            return s;
        }
    }

    private long[] register() {
        long[] c = new long[PAD + slots + PAD];
        synchronized (owned) {
            foldEnded();
            owned.add(new Owned(Thread.currentThread(), c));
        }
        return c;
    }

    /** Holds {@code owned}; an ended thread's stores are visible to whoever saw it ended. */
    private void foldEnded() {
        for (Iterator<Owned> it = owned.iterator(); it.hasNext(); ) {
            Owned o = it.next();
            if (!o.thread.isAlive()) {
                for (int s = 0; s < slots; s++) {
                    ended[s] += o.counts[PAD + s];
                }
                it.remove();
            }
        }
    }
}
