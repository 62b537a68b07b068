package org.devicebridge;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.internal.HandleCleaner;
import org.devicebridge.internal.HandleTracker;

/**
 * The one owning handle every struct kind specialises: an Arrow array, schema or stream imported from
 * native code, a DLPack tensor, an export, device memory, a CUDA stream or event, a Python object.
 *
 * <h2>Lifetime is an FFM arena</h2>
 * Every segment a handle hands out belongs to one {@link Arena}, and closing that arena is what releases
 * the handle's resources (an Arrow {@code release}, a DLPack {@code deleter}, a {@code cuMemFree}). So, by
 * construction, no segment handed out is accessible after the release, and a release never runs while a
 * native call holds one of the segments (FFM refuses to close an arena acquired by a downcall: then
 * {@link #close()} throws {@link HandleBusyException}, releases nothing, and a later {@code close()}
 * succeeds). Three ways to own that arena:
 * <ul>
 *   <li><b>Confined to its first user</b> (imports without an {@code Arena} argument): the first segment
 *       taken makes a confined arena owned by the thread that took it. Only that thread may take more
 *       segments, close the handle or hand it over; another thread gets {@link HandleBusyException} (its
 *       cause a {@link WrongThreadException}) and changes nothing. Closing a confined arena is no
 *       handshake, so this default costs what a caller's confined arena costs. A handle whose segments were never asked for has no arena and
 *       closes from any thread. The Cleaner (the library's own {@link java.lang.ref.Cleaner} without its
 *       global lock) releases a forgotten handle once neither it nor any segment it handed out is
 *       reachable (it watches the arena's scope, which every segment refers to), with a leak warning:
 *       nothing can read the memory then, so no arena close is needed from the Cleaner's thread.</li>
 *   <li><b>Shared, owned by the handle</b> (handles that are not imports: device memory, pinned buffers,
 *       Python references): a shared arena made on the first segment handed out, closed by
 *       {@link #close()} from any thread (a handshake with every thread, never one per small import). The
 *       Cleaner closes it the same way for a forgotten handle, retrying later while a native call holds a
 *       segment.</li>
 *   <li><b>The caller's</b> (imports given an {@code Arena}): the release is registered on the caller's
 *       arena and runs when the caller closes it, so one arena can hold many imports (one close for a whole
 *       batch), a shared one hands an import between threads, and an automatic one lets the GC decide.
 *       {@link #close()} on such a handle does nothing: the arena decides.</li>
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

    private final Lifecycle lifecycle;
    private final boolean ownsRelease; // false when the caller's arena owns the release
    private final boolean confinedToFirstUser;
    // The confined default scope: made by the first segment (under the lifecycle's monitor), then read by
    // its owner without a lock (its own write) and by other threads under the monitor. Never referred to by
    // the lifecycle: the Cleaner that watches the scope's reachability keeps the lifecycle reachable.
    private Arena confined;
    private Thread owner;
    private HandleCleaner.Registration scopeCleanable;

    /**
     * A handle that owns its arena (made lazily, shared): for handles that are not imports.
     *
     * @param description what this handle is, for leak reports and error messages (e.g. "imported ArrowArray")
     * @param action frees the handle's resources, at most once (an exception it throws is recorded and
     *     reported to the thread that closed the handle, never lost); must not capture this handle
     */
    protected NativeHandle(String description, AutoCloseable action) {
        this(description, action, null, false);
    }

    /**
     * An import's handle: its release runs when {@code arena} closes, or, with a {@code null} arena, it owns
     * a confined arena made by the first segment taken, on the thread that takes it.
     *
     * @param description what this handle is, for leak reports and error messages
     * @param action frees the handle's resources, at most once (an exception it throws is recorded and
     *     reported to the thread that closed the handle, never lost); must not capture this handle
     * @param arena the caller's arena whose closing releases this handle (the caller keeps owning the
     *     arena), or {@code null} for a handle that owns a confined arena
     * @throws HandleClosedException if {@code arena} is already closed
     * @throws WrongThreadException if {@code arena} is confined to another thread
     */
    protected NativeHandle(String description, AutoCloseable action, Arena arena) {
        this(description, action, arena, arena == null);
    }

    @SuppressWarnings("this-escape") // safe: the Cleaner keeps a phantom reference only; its action never sees this
    private NativeHandle(String description, AutoCloseable action, Arena arena, boolean confinedToFirstUser) {
        requireLibraryType(getClass());
        this.confinedToFirstUser = confinedToFirstUser;
        this.ownsRelease = arena == null;
        this.lifecycle = new Lifecycle(ownsRelease ? this : null, Objects.requireNonNull(description, "description"),
                Objects.requireNonNull(action, "action"), arena);
        if (ownsRelease) {
            HandleCleaner.track(lifecycle);
        } else {
            lifecycle.bindToCallerArena();
        }
        HandleTracker.opened();
    }

    /**
     * Releases what this handle owns, once: closes the handle's arena and runs the release. Later calls,
     * calls after the handle was consumed, and calls on a handle whose arena the caller owns do nothing
     * (that arena's {@code close()} releases).
     *
     * @throws HandleBusyException if a native call holds one of this handle's segments: nothing was
     *         released and the handle is still live; close it again after the call returned. Or, with a
     *         {@link WrongThreadException} as its cause, if the handle's segments are confined to another thread
     *         (an import without an {@code Arena} argument): nothing was released; close it on that thread
     */
    @Override
    public final void close() {
        if (!ownsRelease) {
            return;
        }
        if (confinedToFirstUser) {
            synchronized (lifecycle) {
                if (lifecycle.state != Lifecycle.LIVE) {
                    return;
                }
                closeConfined("close");
                lifecycle.releaseOnce();
            }
        } else {
            lifecycle.closeExplicitly();
        }
        lifecycle.unregister(); // released: the Cleaner has nothing left to do
    }

    /** Closes the confined scope, if one was made, on its owner; the caller holds the monitor and saw LIVE. */
    private void closeConfined(String what) {
        Arena a = confined;
        if (a == null) {
            return; // no segment was ever handed out: nothing to end, any thread may release
        }
        if (owner != Thread.currentThread()) {
            throw wrongThread("cannot " + what + " " + lifecycle.description + " on thread \""
                    + Thread.currentThread().getName() + "\": its segments are confined to thread \""
                    + owner.getName() + "\", which took the first one; " + what + " it there, or import it with the "
                    + "overload that takes an Arena and pass Arena.ofShared() to use it from several threads");
        }
        try {
            a.close();
        } catch (IllegalStateException held) {
            throw new HandleBusyException(lifecycle.description + " is in use by a native call that holds one of its "
                    + "segments: nothing was released; " + what + " it again after the call returns", held);
        }
        scopeCleanable.unregister();
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
        if (!confinedToFirstUser) {
            return lifecycle.segment(address, byteSize);
        }
        Arena a = confined;
        if (a == null || owner != Thread.currentThread() || lifecycle.state != Lifecycle.LIVE) {
            a = confinedScope();
        }
        return MemorySegment.ofAddress(address).reinterpret(byteSize, a, null);
    }

    /**
     * Checks that the calling thread may use this handle's segments: for a segment cached by a subclass.
     *
     * @throws HandleClosedException if the handle is no longer live
     * @throws HandleBusyException (its cause a {@link WrongThreadException}) if its segments are confined to
     *         another thread
     */
    protected final void ensureSegmentAccess() {
        if (confinedToFirstUser && (owner != Thread.currentThread() || lifecycle.state != Lifecycle.LIVE)) {
            confinedScope();
        } else {
            ensureLive();
        }
    }

    /** The confined scope, made on first use by the calling thread; the slow path of {@link #segment}. */
    private Arena confinedScope() {
        synchronized (lifecycle) {
            lifecycle.ensureLiveNow();
            Arena a = confined;
            if (a == null) {
                // Not counted as an arena of its own: the handle holds and closes it, so it can leak only with the
                // handle, which the handle count reports.
                a = Arena.ofConfined();
                // Watch the scope, which every segment refers to, instead of the handle: a forgotten import is
                // released only once no segment of it can be read any more.
                scopeCleanable = HandleCleaner.register(a.scope(), lifecycle, Lifecycle::releaseUnreachable);
                owner = Thread.currentThread();
                confined = a;
                lifecycle.unregister();
            } else if (owner != Thread.currentThread()) {
                throw wrongThread("cannot take a segment of " + lifecycle.description + " on thread \""
                        + Thread.currentThread().getName() + "\": its segments are confined to thread \""
                        + owner.getName() + "\", which took the first one; import it with the overload that takes "
                        + "an Arena and pass Arena.ofShared() to read it from several threads");
            }
            return a;
        }
    }

    /**
     * Moves ownership to a consumer: LIVE -> CONSUMED. Call this <em>before</em> any step of the hand-over
     * that can fail, as a PyCapsule is renamed before its consumer starts; from then on only the consumer
     * releases. Segments handed out earlier become unusable (the handle's arena is closed without
     * releasing).
     *
     * @throws HandleClosedException if the handle is not live
     * @throws HandleBusyException if a native call holds one of its segments, or (its cause a
     *         {@link WrongThreadException}) if they are confined to another thread; nothing changed
     * @throws UnsupportedFeatureException if the caller's arena owns the release (it cannot be handed over)
     */
    protected final void markConsumed() {
        if (!ownsRelease) {
            lifecycle.ensureLiveNow();
            throw new UnsupportedFeatureException("", lifecycle.description + " is bound to the caller's arena, "
                    + "whose close() releases it: import it without an arena to hand its ownership over");
        }
        if (confinedToFirstUser) {
            synchronized (lifecycle) {
                lifecycle.ensureLiveNow();
                closeConfined("hand over");
                lifecycle.state = Lifecycle.CONSUMED;
                HandleTracker.closed();
            }
        } else {
            lifecycle.consume();
        }
        lifecycle.unregister(); // consumed: the Cleaner has nothing left to do
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

    /** A refusal from another thread than the confined scope's owner: the JDK's own type says it, as the cause. */
    private static HandleBusyException wrongThread(String message) {
        return new HandleBusyException(message, new WrongThreadException(message));
    }
}
