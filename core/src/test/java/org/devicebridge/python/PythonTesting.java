package org.devicebridge.python;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Skips a test, with the reason, where CPython or a Python library is missing. Set
 * {@code DEVICEBRIDGE_REQUIRE_PYTHON=1} (CI does, where it installs libpython3 and NumPy) to make a missing
 * libpython or NumPy a failure instead.
 */
public final class PythonTesting {
    private PythonTesting() {}

    private static boolean required(String module) {
        return "1".equals(System.getenv("DEVICEBRIDGE_REQUIRE_PYTHON")) && (module == null || module.equals("numpy"));
    }

    public static PythonRuntime runtime() {
        if (!PythonRuntime.isAvailable()) {
            if (required(null)) {
                fail(PythonRuntime.unavailableReason());
            }
            assumeTrue(false, PythonRuntime.unavailableReason());
        }
        return PythonRuntime.get();
    }

    /** The runtime, after checking that {@code import module} works in it. */
    public static PythonRuntime runtimeWith(String module) {
        PythonRuntime rt = runtime();
        if (!rt.canImport(module)) {
            String why = "Python module '" + module + "' is not installed for " + rt;
            if (required(module)) {
                fail(why);
            }
            assumeTrue(false, why);
        }
        return rt;
    }
}
