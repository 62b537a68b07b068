package org.devicebridge;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.HandleCleaner;
import org.devicebridge.internal.HandleTracker;

/**
 * The one owning handle every struct kind specialises: an Arrow array, schema or stream imported from
 * native code, a DLPack tensor, an export, device memory, a CUDA stream or event, a Python object.
 *
 * <h2>Lifetime is an FFM arena</h2>
 * Every segment a handle hands out belongs to one {@link Arena}, and closing that arena is what releases
 * the handle's resources: the release step (an Arrow {@code release}, a DLPack {@code deleter}, a
 * {@code cuMemFree}) runs as the arena's cleanup. So, by construction, no segment handed out is
 * accessible after the release, and a release never runs while a native call holds one of the segments
 * (FFM refuses to close an arena acquired by a downcall). Two ways to own that arena:
 * <ul>
 *   <li><b>The handle owns it</b> (imports without an {@code Arena} argument): a shared arena made on the
 *       first segment handed out. {@link #close()} closes it from any thread; if a native call holds a
 *       segment, {@code close()} throws {@link HandleBusyException}, releases nothing, and a later
 *       {@code close()} succeeds. A handle whose segments were never asked for closes without any arena
 *       (a shared arena's close is a handshake with every thread, so a handle used only by address never
 *       pays for one). A Cleaner (the library's own: a {@link java.lang.ref.Cleaner} without its global
 *       lock) is the safety net for a forgotten handle: it logs the leak and closes the arena the same way,
 *       retrying later while a native call holds a segment.</li>
 *   <li><b>The caller owns it</b> (imports given an {@code Arena}): the release is registered on the
 *       caller's arena and runs when the caller closes it, so one arena can hold many imports (one close
 *       for a whole batch), a confined arena costs no handshake, and an automatic arena lets the GC
 *       decide. {@link #close()} on such a handle does nothing: the arena decides.</li>
 * </ul>
 *
 * <p>State lives in one field: {@link State#LIVE} moves once, either to {@link State#RELEASED} or to
 * {@link State#CONSUMED} (ownership moved to a consumer, which from then on is the only one that
 * releases). {@code close()} is idempotent and thread-safe. Only this library's own types extend this
 * class; a subclass elsewhere is refused at construction.
 */
public abstract class NativeHandle implements AutoCloseable {

    /** The life of a handle. */
    public enum State {
        /** Owns its resources. */
        LIVE,
        /** Ownership moved to a consumer; this handle will never release. */
        CONSUMED,
        /** Released: {@link #close()} ran, its arena closed, or the Cleaner released it. */
        RELEASED
    }

    /** Frees what a handle owns. Runs at most once; an exception it throws is recorded, never lost. */
    @FunctionalInterface
    public interface ReleaseAction {
        /**
         * Frees the resources.
         *
         * @throws Exception any failure; the handle records it and reports it to the thread that closed it
         */
        void release() throws Exception;
    }

    private final Lifecycle lifecycle;
    private final HandleCleaner.Registration cleanable; // null when the caller's arena owns the release

    /**
     * A handle that owns its arena (made lazily, shared).
     *
     * @param description what this handle is, for leak reports and error messages (e.g. "imported ArrowArray")
     * @param action frees the handle's resources; must not capture this handle
     */
    protected NativeHandle(String description, ReleaseAction action) {
        this(description, action, null);
    }

    /**
     * A handle whose release runs when {@code arena} closes, or, with a {@code null} arena, one that owns
     * its arena as {@link #NativeHandle(String, ReleaseAction)} does.
     *
     * @param description what this handle is, for leak reports and error messages
     * @param action frees the handle's resources; must not capture this handle
     * @param arena the caller's arena whose closing releases this handle (the caller keeps owning the
     *     arena), or {@code null} for a handle that owns its arena
     * @throws HandleClosedException if {@code arena} is already closed
     * @throws WrongThreadException if {@code arena} is confined to another thread
     */
    @SuppressWarnings("this-escape") // safe: the Cleaner keeps a phantom reference only; its action never sees this
    protected NativeHandle(String description, ReleaseAction action, Arena arena) {
        requireLibraryType(getClass());
        this.lifecycle = new Lifecycle(Objects.requireNonNull(description, "description"),
                Objects.requireNonNull(action, "action"), arena);
        if (arena == null) {
            this.cleanable = HandleCleaner.register(this, lifecycle);
        } else {
            this.cleanable = null;
            lifecycle.bindToCallerArena();
        }
        HandleTracker.opened();
    }

