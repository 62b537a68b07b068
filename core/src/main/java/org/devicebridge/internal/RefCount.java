package org.devicebridge.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The library's one reference count, for whatever several owners share: device memory held by a batch
 * and its exports, the nodes of one exported struct tree (a consumer may release them in any order), the
 * Arrow buffers of one import. It starts at the number of owners the creator hands out (1 by default);
 * {@link #retain()} fails once the count reached 0, so a freed resource can never be revived;
 * {@link #release()} says whether this call freed it. Packed in one atomic int, as Lucene's is.
 */
public final class RefCount {
    private final AtomicInteger count;
    private final Runnable free;

    /** One reference, the creator's; {@code free} runs once, when the count drops to 0. */
    public RefCount(Runnable free) {
        this(1, free);
    }

    /**
     * {@code owners} references at once (for example one per node of a struct tree); {@code free} runs
     * once, when the count drops to 0.
     *
     * @throws IllegalArgumentException if {@code owners} is not positive
     */
    public RefCount(int owners, Runnable free) {
        if (owners < 1) {
            throw new IllegalArgumentException("a reference count starts at 1 or more, not " + owners);
        }
        this.count = new AtomicInteger(owners);
        this.free = java.util.Objects.requireNonNull(free, "free");
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

    /**
     * Drops a reference; frees the resource and returns {@code true} when it was the last one.
     *
     * @throws IllegalStateException if the count was already 0 (released more often than retained)
     */
    public boolean release() {
        int c = count.decrementAndGet();
        if (c == 0) {
            free.run();
            return true;
        }
        if (c < 0) {
            count.incrementAndGet();
            throw new IllegalStateException("reference count released more often than retained");
        }
        return false;
    }

    /** References left (0 once freed); a snapshot. */
    public int count() {
        return Math.max(0, count.get());
    }
}
