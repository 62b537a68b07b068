package org.devicebridge;

/**
 * The JVM does not allow this library to call native code. The message names the exact flag to add.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class NativeAccessException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with a message and a cause.
     *
     * @param message what went wrong
     * @param cause the underlying failure, or {@code null}
     */
    public NativeAccessException(String message, Throwable cause) {
        super(message, cause);
    }
}
