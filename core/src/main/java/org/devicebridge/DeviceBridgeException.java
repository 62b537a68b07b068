package org.devicebridge;

/**
 * The root of every exception this library throws. Callers that want to catch "anything devicebridge
 * refused or failed to do" catch this type; the subclasses say why. Exceptions are immutable once thrown
 * and hold no native resources.
 */
public class DeviceBridgeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with a message.
     *
     * @param message what went wrong
     */
    public DeviceBridgeException(String message) {
        super(message);
    }

    /**
     * An exception with a message and a cause.
     *
     * @param message what went wrong
     * @param cause the underlying failure, or {@code null}
     */
    public DeviceBridgeException(String message, Throwable cause) {
        super(message, cause);
    }
}
