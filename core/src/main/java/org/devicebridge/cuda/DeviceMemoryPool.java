package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * The driver calls behind {@link Cuda#setMemoryPoolThreshold} and its siblings: the device's default memory pool, which every stream-ordered allocation of this library comes from
 * ({@link DeviceBuffer#allocateAsync}: uploaded Arrow batches, staged copies). CUDA's default release
 * threshold is 0: at each synchronisation the pool gives the memory freed since back to the driver, so the
 * next allocation of that size maps fresh physical memory again, a cost of the order of a fraction of a PCIe
 * copy of the same bytes (see bench/RESULTS.md). {@link #retain(int, long)} keeps up to that many freed bytes in the pool, as RMM's and
 * PyTorch's pools do; {@link #trim(int, long)} gives them back. Both apply to the device's IPC-shareable pool
 * too, once it is made ({@link IpcMemoryPool}).
 *
 * <p>The default pool is the process's, not this library's: CuPy's async pool and any code calling
 * {@code cudaMallocAsync} without a pool share it, and see the threshold set here. Nothing here is done
 * implicitly: the library never changes the threshold by itself.
 *
 * <p>Thread-safe: stateless apart from a cache of the pools' handles, which never change.
 */
final class DeviceMemoryPool {
    private static volatile AtomicReferenceArray<MemorySegment> pools;

    private DeviceMemoryPool() {}

    /**
     * Keeps up to {@code bytes} of freed memory in the pool across synchronisations
     * ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD}); {@code 0} restores CUDA's default, {@link Long#MAX_VALUE}
     * keeps everything until {@link #trim}.
     *
     * @param device the CUDA device ordinal
     * @param bytes the release threshold, {@code >= 0}
     * @throws InvalidArgumentException if {@code bytes} is negative
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if no device has this ordinal, or the driver refuses
     */
    static void retain(int device, long bytes) {
        requireNativeAccess();
        if (bytes < 0) {
            throw new InvalidArgumentException("bytes", "expected a release threshold >= 0 but found " + bytes);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_LONG);
            value.set(JAVA_LONG, 0, bytes);
            CudaDriver.check("cuMemPoolSetAttribute", cuda_driver_h.cuMemPoolSetAttribute(of(device),
                    cuda_driver_h.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD(), value));
        }
        MemorySegment shareable = IpcMemoryPool.ifMade(device); // it keeps what the default pool keeps
        if (shareable != null) {
            IpcMemoryPool.setThreshold(shareable, bytes);
        }
    }

    /**
     * The pool's release threshold (see {@link #retain}).
     *
     * @param device the CUDA device ordinal
     * @return the bytes of freed memory the pool keeps across synchronisations
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if no device has this ordinal, or the driver refuses
     */
    static long releaseThreshold(int device) {
        return attribute(device, cuda_driver_h.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD());
    }

    /**
     * Memory the pool holds from the driver now, in use or kept for reuse
     * ({@code CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT}).
     *
     * @param device the CUDA device ordinal
     * @return bytes reserved by the pool
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if no device has this ordinal, or the driver refuses
     */
    static long reservedBytes(int device) {
        return attribute(device, cuda_driver_h.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT());
    }

    /**
     * Gives freed memory back to the driver until the pool holds at most {@code keepBytes} beyond what is in
     * use ({@code cuMemPoolTrimTo}); allocations still in use are never affected.
     *
     * @param device the CUDA device ordinal
     * @param keepBytes the freed bytes the pool may keep, {@code >= 0}
     * @throws InvalidArgumentException if {@code keepBytes} is negative
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if no device has this ordinal, or the driver refuses
     */
    static void trim(int device, long keepBytes) {
        requireNativeAccess();
        if (keepBytes < 0) {
            throw new InvalidArgumentException("keepBytes", "expected a byte count >= 0 but found " + keepBytes);
        }
        CudaDriver.check("cuMemPoolTrimTo", cuda_driver_h.cuMemPoolTrimTo(of(device), keepBytes));
        MemorySegment shareable = IpcMemoryPool.ifMade(device);
        if (shareable != null) {
            CudaDriver.check("cuMemPoolTrimTo", cuda_driver_h.cuMemPoolTrimTo(shareable, keepBytes));
        }
    }

    private static long attribute(int device, int attribute) {
        requireNativeAccess();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_LONG);
            CudaDriver.check("cuMemPoolGetAttribute", cuda_driver_h.cuMemPoolGetAttribute(of(device), attribute, value));
            return value.get(JAVA_LONG, 0);
        }
    }

    /** The default pool of {@code device} ({@code cuDeviceGetDefaultMemPool}), looked up once per device. */
    static MemorySegment of(int device) {
        Cuda.require();
        CudaContext.checkDevice(device);
        AtomicReferenceArray<MemorySegment> all = pools;
        if (all == null) {
            synchronized (DeviceMemoryPool.class) {
                all = pools;
                if (all == null) {
                    all = new AtomicReferenceArray<>(CudaContext.deviceCount());
                    pools = all;
                }
            }
        }
        MemorySegment pool = all.get(device);
        if (pool == null) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ADDRESS);
                CudaDriver.check("cuDeviceGetDefaultMemPool",
                        cuda_driver_h.cuDeviceGetDefaultMemPool(out, CudaContext.cuDevice(device)));
                pool = out.get(ADDRESS, 0);
            }
            all.set(device, pool); // the same value for every thread that races here
        }
        return pool;
    }
}