    /**
     * Releases what this handle owns, once: closes the handle's arena, whose cleanup runs the release.
     * Later calls, calls after the handle was consumed, and calls on a handle whose arena the caller owns
     * do nothing (that arena's {@code close()} releases).
     *
     * @throws HandleBusyException if a native call holds one of this handle's segments: nothing was
     *         released and the handle is still live; close it again after the call returned
     */
    @Override
    public final void close() {
        if (cleanable == null) {
            return;
        }
        lifecycle.closeExplicitly();
        cleanable.unregister(); // released: the Cleaner has nothing left to do
    }

    /** {@return the current state; a snapshot, since another thread may close the handle at any time} */
    public final State state() {
        return switch (lifecycle.state) {
            case Lifecycle.LIVE -> State.LIVE;
            case Lifecycle.CONSUMED -> State.CONSUMED;
            default -> State.RELEASED;
        };
    }

    /** {@return {@code true} while this handle still owns its resources} */
    public final boolean isLive() {
        return lifecycle.state == Lifecycle.LIVE;
    }

    /** {@return what this handle is, as given at construction} */
    public final String description() {
        return lifecycle.description;
    }

    /** Throws {@link HandleClosedException} unless the handle is live. */
    protected final void ensureLive() {
        int s = lifecycle.state;
        if (s != Lifecycle.LIVE) {
            throw lifecycle.notLive(s);
        }
    }

    /**
     * A segment of {@code byteSize} bytes at {@code address} in this handle's arena: unusable once the
     * handle is released, and holding it in a native call keeps the release from running. The size must
     * come from validated metadata (exact arithmetic).
     *
     * @param address where the memory starts (a native address the handle owns or keeps alive)
     * @param byteSize its size in bytes
     * @return a segment scoped to this handle
     * @throws HandleClosedException if the handle is no longer live
     */
    protected final MemorySegment segment(long address, long byteSize) {
        return lifecycle.segment(address, byteSize);
    }

    /**
     * Moves ownership to a consumer: LIVE -> CONSUMED. Call this <em>before</em> any step of the hand-over
     * that can fail, as a PyCapsule is renamed before its consumer starts; from then on only the consumer
     * releases. Segments handed out earlier become unusable (the handle's arena is closed without
     * releasing).
     *
     * @throws HandleClosedException if the handle is not live
     * @throws HandleBusyException if a native call holds one of its segments (nothing changed)
     * @throws UnsupportedFeatureException if the caller's arena owns the release (it cannot be handed over)
     */
    protected final void markConsumed() {
        if (cleanable == null) {
            lifecycle.ensureLiveNow();
            throw new UnsupportedFeatureException("", lifecycle.description + " is bound to the caller's arena, "
                    + "whose close() releases it: import it without an arena to hand its ownership over");
        }
        lifecycle.consume();
        cleanable.unregister(); // consumed: the Cleaner has nothing left to do
    }

    @Override
    public String toString() {
        return lifecycle.description + " [" + state() + "]";
    }

    private static final Module LIBRARY_MODULE = NativeHandle.class.getModule();
    private static final ClassLoader LIBRARY_LOADER = NativeHandle.class.getClassLoader();

    /** The package of the last handle type accepted (Class caches it, interned: compared by identity first). */
    private static String acceptedPackage = "";

    // runs for every handle made: field reads and an identity comparison in the common case
    private static void requireLibraryType(Class<?> type) {
        String pkg = type.getPackageName();
        if (type.getModule() != LIBRARY_MODULE || type.getClassLoader() != LIBRARY_LOADER
                || (pkg != acceptedPackage && !pkg.startsWith("org.devicebridge"))) {
            throw new UnsupportedFeatureException("", "expected a devicebridge handle type but found "
                    + type.getName() + ": NativeHandle is not meant to be extended outside the library");
        }
        if (pkg != acceptedPackage) {
            acceptedPackage = pkg; // a benign race: whatever it holds was accepted; written only on a change
        }
    }

