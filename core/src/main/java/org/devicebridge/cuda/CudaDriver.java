package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.Native;

/**
 * Loads {@code libcuda.so.1} once, on first use, and translates {@code CUresult} codes into
 * {@link CudaException}s.
 *
 * <p>The generated bindings look symbols up through their class loader, so the driver must be loaded
 * into it with {@link System#load} before any of them is called (a binding called first would fail its
 * class initialisation for good). {@code System.load} needs an absolute path: {@code dlopen} finds the
 * library the way the dynamic linker does (LD_LIBRARY_PATH, ld.so.cache) and {@code dladdr} reports where
 * it came from.
 */
final class CudaDriver {
    private static final int RTLD_NOW = 2;
    private static final int RTLD_GLOBAL = 0x100;
    private static final String LIBRARY = "libcuda.so.1";

    private static final Status STATUS = load();

    private CudaDriver() {}

    record Status(boolean available, String reason, int driverVersion, Throwable cause) {}

    static Status status() {
        return STATUS;
    }

    /** Throws {@link CudaUnavailableException} unless the driver loaded and initialised. */
    static void require() {
        if (!STATUS.available) {
            throw new CudaUnavailableException(STATUS.reason, STATUS.cause);
        }
    }

    private static Status load() {
        String path;
        try {
            path = locate();
        } catch (RuntimeException e) {
            return new Status(false, e.getMessage(), 0, e);
        }
        if (path == null) {
            return new Status(false, LIBRARY + " was not found (no NVIDIA driver on this machine)", 0, null);
        }
        try {
            System.load(path);
        } catch (UnsatisfiedLinkError | SecurityException e) {
            return new Status(false, "cannot load " + path + ": " + e.getMessage(), 0, e);
        }
        try {
            int r = cuda_driver_h.cuInit(0);
            if (r != cuda_driver_h.CUDA_SUCCESS()) {
                String why = r == cuda_driver_h.CUDA_ERROR_STUB_LIBRARY()
                        ? path + " is the toolkit's stub library, not a driver"
                        : r == cuda_driver_h.CUDA_ERROR_NO_DEVICE()
                        ? "the driver found no CUDA device"
                        : "cuInit failed with " + name(r);
                return new Status(false, why, 0, null);
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment v = arena.allocate(JAVA_INT);
                int rv = cuda_driver_h.cuDriverGetVersion(v);
                return new Status(true, "loaded " + path, rv == 0 ? v.get(JAVA_INT, 0) : 0, null);
            }
        } catch (Throwable t) {
            return new Status(false, "cannot initialise the CUDA driver from " + path + ": " + t, 0, t);
        }
    }

    /** Absolute path of the driver library the dynamic linker would load, or null if there is none. */
    private static String locate() {
        MethodHandle dlopen = Native.libc("dlopen", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
        MethodHandle dlsym = Native.libc("dlsym", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        MethodHandle dladdr = Native.libc("dladdr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = (MemorySegment) dlopen.invokeExact(arena.allocateFrom(LIBRARY), RTLD_NOW | RTLD_GLOBAL);
            if (handle.equals(MemorySegment.NULL)) {
                return null;
            }
            MemorySegment sym = (MemorySegment) dlsym.invokeExact(handle, arena.allocateFrom("cuInit"));
            if (sym.equals(MemorySegment.NULL)) {
                throw new IllegalStateException(LIBRARY + " has no cuInit symbol");
            }
            // Dl_info { const char* dli_fname; void* dli_fbase; const char* dli_sname; void* dli_saddr; }
            MemorySegment info = arena.allocate(MemoryLayout.sequenceLayout(4, ADDRESS));
            int ok = (int) dladdr.invokeExact(sym, info);
            if (ok == 0) {
                throw new IllegalStateException("dladdr could not locate " + LIBRARY);
            }
            return Native.string(info.get(ADDRESS, 0));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("dlopen", t);
        }
    }

    /** Throws a {@link CudaException} for a failed call; does nothing for {@code CUDA_SUCCESS}. */
    static void check(String function, int result) {
        if (result != 0) {
            throw new CudaException(function, result, name(result), description(result));
        }
    }

    /** The {@code CUresult} name as the driver spells it, e.g. {@code CUDA_ERROR_INVALID_VALUE}. */
    static String name(int result) {
        return errorText(result, true);
    }

    static String description(int result) {
        return errorText(result, false);
    }

    private static String errorText(int result, boolean name) {
        if (STATUS != null && STATUS.available || STATUS == null) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ADDRESS);
                int r = name ? cuda_driver_h.cuGetErrorName(result, out) : cuda_driver_h.cuGetErrorString(result, out);
                if (r == 0) {
                    String s = Native.string(out.get(ADDRESS, 0));
                    if (s != null) {
                        return s;
                    }
                }
            } catch (Throwable ignored) {
                // fall through to the numeric form
            }
        }
        return name ? String.format(Locale.ROOT, "CUresult(%d)", result) : "unknown CUDA error";
    }
}
