package org.devicebridge.foreign;

import org.devicebridge.DeviceBridgeException;
import org.devicebridge.NativeAccessException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.internal.NativeAccess;
import org.devicebridge.internal.Platform;

/**
 * The one helper that turns what a native call threw into this library's exceptions. {@code internal}
 * stays below the public packages and throws only JDK exceptions; every public package calls
 * {@link #rethrow} around its {@code invokeExact} calls (and the generated bindings' calls) instead.
 */
public final class NativeCalls {
    private NativeCalls() {}

    /**
     * Whatever {@code invokeExact} (or a call into {@code internal}) threw, as a library exception: errors
     * are rethrown unchanged, a {@link DeviceBridgeException} is returned as it is, a missing native-access
     * grant becomes a {@link NativeAccessException} naming the exact flag, anything else a
     * {@link DeviceBridgeException} naming {@code function}.
     */
    public static RuntimeException rethrow(String function, Throwable t) {
        if (t instanceof Error e) {
            throw e;
        }
        if (t instanceof DeviceBridgeException d) {
            return d;
        }
        if (t instanceof IllegalCallerException) {
            return nativeAccessDenied(t);
        }
        return new DeviceBridgeException("native call " + function + " failed: " + t, t);
    }

    /** A {@link NativeAccessException} whose message names the exact {@code --enable-native-access} flag. */
    public static NativeAccessException nativeAccessDenied(Throwable cause) {
        return new NativeAccessException(NativeAccess.message(), cause);
    }

    /**
     * The first line of every public entry point that may reach native code: throws
     * {@link UnsupportedFeatureException} on a platform other than Linux x86-64 (naming os.name and os.arch),
     * and {@link NativeAccessException} (naming the exact flag) where the JVM denies native access, before any
     * generated class initialises, so that every call, not only the first, gets that typed error. Costs two
     * reads of constants once the probes have run.
     *
     * @throws UnsupportedFeatureException on an unsupported platform ({@link Platform})
     * @throws NativeAccessException where native access is denied
     */
    public static void requireNativeAccess() {
        String unsupported = Platform.unsupportedReason();
        if (unsupported != null) {
            throw new UnsupportedFeatureException(null, unsupported);
        }
        IllegalCallerException denied = NativeAccess.denied();
        if (denied != null) {
            throw new NativeAccessException(denied.getMessage(), denied.getCause());
        }
    }
}
