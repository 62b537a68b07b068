package org.devicebridge.python;

import org.devicebridge.DeviceBridgeException;

/**
 * No usable CPython library: thrown by every entry point of {@code org.devicebridge.python} where
 * libpython3 could not be found, loaded or initialised. The message says why and what to set
 * ({@code DEVICEBRIDGE_PYTHON_LIBRARY}, {@code DEVICEBRIDGE_PYTHON}).
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public class PythonUnavailableException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception saying why CPython is not usable.
     *
     * @param message why, and what to set
     * @param cause the underlying failure, or {@code null}
     */
    public PythonUnavailableException(String message, Throwable cause) {
        super("Python not available: " + message, cause);
    }
}
