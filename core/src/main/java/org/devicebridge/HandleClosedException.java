package org.devicebridge;

/**
 * A handle (or a segment it handed out) was used after it was closed, or after its ownership moved to
 * a consumer.
 */
public final class HandleClosedException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    public HandleClosedException(String message) {
        super(message);
    }

    public HandleClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
