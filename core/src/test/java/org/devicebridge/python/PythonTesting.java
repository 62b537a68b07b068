package org.devicebridge.python;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.util.OptionalLong;
import java.util.function.Function;
import org.devicebridge.dlpack.ImportedTensor;

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

    /**
     * For tests outside this package (the lifetime matrix): exports {@code struct} as a capsule of the
     * package-private {@code CapsuleKind} named {@code kind} and takes it straight back into {@code importer}.
     */
    public static <T> T throughCapsule(MemorySegment struct, String kind, Function<MemorySegment, T> importer) {
        CapsuleKind k = CapsuleKind.valueOf(kind);
        try (PyObjectRef capsule = Capsules.export(struct, k)) {
            return Capsules.take(capsule, k, importer);
        }
    }

    /**
     * For tests outside this package: takes {@code producer.__dlpack__()}'s capsule into {@code versioned}
     * or, for a pre-1.0 producer's legacy capsule, {@code legacy}.
     */
    public static ImportedTensor takeDLPack(PyObjectRef producer, Function<MemorySegment, ImportedTensor> versioned,
                                            Function<MemorySegment, ImportedTensor> legacy) {
        try (PyObjectRef capsule = PythonImport.dlpack(producer, OptionalLong.empty())) {
            CapsuleKind kind = Capsules.kindOf(capsule);
            return Capsules.take(capsule, kind, kind == CapsuleKind.DLTENSOR_VERSIONED ? versioned : legacy);
        }
    }
}
