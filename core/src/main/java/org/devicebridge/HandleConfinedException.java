package org.devicebridge;

/**
 * A thread other than the one that owns a handle's segments asked for a segment, or tried to close the
 * handle or hand it over. An import made without an {@code Arena} argument keeps its segments in a
 * confined scope owned by the thread that first took one; only that thread may take more, close the handle
 * or hand it over. Nothing was released and nothing changed: close the handle on its owning thread, or,
 * to share an import between threads, pass a shared arena to the import overload that takes one
 * ({@code Arena.ofShared()}: its close is then yours to make, from any thread).
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class HandleConfinedException extends HandleBusyException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with a message.
     *
     * @param message what went wrong
     */
    public HandleConfinedException(String message) {
        super(message, null);
    }
}
