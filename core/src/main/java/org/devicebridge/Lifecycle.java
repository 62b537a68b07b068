package org.devicebridge;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.HandleCleaner;
import org.devicebridge.internal.HandleTracker;

/**
 * The state of a {@link NativeHandle}, its shared or caller's arena and its release step; shared between
 * the handle, the Cleaner and the arena's cleanup, so it must never refer to the handle (nor to a confined
 * default scope, whose reachability a Cleaner registration watches: the handle keeps that). It is itself the
 * handle's Cleaner registration (a phantom reference to the handle, one object fewer per handle), tracked
 * only for a handle that owns its release. Its monitor guards every state change.
 */
final class Lifecycle extends HandleCleaner.Registration {
    static final int LIVE = 0;
    static final int CONSUMED = 1;
    static final int RELEASED = 2;

    final String description;
    private final AutoCloseable action;
    private final boolean callerArena;
    private volatile Arena arena; // the caller's, or ours once made; written under this monitor
    // written under this monitor; starts LIVE (0), not written here: a volatile store costs a fence
    volatile int state;

    /**
     * @param handle the handle, watched by the Cleaner once {@link HandleCleaner#track tracked}; {@code null}
     *     when {@code callerArena} owns the release
     */
    Lifecycle(Object handle, String description, AutoCloseable action, Arena callerArena) {
        super(handle);
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
            action.close();
        } catch (Throwable t) {
            HandleTracker.releaseFailed(description, t);
        }
    }

    /** The Cleaner's entry: the handle became unreachable (a no-op if it was released or consumed meanwhile). */
    @Override
    protected void clean() {
        synchronized (this) {
            if (state != LIVE) {
                return;
            }
            HandleTracker.leaked(description);
        }
        releaseForgotten();
    }

    /**
     * The Cleaner's entry for a confined scope that became unreachable: no segment of it exists any more,
     * so the release runs here without closing the arena (only its owner thread could).
     */
    void releaseUnreachable() {
        synchronized (this) {
            if (state != LIVE) {
                return;
            }
            HandleTracker.leaked(description);
            releaseOnce();
        }
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
