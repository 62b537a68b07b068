package org.devicebridge.selfcheck;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaDeviceProperties;
import org.devicebridge.internal.NativeAccess;
import org.devicebridge.internal.Platform;

/**
 * The self-check main job: prints what this JVM can do with devicebridge (JDK, native access, the CUDA
 * driver and devices) and runs the round trips of each interface, reporting each as PASS or FAIL.
 * Exit status 0 when every check that can run here passed. Not part of the exported API: the package is
 * not exported, and the launcher runs it by name.
 *
 * <p>{@code mvn -B -q -DskipTests -Pself-check verify}, or
 * {@code java --enable-native-access=ALL-UNNAMED -cp ... org.devicebridge.selfcheck.SelfCheck}, or on the
 * module path {@code java --enable-native-access=org.devicebridge.core,org.devicebridge.generated -m
 * org.devicebridge.core/org.devicebridge.selfcheck.SelfCheck}.
 */
public final class SelfCheck {
    private final PrintStream out;
    private int failures;

    private SelfCheck(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        SelfCheck check = new SelfCheck(System.out);
        check.run();
        System.exit(check.failures == 0 ? 0 : 1);
    }

    private void run() {
        out.println("devicebridge self-check");
        line("JDK", Runtime.version() + " (" + System.getProperty("java.vendor") + ", " + System.getProperty("java.home") + ")");
        line("platform", System.getProperty("os.name") + " " + System.getProperty("os.arch")
                + (Platform.supported() ? " (supported)" : ": UNSUPPORTED: " + Platform.unsupportedReason()));
        line("native access", nativeAccess());
        if (!Platform.supported() || !NativeAccess.granted()) {
            // every section would only repeat the same typed refusal: one failure, the reason above, no trace
            failures++;
            out.println("self-check: FAILED before any round trip: " + (Platform.supported() ? NativeAccess.message()
                    : Platform.unsupportedReason()));
            return;
        }
        section("CUDA", this::cuda);
        for (SelfCheckSection s : sections()) {
            out.println(s.name());
            section(s.name(), () -> {
                try {
                    s.run(report);
                } catch (RuntimeException | Error e) {
                    throw e;
                } catch (Exception e) {
                    throw new DeviceBridgeException(e.toString(), e);
                }
            });
        }
        out.println(failures == 0 ? "self-check: all checks passed" : "self-check: " + failures + " check(s) FAILED");
    }

    /** The feature areas' sections, in the order they print. */
    private static List<SelfCheckSection> sections() {
        List<SelfCheckSection> sections = new java.util.ArrayList<>();
        // With Arrow Java: round trips through every interface; without it (DLPack/CUDA-only users, the
        // module-path check in CI): the import of a hand-made struct into the low-level view.
        sections.add(arrowJavaPresent() ? new ArrowSelfCheck() : new ArrowImportSelfCheck());
        sections.add(new DLPackSelfCheck());
        sections.add(new CudaSelfCheckSection());
        if (arrowJavaPresent()) {
            sections.add(new CudaArrowSelfCheck());
        }
        sections.add(new PythonSelfCheck());
        return sections;
    }

    /** Arrow Java is an optional dependency: its sections run only where it is on the class path. */
    private static boolean arrowJavaPresent() {
        try {
            Class.forName("org.apache.arrow.vector.VectorSchemaRoot", false, SelfCheck.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private final SelfCheckSection.Report report = new SelfCheckSection.Report() {
        @Override
        public void line(String key, String value) {
            SelfCheck.this.line(key, value);
        }

        @Override
        public void check(String name, boolean passed, String detail) {
            if (!passed) {
                failures++;
            }
            SelfCheck.this.line(name, (passed ? "PASS " : "FAIL ") + detail);
        }
    };

    /** Whether both of the library's modules may call native code, and the exact flag if not. */
    static String nativeAccess() {
        if (!NativeAccess.granted()) {
            return "DENIED (every entry point throws NativeAccessException): " + NativeAccess.message();
        }
        Module core = SelfCheck.class.getModule();
        Module generated = org.devicebridge.generated.cuda.cuda_driver_h.class.getModule();
        if (!core.isNamed()) {
            return core.isNativeAccessEnabled() ? "enabled for the class path"
                    : "NOT enabled: add --enable-native-access=ALL-UNNAMED";
        }
        if (core.isNativeAccessEnabled() && generated.isNativeAccessEnabled()) {
            return "enabled for " + core.getName() + " and " + generated.getName();
        }
        return "NOT enabled for " + (core.isNativeAccessEnabled() ? "" : core.getName() + " ")
                + (generated.isNativeAccessEnabled() ? "" : generated.getName() + " ")
                + "(bindings then fail to initialise): add --enable-native-access=" + core.getName() + "," + generated.getName();
    }

    private void cuda() {
        if (!Cuda.isAvailable()) {
            line("CUDA driver", "not available: " + Cuda.unavailableReason());
            return;
        }
        line("CUDA driver", Cuda.driverVersionString() + " (" + Cuda.unavailableReason() + ")");
        for (CudaDeviceProperties d : Cuda.devices()) {
            line("device " + d.device().ordinal(), d.toString());
        }
    }

    private void section(String name, Runnable body) {
        try {
            body.run();
        } catch (RuntimeException | Error e) {
            failures++;
            line(name, "FAIL: " + e);
        }
    }

    private void line(String key, String value) {
        out.println(String.format(Locale.ROOT, "  %-16s %s", key + ":", value));
    }
}
