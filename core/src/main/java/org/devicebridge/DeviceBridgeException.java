package org.devicebridge;

/**
 * The root of every exception this library throws. Callers that want to catch "anything devicebridge
 * refused or failed to do" catch this type; the subclasses say why.
 */
public class DeviceBridgeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DeviceBridgeException(String message) {
        super(message);
    }

    public DeviceBridgeException(String message, Throwable cause) {
        super(message, cause);
    }
}
