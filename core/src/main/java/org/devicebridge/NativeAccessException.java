package org.devicebridge;

/**
 * The JVM does not let this library call native code: it runs with {@code --illegal-native-access=deny}
 * (or a future JDK's default) and without the grant. Thrown by every public entry point that may reach
 * native code, on every call, before anything is allocated or taken over: the caller still owns whatever
 * it passed. The message names the exact flag: {@code --enable-native-access=ALL-UNNAMED} on the class
 * path, {@code --enable-native-access=org.devicebridge.core,org.devicebridge.generated} on the module path.
 *
 * <p>Immutable once thrown (safe to share between threads); it owns no native resources.
 */
public final class NativeAccessException extends DeviceBridgeException {
    private static final long serialVersionUID = 1L;

    /**
     * A native-access failure.
     *
     * @param message what was refused and the flag that grants it
     * @param cause the JDK's {@link IllegalCallerException}, or {@code null}
     */
    public NativeAccessException(String message, Throwable cause) {
        super(message, cause);
    }
}
