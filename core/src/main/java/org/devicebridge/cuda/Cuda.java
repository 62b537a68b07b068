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
     * Free memory of {@code device} now ({@code cuMemGetInfo}): memory not allocated by any process nor
     * reserved by the driver. The total is {@link CudaDeviceProperties#totalMemoryBytes()}.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @return free bytes at the time of the call
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if the driver has no device of this ordinal
     */
    public static long freeMemory(Device device) {
        requireCudaDevice(device);
        requireNativeAccess();
        long saved = CudaContext.enter(device.ordinal());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            CudaDriver.check("cuMemGetInfo_v2", cuda_driver_h.cuMemGetInfo_v2(free, total));
            return free.get(JAVA_LONG, 0);
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Whether {@code device} can reach {@code peer}'s memory directly, over NVLink or PCIe peer-to-peer
     * ({@code cuDeviceCanAccessPeer}). {@link CudaCopies#copyPeer} works without it (the driver then stages
     * through host memory); kernels that dereference another device's pointers need it.
     *
     * @param device the CUDA device that would read or write
     * @param peer the CUDA device whose memory it would reach
     * @return {@code true} if peer access between the two is possible; {@code false} for {@code device == peer}
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if either ordinal names no device
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static boolean canAccessPeer(Device device, Device peer) {
        requireCudaDevice(device);
        requireCudaDevice(peer);
        return CudaPeerAccess.canAccess(device.ordinal(), peer.ordinal());
    }

    /**
     * Lets work in {@code device}'s primary context access {@code peer}'s memory directly
     * ({@code cuCtxEnablePeerAccess}). Enabling is one-way and lasts for the life of the process (the primary
     * contexts are never released); it costs a little on every later allocation, which the driver maps for
     * the peer too, so enable only the pairs that need it. Idempotent: a pair already enabled (here or by
     * another library sharing the primary contexts) returns {@code false}. For access both ways, call it for
     * both orders.
     *
     * @param device the CUDA device that will read or write
     * @param peer the CUDA device whose memory it will reach
     * @return {@code true} if this call enabled the access, {@code false} if it was enabled already
     * @throws InvalidArgumentException for a device of another kind, or if {@code device} equals {@code peer}
     * @throws org.devicebridge.UnsupportedFeatureException if the two devices cannot access each other
     *     ({@link #canAccessPeer} is {@code false})
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if either ordinal names no device, or if the
     *     driver fails otherwise (e.g. {@code CUDA_ERROR_TOO_MANY_PEERS})
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static boolean enablePeerAccess(Device device, Device peer) {
        requireCudaDevice(device);
        requireCudaDevice(peer);
        return CudaPeerAccess.enable(device.ordinal(), peer.ordinal());
    }

    /**
     * Keeps up to {@code bytes} of freed memory in {@code device}'s default memory pool across
     * synchronisations ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD}). Every stream-ordered allocation of this
     * library comes from that pool ({@link DeviceBuffer#allocateAsync}: uploaded Arrow batches, staged
     * copies). CUDA's default threshold is 0: at each synchronisation the pool gives the memory freed since
     * back to the driver, and the next allocation of that size maps fresh physical memory again (the cost is
     * in bench/RESULTS.md). A threshold keeps it, as RMM's and PyTorch's pools do; {@code 0} restores CUDA's
     * default and {@link Long#MAX_VALUE} keeps everything until {@link #trimMemoryPool}.
     *
     * <p>The default pool is the process's, not this library's: CuPy's async pool and any code calling
     * {@code cudaMallocAsync} without a pool share it, and see the threshold set here. The library never
     * changes the threshold by itself.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param bytes the release threshold, {@code >= 0}
     * @throws InvalidArgumentException for a device of another kind, or if {@code bytes} is negative
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver has no device of this ordinal, or refuses
     */
    public static void setMemoryPoolThreshold(Device device, long bytes) {
        requireCudaDevice(device);
        DeviceMemoryPool.retain(device.ordinal(), bytes);
    }

    /**
     * {@return the release threshold of {@code device}'s default memory pool (see
     * {@link #setMemoryPoolThreshold}): the freed bytes the pool keeps across synchronisations}
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver has no device of this ordinal, or refuses
     */
    public static long memoryPoolThreshold(Device device) {
        requireCudaDevice(device);
        return DeviceMemoryPool.releaseThreshold(device.ordinal());
    }

    /**
     * {@return the memory {@code device}'s default pool holds from the driver now, in use or kept for reuse
     * ({@code CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT})}
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver has no device of this ordinal, or refuses
     */
    public static long memoryPoolReservedBytes(Device device) {
        requireCudaDevice(device);
        return DeviceMemoryPool.reservedBytes(device.ordinal());
    }

    /**
     * Gives freed memory of {@code device}'s default pool back to the driver until the pool holds at most
     * {@code keepBytes} beyond what is in use ({@code cuMemPoolTrimTo}); allocations in use are never affected.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param keepBytes the freed bytes the pool may keep, {@code >= 0}
     * @throws InvalidArgumentException for a device of another kind, or if {@code keepBytes} is negative
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if the driver has no device of this ordinal, or refuses
     */
    public static void trimMemoryPool(Device device, long keepBytes) {
        requireCudaDevice(device);
        DeviceMemoryPool.trim(device.ordinal(), keepBytes);
    }

    /**
     * Sends {@code device}'s IPC-shareable memory pool (what uploads with {@link TransferOptions#ipcShareable()}
     * allocate from, where the driver supports it) to another process on this machine: exports the pool as a
     * POSIX file descriptor ({@code cuMemPoolExportToShareableHandle}), connects to the Unix stream socket at
     * {@code socket}, checks that process {@code peerPid} of this process's user listens there
     * ({@code SO_PEERCRED}) and sends it the descriptor ({@code SCM_RIGHTS}). The other process imports the pool
     * once ({@code cuMemPoolImportFromShareableHandle}), then opens each buffer from the 64 bytes of its
     * {@link DeviceBuffer#ipcPoolPointer()} ({@code cuMemPoolImportPointer}), zero-copy.
     *
     * <p>Ownership: nothing new is held after a return or a throw (the descriptor made here is closed on every
     * path); the pool stays this process's, and the other process holds its own descriptor.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param socket the path of the socket the other process listens on (at most 107 bytes)
     * @param peerPid the process that must be listening there
     * @throws org.devicebridge.UnsupportedFeatureException where the driver cannot share a pool as a file
     *     descriptor
     * @throws InvalidArgumentException for a device of another kind, or a path the platform cannot name
     * @throws DeviceBridgeException if a socket call fails ({@code errno} named) or another process listens there
     *     (nothing sent)
     * @throws CudaException if the driver fails
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static void sendIpcPool(Device device, java.nio.file.Path socket, long peerPid) {
        requireCudaDevice(device);
        requireNativeAccess();
        Objects.requireNonNull(socket, "socket");
        IpcMemoryPool.send(device.ordinal(), socket.toString(), peerPid);
    }

    /**
     * Blocks until all work on {@code device} (in its primary context, every stream) finished
     * ({@code cuCtxSynchronize}).
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException if the driver reports an error (also one of earlier asynchronous work)
     */
    public static void synchronize(Device device) {
        requireCudaDevice(device);
        requireNativeAccess();
        long saved = CudaContext.enter(device.ordinal());
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
