package org.devicebridge;

import java.lang.ref.Cleaner;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.internal.HandleTracker;

/**
 * The one owning handle every struct kind specialises: an Arrow array or stream imported from native
 * code, a DLPack tensor, device memory, a CUDA stream or event.
 *
 * <p>State lives in one atomic field: {@link State#LIVE} moves once, either to {@link State#RELEASED}
 * (by {@link #close()}, which runs the release step exactly once) or to {@link State#CONSUMED} (when
 * ownership passes to a consumer, which from then on is the only one that releases). {@code close()} is
 * idempotent and thread-safe. A {@link Cleaner} is only a safety net: it releases a handle that became
 * unreachable while still live and logs a leak warning through {@link System.Logger}.
 *
 * <p>Subclasses pass a {@link ReleaseAction} that frees what the handle owns. The action must not refer
 * back to the handle (or the Cleaner could never run); keep the resources it frees in the action.
 */
public abstract class NativeHandle implements AutoCloseable {

    /** The life of a handle. */
    public enum State {
        /** Owns its resources. */
        LIVE,
        /** Ownership moved to a consumer; this handle will never release. */
        CONSUMED,
        /** Released: {@link #close()} ran (or the Cleaner did). */
        RELEASED
    }

    /** Frees what a handle owns. Runs at most once; an exception it throws is logged, never lost silently. */
    @FunctionalInterface
    public interface ReleaseAction {
        void release() throws Exception;
    }

    private static final int LIVE = 0;
    private static final int CONSUMED = 1;
    private static final int RELEASED = 2;

    private final Lifecycle lifecycle;
    private final Cleaner.Cleanable cleanable;

    /**
     * @param description what this handle is, for leak reports and error messages (e.g. "imported ArrowArray")
     * @param action frees the handle's resources; must not capture this handle
     */
    protected NativeHandle(String description, ReleaseAction action) {
        this.lifecycle = new Lifecycle(Objects.requireNonNull(description, "description"),
                Objects.requireNonNull(action, "action"));
        this.cleanable = HandleTracker.CLEANER.register(this, lifecycle);
        HandleTracker.opened();
    }

    /** Releases what this handle owns, once. Later calls, and calls after the handle was consumed, do nothing. */
    @Override
    public final void close() {
        // Runs the lifecycle's cleanup exactly once; it sees whether it was called by us or by the Cleaner.
        lifecycle.closedExplicitly = true;
        cleanable.clean();
    }

    /** The current state; a snapshot, since another thread may close the handle at any time. */
    public final State state() {
        return switch (lifecycle.state.get()) {
            case LIVE -> State.LIVE;
            case CONSUMED -> State.CONSUMED;
            default -> State.RELEASED;
        };
    }

    /** {@code true} while this handle still owns its resources. */
    public final boolean isLive() {
        return lifecycle.state.get() == LIVE;
    }

    /** What this handle is, as given at construction. */
    public final String description() {
        return lifecycle.description;
    }

    /** Throws {@link HandleClosedException} unless the handle is live. */
    protected final void ensureLive() {
        int s = lifecycle.state.get();
        if (s != LIVE) {
            throw new HandleClosedException(lifecycle.description + " is "
                    + (s == CONSUMED ? "consumed: its ownership moved to a consumer" : "closed"));
        }
    }

    /**
     * Moves ownership to a consumer: LIVE -> CONSUMED. Call this <em>before</em> any step of the hand-over
     * that can fail, as a PyCapsule is renamed before its consumer starts; from then on only the consumer
     * releases. Throws {@link HandleClosedException} if the handle is not live.
     */
    protected final void markConsumed() {
        if (!lifecycle.state.compareAndSet(LIVE, CONSUMED)) {
            ensureLive();
            throw new HandleClosedException(lifecycle.description + " changed state concurrently");
        }
        HandleTracker.closed();
        cleanable.clean(); // unregisters; the cleanup sees CONSUMED and frees nothing
    }

    @Override
    public String toString() {
        return lifecycle.description + " [" + state() + "]";
    }

    /** Shared between the handle and its Cleaner registration; must never refer to the handle. */
    private static final class Lifecycle implements Runnable {
        final String description;
        final ReleaseAction action;
        final AtomicInteger state = new AtomicInteger(LIVE);
        volatile boolean closedExplicitly;

        Lifecycle(String description, ReleaseAction action) {
            this.description = description;
            this.action = action;
        }

        @Override
        public void run() {
            if (!state.compareAndSet(LIVE, RELEASED)) {
                return; // consumed, or released already
            }
            HandleTracker.closed();
            if (!closedExplicitly) {
                HandleTracker.leaked(description);
            }
            try {
                action.release();
            } catch (Throwable t) {
                HandleTracker.releaseFailed(description, t);
            }
        }
    }
}
