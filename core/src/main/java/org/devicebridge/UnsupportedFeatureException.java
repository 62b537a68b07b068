package org.devicebridge;

/**
 * The input is well formed but asks for something this library (or the library it bridges to, such as
 * Arrow Java) cannot represent exactly. The message names the field or type; nothing is silently
 * ignored or approximated.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class UnsupportedFeatureException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;
    /** Where in the structure the unsupported feature sits; may be empty. */
    private final String path;

    /**
     * An exception naming where the unsupported feature sits.
     *
     * @param path where in the structure, e.g. {@code children[1].format}; may be {@code null} or empty
     * @param message what is not supported
     */
    public UnsupportedFeatureException(String path, String message) {
        super(path == null || path.isEmpty() ? message : path + ": " + message);
        this.path = path == null ? "" : path;
    }

    /** {@return where in the structure the unsupported feature sits, e.g. {@code children[1].format}; may be empty} */
    public String path() {
        return path;
    }
}
