package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.LibraryThreads;
import org.devicebridge.internal.NativeAccess;
import org.devicebridge.internal.Platform;

/**
 * Entry point to the CUDA driver. The driver is loaded lazily, at the first call of any method here;
 * on a machine without one, {@link #isAvailable()} is {@code false}, {@link #unavailableReason()} says
 * why, and every other CUDA entry point throws {@link CudaUnavailableException}. Nothing else in the
 * library needs CUDA.
 *
 * <p>Stateless and thread-safe (the driver is loaded once, lazily, on the first call); it owns nothing
 * the caller must close.
 */
public final class Cuda {
    private Cuda() {}

    /**
     * {@return {@code true} if native access is enabled, {@code libcuda.so.1} loaded, {@code cuInit} succeeded
     * and at least one device exists} Never throws.
     */
    public static boolean isAvailable() {
        return Platform.supported() && NativeAccess.granted() && CudaDriver.status().available();
    }

    /**
     * {@return why CUDA is unavailable (an unsupported platform; native access not enabled, naming the flag; no
     * driver; no device), or a
     * line saying where the driver was loaded from}
     */
    public static String unavailableReason() {
        return !Platform.supported() ? Platform.unsupportedReason()
                : NativeAccess.granted() ? CudaDriver.status().reason() : NativeAccess.message();
    }

    /**
     * Throws {@link CudaUnavailableException} (with the reason of {@link #unavailableReason()}) unless the
     * driver loaded and initialised: the one "require CUDA" check, for entry points that must fail before
     * any other step (an import still releases its input first).
     */
    public static void require() {
        requireNativeAccess();
        CudaDriver.require();
    }

    /** {@return the driver's CUDA version, e.g. 13000 for 13.0} */
    public static int driverVersion() {
        requireNativeAccess();
        CudaDriver.require();
        return CudaDriver.status().driverVersion();
    }

    /** {@return number of CUDA devices} */
    public static int deviceCount() {
        requireNativeAccess();
        CudaDriver.require();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment n = arena.allocate(JAVA_INT);
            CudaDriver.check("cuDeviceGetCount", cuda_driver_h.cuDeviceGetCount(n));
            return n.get(JAVA_INT, 0);
        }
    }

    /**
     * {@return what {@code device} is: name, compute capability, memory}
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @throws org.devicebridge.InvalidArgumentException for a device of another kind
     * @throws CudaException {@code CUDA_ERROR_INVALID_DEVICE} for an ordinal the driver does not have
     */
    public static CudaDeviceProperties properties(Device device) {
        requireCudaDevice(device);
        requireNativeAccess();
        CudaContext.checkDevice(device.ordinal());
        return CudaDeviceProperties.get(device.ordinal());
    }

    /** {@return the properties of every device, in ordinal order} */
    public static List<CudaDeviceProperties> devices() {
        requireNativeAccess();
        int n = deviceCount();
        List<CudaDeviceProperties> all = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            all.add(CudaDeviceProperties.get(i));
        }
        return List.copyOf(all);
    }

    /** Throws {@link org.devicebridge.InvalidArgumentException} unless {@code device} is a CUDA device. */
    static void requireCudaDevice(Device device) {
        Objects.requireNonNull(device, "device");
        if (device.kind() != DeviceKind.CUDA) {
            throw new InvalidArgumentException("device", "expected a CUDA device but found " + device);
        }
    }

    /**
     * Free and total memory of a device, as {@code cuMemGetInfo} reports them (the free figure counts every
     * process's allocations and the driver's own reservations).
     *
     * @param freeBytes memory not allocated
     * @param totalBytes all memory the driver manages on the device
     */
    public record MemoryInfo(long freeBytes, long totalBytes) {}

    /**
     * Free and total memory of {@code device} ({@code cuMemGetInfo}).
     *
     * @param device the CUDA device ordinal
     * @return free and total bytes at the time of the call
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     */
    public static MemoryInfo memoryInfo(int device) {
        requireNativeAccess();
        long saved = CudaContext.enter(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            CudaDriver.check("cuMemGetInfo_v2", cuda_driver_h.cuMemGetInfo_v2(free, total));
            return new MemoryInfo(free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0));
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Blocks until all work on {@code device} (in its primary context, every stream) finished
     * ({@code cuCtxSynchronize}).
     *
     * @param device the CUDA device ordinal
     */
    public static void synchronize(int device) {
        requireNativeAccess();
        long saved = CudaContext.enter(device);
        try {
            CudaDriver.check("cuCtxSynchronize", cuda_driver_h.cuCtxSynchronize());
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Throws a {@link CudaException} naming {@code function} and the {@code CUresult} unless {@code result} is
     * {@code CUDA_SUCCESS}: the library's one translation of driver results, for code that calls the driver
     * directly (benchmark baselines, tests, native glue).
     *
     * @param function the driver function's name
     * @param result the driver's result code
     */
    public static void check(String function, int result) {
        requireNativeAccess();
        CudaDriver.check(function, result);
    }

    /** {@return the driver version formatted as major.minor} */
    public static String driverVersionString() {
        requireNativeAccess();
        int v = driverVersion();
        return (v / 1000) + "." + (v % 1000) / 10;
    }

    /**
     * Sizes the library's worker threads, which help the caller with large host loops (staging copies of
     * transfers, offset and bitmap scans of validation): {@code threads} daemon threads, or 0 for none (every
     * such loop then runs on the caller's thread alone). Without this call the system property
     * {@code devicebridge.workerThreads} decides, else the machine's cores less one (at most 15). Takes effect
     * only before the workers' first use; needs no CUDA driver.
     *
     * @param threads how many, {@code >= 0}
     * @throws InvalidArgumentException if {@code threads < 0}
     * @throws DeviceBridgeException if the workers are already in use (nothing changed)
     */
    public static void configureWorkers(int threads) {
        if (threads < 0) {
            throw new InvalidArgumentException("threads", "expected a thread count >= 0 but found " + threads);
        }
        try {
            LibraryThreads.configure(threads);
        } catch (IllegalStateException inUse) {
            throw new DeviceBridgeException(inUse.getMessage(), inUse);
        }
    }

    /**
     * Replaces the library's worker threads (see {@link #configureWorkers(int)}) by the caller's
     * {@code executor}: each helper of a loop is one {@code execute} of a task that claims parts of it; the
     * caller's thread always works too, so a loop finishes even if the executor runs nothing. The library
     * never shuts {@code executor} down, and a task it was given holds the loop only until the loop is done.
     * Takes effect only before the workers' first use; needs no CUDA driver.
     *
     * @param executor the caller's executor; the caller keeps owning it
     * @throws DeviceBridgeException if the workers are already in use (nothing changed)
     */
    public static void configureWorkers(Executor executor) {
        Objects.requireNonNull(executor, "executor");
        try {
            LibraryThreads.configure(executor);
        } catch (IllegalStateException inUse) {
            throw new DeviceBridgeException(inUse.getMessage(), inUse);
        }
    }
}
