package org.devicebridge.python;

import org.devicebridge.foreign.NativeCalls;

/**
 * The GIL held by the current thread ({@code PyGILState_Ensure}) until {@link #close()}
 * ({@code PyGILState_Release}). Re-entrant; must be closed on the thread that took it, in reverse order
 * of taking. {@code close()} is idempotent. Take it with {@link PythonRuntime#gil()}.
 *
 * <p>Not thread-safe by design: the thread that took it owns it and must close it.
 */
final class Gil implements AutoCloseable {
    private final int state;
    private final Thread owner;
    private boolean closed;

    private Gil(int state) {
        this.state = state;
        this.owner = Thread.currentThread();
    }

    static Gil acquire() {
        PythonRuntime.get();
        return ensure();
    }

    /** For code that already knows the runtime is initialised (avoids the recursion in initialisation). */
    static Gil ensure() {
        try {
            return new Gil((int) PyC.PyGILState_Ensure.invokeExact());
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyGILState_Ensure", t);
        }
    }

    /**
     * Releases this take of the GIL.
     *
     * @throws org.devicebridge.DeviceBridgeException if called from another thread
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new org.devicebridge.DeviceBridgeException("the GIL must be released by the thread that took it (" + owner.getName() + ")");
        }
        closed = true;
        try {
            PyC.PyGILState_Release.invokeExact(state);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyGILState_Release", t);
        }
    }
}
