package org.devicebridge;

/**
 * The JVM does not allow this library to call native code. The message names the exact flag to add.
 */
public final class NativeAccessException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    public NativeAccessException(String message, Throwable cause) {
        super(message, cause);
    }
}
