package org.devicebridge.python;

import org.devicebridge.DeviceBridgeException;

/**
 * A Python exception raised by code this library called, carried into Java. The Python error indicator
 * is cleared when this is thrown. The message reads {@code "[numpy.from_dlpack] BufferError: ..."}.
 */
public class PythonException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    private final String pythonType;
    private final String pythonMessage;

    public PythonException(String context, String pythonType, String pythonMessage) {
        super("[" + context + "] " + pythonType + (pythonMessage == null || pythonMessage.isEmpty() ? "" : ": " + pythonMessage));
        this.pythonType = pythonType;
        this.pythonMessage = pythonMessage;
    }

    /** The Python exception's class name, e.g. {@code BufferError}. */
    public String pythonType() {
        return pythonType;
    }

    /** {@code str()} of the Python exception. */
    public String pythonMessage() {
        return pythonMessage;
    }
}
