package org.devicebridge.internal;

import java.util.Locale;

/**
 * The one platform devicebridge supports: Linux on x86-64. The generated struct layouts and C types come from
 * jextract on that platform (C {@code long} is 64 bits, {@code libcuda.so.1}, Linux's {@code mmap} and
 * {@code madvise} numbers), and the suite runs only there; elsewhere a layout could be wrong without a link
 * error to show it, so every entry point refuses first ({@code org.devicebridge.foreign.NativeCalls}), naming
 * what differs. Reads {@code os.name} and {@code os.arch} once. Thread-safe: the result is a constant.
 */
public final class Platform {
    /** What is supported, for messages and the self-check. */
    public static final String SUPPORTED = "Linux on x86-64 (os.name Linux, os.arch amd64 or x86_64)";

    private static final String UNSUPPORTED = unsupported(System.getProperty("os.name", ""),
            System.getProperty("os.arch", ""));

    private Platform() {}

    /**
     * Why {@code osName}/{@code osArch} is not supported, or {@code null} where it is: the decision, pure, so
     * that a test can ask about platforms it does not run on.
     *
     * @param osName the {@code os.name} property, e.g. {@code Linux}, {@code Mac OS X}, {@code Windows 11}
     * @param osArch the {@code os.arch} property, e.g. {@code amd64}, {@code aarch64}
     * @return {@code null}, or a message naming os.name, os.arch, what is missing and what is supported
     */
    public static String unsupported(String osName, String osArch) {
        boolean linux = osName.startsWith("Linux");
        String arch = osArch.toLowerCase(Locale.ROOT);
        boolean x86 = arch.equals("amd64") || arch.equals("x86_64");
        if (linux && x86) {
            return null;
        }
        String missing = !linux && !x86 ? "neither the operating system nor the CPU is"
                : !linux ? "the operating system is not" : "the CPU is not";
        return "devicebridge does not support os.name=" + osName + ", os.arch=" + osArch + ": " + missing
                + " what its generated struct layouts and native calls were built and tested for; supported: "
                + SUPPORTED;
    }

    /** {@return why this JVM's platform is not supported, or {@code null} where it is} */
    public static String unsupportedReason() {
        return UNSUPPORTED;
    }

    /** {@return {@code true} on the supported platform} */
    public static boolean supported() {
        return UNSUPPORTED == null;
    }
}
