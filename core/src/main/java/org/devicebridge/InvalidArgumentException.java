package org.devicebridge;

/**
 * An argument the caller passed is out of range or does not fit the others: a negative size, a range
 * outside a buffer, a stream of another device, a heap segment where native memory is needed. The method
 * did nothing: the caller still owns everything it passed. (A malformed foreign struct is a
 * {@link ValidationException} instead; a {@code null} where none is allowed stays a
 * {@link NullPointerException}.)
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class InvalidArgumentException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    /** The offending parameter's name; may be empty. */
    private final String parameter;

    /**
     * An exception naming the offending parameter.
     *
     * @param parameter the parameter's name as the method declares it, e.g. {@code bytes} or
     *                  {@code destinations[2]}; may be empty
     * @param message   what is wrong, in the form "expected X but found Y" where possible
     */
    public InvalidArgumentException(String parameter, String message) {
        super(parameter == null || parameter.isEmpty() ? message : parameter + ": " + message);
        this.parameter = parameter == null ? "" : parameter;
    }

    /** {@return the offending parameter's name; may be empty} */
    public String parameter() {
        return parameter;
    }
}
