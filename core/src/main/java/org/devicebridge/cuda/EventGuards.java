package org.devicebridge.cuda;

import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import org.devicebridge.DeviceBridgeException;

/**
 * The one home of the rule for asynchronous calls: what a queued copy reads or writes (an export and the
 * buffers it retains, a reference to device memory, a pool's block) is held here beside a fence recorded
 * after that copy, and closed only once the fence completed. Nothing goes back to a pool, an allocator or a
 * producer's release earlier.
 *
 * <p>Entries are released in the order they were added, each once its own fence completed:
 * {@link #poll()} never blocks (one {@code cuEventQuery} per entry it looks at, and it stops at the first
 * that is not done: fences of one stream complete in the order they were recorded), {@link #drain()} waits
 * for each fence in turn. The owner polls whenever later work on it runs and drains at its close, so a
 * steady stream of asynchronous calls holds only the entries whose copies have not run yet.
 *
 * <p>Thread-safe: one lock guards the queue, another lets one thread at a time release (a poll or a drain
 * that finds another thread releasing waits for it, so a poll returns only once every entry it found done is
 * closed), so a fence is never queried after it went back to its pool. A release step may call back into the owner (the locks are re-entrant). Each entry is
 * released exactly once. A resource whose close throws is still taken off the queue (and its fence
 * returned); the first failure is thrown to that caller once every completed entry was released.
 */
final class EventGuards {
    /** A marker recorded after the guarded work; a pooled {@code CUevent} on the device, a fake in tests. */
    interface Fence {
        /** {@code true} once the work recorded before the fence finished; never blocks. */
        boolean isDone();

        /** Blocks until the work recorded before the fence finished. */
        void await();

        /** Gives the fence back (to its pool); never throws. */
        void close();
    }

    private record Entry(Fence fence, AutoCloseable resource) {}

    private final ArrayDeque<Entry> queue = new ArrayDeque<>();
    private final ReentrantLock releasing = new ReentrantLock();

    /**
     * Holds {@code resource} until {@code fence} completed, then releases every entry found done (this one
     * included). After a return or a throw both belong to this object: a failure here is one of an earlier
     * entry's release, never this entry's loss.
     */
    void add(Fence fence, AutoCloseable resource) {
        Objects.requireNonNull(fence, "fence");
        Objects.requireNonNull(resource, "resource");
        synchronized (queue) {
            queue.addLast(new Entry(fence, resource));
        }
        poll();
    }

    /** {@code true} if nothing is held; no driver call. */
    boolean isEmpty() {
        synchronized (queue) {
            return queue.isEmpty();
        }
    }

    /**
     * Releases, oldest first, every entry whose fence completed, up to the first one that has not; never waits
     * for a fence (only for another thread releasing).
     */
    void poll() {
        release(false);
    }

    /** Waits for every entry's fence in turn and releases it: afterwards nothing is held. */
    void drain() {
        release(true);
    }

    private void release(boolean wait) {
        // a poll waits for another thread's release (which only closes what is done, or, in a drain, waits for
        // fences a caller may not poll during anyway): after it returns, every entry whose fence it saw done is
        // closed, which is what a caller that waited for a later event relies on (Flight's Uploads.close)
        releasing.lock();
        try {
            releaseLocked(wait);
        } finally {
            releasing.unlock();
        }
    }

    private void releaseLocked(boolean wait) {
        Throwable failure = null;
        while (true) {
            Entry e;
            synchronized (queue) {
                e = queue.peekFirst();
            }
            if (e == null) {
                break;
            }
            boolean done;
            try {
                if (wait) {
                    e.fence().await();
                    done = true;
                } else {
                    done = e.fence().isDone();
                }
            } catch (RuntimeException | Error x) {
                // the device is in trouble: keep the entry (nothing may be freed under a copy that may still run)
                failure = add(failure, x);
                break;
            }
            if (!done) {
                break;
            }
            synchronized (queue) {
                queue.pollFirst(); // e: only the releasing thread takes entries off
            }
            try {
                e.resource().close();
            } catch (Exception x) {
                failure = add(failure, x);
            } catch (Error x) {
                failure = add(failure, x);
            } finally {
                e.fence().close();
            }
        }
        if (failure instanceof RuntimeException r) {
            throw r;
        }
        if (failure instanceof Error r) {
            throw r;
        }
        if (failure != null) {
            throw new DeviceBridgeException("releasing what an asynchronous call held failed",
                    failure);
        }
    }

    private static Throwable add(Throwable first, Throwable next) {
        if (first == null) {
            return next;
        }
        first.addSuppressed(next);
        return first;
    }
}
