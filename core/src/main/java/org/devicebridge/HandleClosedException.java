package org.devicebridge;

/**
 * A handle (or a segment it handed out) was used after it was closed, or after its ownership moved to
 * a consumer.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class HandleClosedException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with a message.
     *
     * @param message what went wrong
     */
    public HandleClosedException(String message) {
        super(message);
    }

    /**
     * An exception with a message and a cause.
     *
     * @param message what went wrong
     * @param cause the underlying failure, or {@code null}
     */
    public HandleClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
