package org.devicebridge.internal;

import java.lang.foreign.MemorySegment;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.generated.dlpack.dlpack_h;

/**
 * Whether the JVM lets devicebridge call native code: one probe, run once, that every public entry point
 * consults (through {@code org.devicebridge.foreign.NativeCalls#requireNativeAccess}) before any generated
 * class, or any class of this package with native state, initialises.
 *
 * <p>Why before: the generated bindings make restricted calls in their static initialisers (a target layout
 * for {@code C_POINTER}, downcall handles), and so does {@link Native}. Where native access is denied
 * ({@code --illegal-native-access=deny} without {@code --enable-native-access}), such an initialiser fails
 * once with an {@link ExceptionInInitializerError} and the class is then unusable for the life of the JVM
 * ({@link NoClassDefFoundError} on every later use). The probe fails instead, in a class whose own
 * initialiser cannot fail, so every call gets the same typed error.
 *
 * <p>The probe: a restricted call made by this module decides for it; the generated module is asked
 * {@link Module#isNativeAccessEnabled()}; only where this module holds a grant and the generated one does
 * not (a module path with half the flag) does the JVM's mode (deny, or only warn) matter, and then a
 * generated class is initialised to see. Thread-safe: the result is a constant.
 */
public final class NativeAccess {
    /** The flag that grants native access where devicebridge runs on the class path. */
    public static final String CLASS_PATH_FLAG = "--enable-native-access=ALL-UNNAMED";
    /** The flag that grants native access where devicebridge's two modules are on the module path. */
    public static final String MODULE_PATH_FLAG = "--enable-native-access=org.devicebridge.core,org.devicebridge.generated";

    /** {@code null} where native calls work; otherwise the failure to report, naming the exact flag. */
    private static final IllegalCallerException DENIED = probe();

    private NativeAccess() {}

    /**
     * Why this library may not call native code, or {@code null} where it may: an
     * {@link IllegalCallerException} whose message names the exact flag (the same instance on every call).
     */
    public static IllegalCallerException denied() {
        return DENIED;
    }

    /**
     * Throws a fresh {@link IllegalCallerException} naming the exact flag where native access is denied, on every
     * call: the guard in front of every holder of handles in this package, so that none of them fails to
     * initialise (which would last the JVM's life).
     */
    public static void require() {
        if (DENIED != null) {
            throw new IllegalCallerException(DENIED.getMessage(), DENIED.getCause());
        }
    }

    /** {@code true} where native calls work (granted, or not granted but only warned about). */
    public static boolean granted() {
        return DENIED == null;
    }

    @SuppressWarnings("restricted") // the probe itself: a restricted call, made once
    private static IllegalCallerException probe() {
        Module core = NativeAccess.class.getModule();
        Module generated = ArrowSchema.class.getModule(); // a class literal loads; it does not initialise
        try {
            MemorySegment.NULL.reinterpret(0); // a restricted method: throws where this module is denied
        } catch (IllegalCallerException e) {
            return deniedException(e);
        }
        if (generated == core || generated.isNativeAccessEnabled() || !core.isNativeAccessEnabled()) {
            // one module; or both granted; or this one passed with no grant, so the JVM only warns (or allows)
            return null;
        }
        try {
            // its superclass's static initialiser makes a restricted call on behalf of the generated module
            Class.forName(dlpack_h.class.getName(), true, dlpack_h.class.getClassLoader());
            return null;
        } catch (ExceptionInInitializerError e) {
            if (e.getCause() instanceof IllegalCallerException denied) {
                return deniedException(denied);
            }
            throw e;
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the generated bindings are incomplete", e);
        }
    }

    private static IllegalCallerException deniedException(Throwable cause) {
        return new IllegalCallerException(message(), cause);
    }

    /**
     * The message for a missing native-access grant: the exact flag for the way this JVM loaded devicebridge
     * (class path, module path, or a mix), then the flag for the other way.
     */
    public static String message() {
        Module core = NativeAccess.class.getModule();
        Module generated = ArrowSchema.class.getModule();
        String here = core.isNamed() ? core.getName() : "ALL-UNNAMED";
        if (generated != core) {
            String g = generated.isNamed() ? generated.getName() : "ALL-UNNAMED";
            here = here.equals(g) ? here : here + "," + g;
        }
        String flag = "--enable-native-access=" + here;
        String where = core.isNamed() ? "on the module path" : "on the class path";
        String other = core.isNamed() ? "on the class path: " + CLASS_PATH_FLAG : "on the module path: " + MODULE_PATH_FLAG;
        return "native access is not enabled for devicebridge: this JVM loaded it " + where + ", so start the JVM with "
                + flag + " (" + other + ")";
    }
}
