package org.devicebridge.python;

import org.devicebridge.DeviceBridgeException;

/**
 * A Python exception raised by code this library called, carried into Java. The Python error indicator
 * is cleared when this is thrown. The message reads {@code "[numpy.from_dlpack] BufferError: ..."}.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public class PythonException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    /** The Python exception's class name. */
    private final String pythonType;
    /** {@code str()} of the Python exception; may be {@code null} or empty. */
    private final String pythonMessage;

    /**
     * An exception carrying a Python exception into Java.
     *
     * @param context what this library was calling, e.g. {@code numpy.from_dlpack}
     * @param pythonType the Python exception's class name
     * @param pythonMessage {@code str()} of the Python exception; may be {@code null} or empty
     */
    public PythonException(String context, String pythonType, String pythonMessage) {
        super("[" + context + "] " + pythonType + (pythonMessage == null || pythonMessage.isEmpty() ? "" : ": " + pythonMessage));
        this.pythonType = pythonType;
        this.pythonMessage = pythonMessage;
    }

    /** {@return the Python exception's class name, e.g. {@code BufferError}} */
    public String pythonType() {
        return pythonType;
    }

    /** {@return {@code str()} of the Python exception} */
    public String pythonMessage() {
        return pythonMessage;
    }
}
