package org.devicebridge;

/**
 * A handle could not be closed (or handed over) because something else holds it: a native call holds
 * one of the segments it handed out, or its segments belong to another thread (then the cause is a
 * {@link WrongThreadException}, as FFM's own for a confined arena). Nothing was released: the handle is
 * still live, its segments still readable, and a later {@code close()} (once the call returned, or on the
 * thread that owns the segments) releases it. This is
 * what FFM's {@code Arena.close()} refusal ("acquired by a client") becomes in this library.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class HandleBusyException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with a message and a cause.
     *
     * @param message what went wrong
     * @param cause the underlying failure, or {@code null}
     */
    public HandleBusyException(String message, Throwable cause) {
        super(message, cause);
    }
}
