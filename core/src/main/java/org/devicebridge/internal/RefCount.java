package org.devicebridge.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A reference count for memory that several exports share (device buffers, pinned staging). It starts
 * at 1 for the creator; {@link #retain()} fails once the count reached 0, so a released resource can
 * never be revived; {@link #release()} says whether this call freed it.
 */
public final class RefCount {
    private final AtomicInteger count = new AtomicInteger(1);
    private final Runnable free;

    public RefCount(Runnable free) {
        this.free = free;
    }

    /** Adds a reference; returns {@code false} (and adds nothing) if the resource is already freed. */
    public boolean retain() {
        for (;;) {
            int c = count.get();
            if (c <= 0) {
                return false;
            }
            if (count.compareAndSet(c, c + 1)) {
                return true;
            }
        }
    }

    /** Drops a reference; frees the resource and returns {@code true} when it was the last one. */
    public boolean release() {
        int c = count.decrementAndGet();
        if (c == 0) {
            free.run();
            return true;
        }
        if (c < 0) {
            count.incrementAndGet();
            throw new org.devicebridge.HandleClosedException("reference count released more often than retained");
        }
        return false;
    }

    public int count() {
        return Math.max(0, count.get());
    }
}