    /**
     * The state, the arena and the release step; shared between the handle, its Cleaner registration and
     * the arena's cleanup, so it must never refer to the handle.
     */
    static final class Lifecycle implements Runnable {
        static final int LIVE = 0;
        static final int CONSUMED = 1;
        static final int RELEASED = 2;

        final String description;
        private final ReleaseAction action;
        private final boolean callerArena;
        private volatile Arena arena; // the caller's, or ours once made; written under this monitor
        // written under this monitor; starts LIVE (0), not written here: a volatile store costs a fence
        volatile int state;

        Lifecycle(String description, ReleaseAction action, Arena callerArena) {
            this.description = description;
            this.action = action;
            this.callerArena = callerArena != null;
            if (callerArena != null) { // a handle-owned arena is made later, if ever
                this.arena = callerArena;
            }
        }

        void bindToCallerArena() {
            try {
                MemorySegment.NULL.reinterpret(arena, ignored -> releaseOnce());
            } catch (IllegalStateException closed) {
                throw new HandleClosedException("cannot bind a " + description + " to an arena that is closed", closed);
            }
        }

        MemorySegment segment(long address, long byteSize) {
            Arena a = arena;
            if (a == null || state != LIVE) {
                a = ownArena();
            }
            try {
                return MemorySegment.ofAddress(address).reinterpret(byteSize, a, null);
            } catch (IllegalStateException closed) {
                throw new HandleClosedException(description + " is closed", closed);
            }
        }

        private synchronized Arena ownArena() {
            ensureLiveNow();
            if (arena == null) {
                Arena a = Allocations.track(Arena.ofShared());
                MemorySegment.NULL.reinterpret(a, ignored -> releaseOnce());
                arena = a;
            }
            return arena;
        }

        void ensureLiveNow() {
            int s = state;
            if (s != LIVE) {
                throw notLive(s);
            }
        }

        HandleClosedException notLive(int s) {
            return new HandleClosedException(description + " is "
                    + (s == CONSUMED ? "consumed: its ownership moved to a consumer" : "closed"));
        }

        /** close(): the handle's arena closes and its cleanup releases; or, with no arena, the release runs here. */
        synchronized void closeExplicitly() {
            if (state != LIVE) {
                return;
            }
            closeArenaOrRelease();
        }

        /** Caller holds the monitor and saw LIVE. */
        private void closeArenaOrRelease() {
            Arena a = arena;
            if (a == null) {
                releaseOnce();
                return;
            }
            try {
                a.close(); // its cleanup is releaseOnce()
            } catch (IllegalStateException held) {
                throw new HandleBusyException(description + " is in use by a native call that holds one of its "
                        + "segments: nothing was released; close it again after the call returns", held);
            }
        }

        synchronized void consume() {
            ensureLiveNow();
            state = CONSUMED; // before closing: the arena's cleanup must not release
            Arena a = arena;
            if (a != null) {
                try {
                    a.close();
                } catch (IllegalStateException held) {
                    state = LIVE;
                    throw new HandleBusyException(description + " is in use by a native call that holds one of its "
                            + "segments: ownership was not handed over", held);
                }
            }
            HandleTracker.closed();
        }

        /** The release step, exactly once, whoever gets here first (close, the arena's cleanup, the Cleaner). */
        synchronized void releaseOnce() {
            if (state != LIVE) {
                return;
            }
            state = RELEASED;
            HandleTracker.closed();
            try {
                action.release();
            } catch (Throwable t) {
                HandleTracker.releaseFailed(description, t);
            }
        }

        /** The Cleaner's entry: the handle became unreachable (a no-op if it was released or consumed meanwhile). */
        @Override
        public void run() {
            synchronized (this) {
                if (state != LIVE) {
                    return;
                }
                HandleTracker.leaked(description);
            }
            releaseForgotten();
        }

        /** Releases a forgotten handle; while a native call still holds a segment, tries again later. */
        void releaseForgotten() {
            synchronized (this) {
                if (state != LIVE) {
                    return;
                }
                try {
                    closeArenaOrRelease();
                    return;
                } catch (HandleBusyException busy) {
                    // fall through: a native call holds a segment of this forgotten handle
                }
            }
            DeferredRelease.schedule(this::releaseForgotten);
        }
    }
}
