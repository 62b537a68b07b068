package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.generated.cuda.CUmemLocation_st;
import org.devicebridge.generated.cuda.CUmemPoolProps_st;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.UnixFds;

/**
 * The device's IPC-shareable memory pool: a stream-ordered pool made with {@code cuMemPoolCreate} and
 * {@code handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}, whose allocations another process opens zero-copy
 * once it has imported the pool: the pool travels as a file descriptor ({@code cuMemPoolExportToShareableHandle})
 * over a Unix socket ({@link #send}), each allocation as 64 bytes ({@code cuMemPoolExportPointer},
 * {@link #exportPointer}). A legacy CUDA IPC handle ({@code cuIpcGetMemHandle}) cannot name pool memory, which is
 * why the default pool's allocations are copied before they are shared.
 *
 * <p>One pool per device, made on first use (an upload whose {@link TransferOptions#ipcShareable()} is set) and
 * kept for the process's life, as the default pool is; only where the device's
 * {@code CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES} has the POSIX file descriptor bit. Elsewhere
 * {@link #of(int)} answers {@code null} and uploads use the default pool. The pool starts with the default pool's
 * release threshold, and {@link Cuda#setMemoryPoolThreshold} and {@link Cuda#trimMemoryPool} apply to both.
 *
 * <p>Thread-safe: each device's pool is made once under this class's monitor; its handle never changes.
 */
final class IpcMemoryPool {
    /** Size of the export data of one allocation ({@code CUmemPoolPtrExportData}). */
    static final int POINTER_SIZE = 64;
    /** Marks a device whose driver cannot share a pool as a file descriptor. */
    private static final MemorySegment UNSUPPORTED = MemorySegment.ofAddress(-1L);
    private static volatile AtomicReferenceArray<MemorySegment> pools;

    private IpcMemoryPool() {}

    /**
     * {@return {@code device}'s shareable pool, made on first call; {@code null} where the driver cannot share a
     * pool as a POSIX file descriptor}
     *
     * @throws CudaException if the driver fails otherwise
     */
    static MemorySegment of(int device) {
        CudaContext.checkDevice(device);
        MemorySegment pool = all().get(device);
        if (pool == null) {
            synchronized (IpcMemoryPool.class) {
                pool = all().get(device);
                if (pool == null) {
                    pool = create(device);
                    all().set(device, pool);
                }
            }
        }
        return pool == UNSUPPORTED ? null : pool;
    }

    /** {@return the pool of {@code device} if it was made already and is supported, else {@code null}} */
    static MemorySegment ifMade(int device) {
        AtomicReferenceArray<MemorySegment> a = pools;
        MemorySegment pool = a == null || device < 0 || device >= a.length() ? null : a.get(device);
        return pool == UNSUPPORTED ? null : pool;
    }

    private static AtomicReferenceArray<MemorySegment> all() {
        AtomicReferenceArray<MemorySegment> a = pools;
        if (a == null) {
            synchronized (IpcMemoryPool.class) {
                a = pools;
                if (a == null) {
                    a = new AtomicReferenceArray<>(CudaContext.deviceCount());
                    pools = a;
                }
            }
        }
        return a;
    }

    private static MemorySegment create(int device) {
        int dev = CudaContext.cuDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment types = arena.allocate(JAVA_INT);
            CudaDriver.check("cuDeviceGetAttribute", cuda_driver_h.cuDeviceGetAttribute(types,
                    cuda_driver_h.CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES(), dev));
            if ((types.get(JAVA_INT, 0) & cuda_driver_h.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR()) == 0) {
                return UNSUPPORTED;
            }
            MemorySegment props = arena.allocate(CUmemPoolProps_st.layout()); // zeroed: no maxSize, no usage
            CUmemPoolProps_st.allocType(props, cuda_driver_h.CU_MEM_ALLOCATION_TYPE_PINNED());
            CUmemPoolProps_st.handleTypes(props, cuda_driver_h.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR());
            MemorySegment location = CUmemPoolProps_st.location(props);
            CUmemLocation_st.type(location, cuda_driver_h.CU_MEM_LOCATION_TYPE_DEVICE());
            CUmemLocation_st.id(location, device);
            MemorySegment out = arena.allocate(ADDRESS);
            long saved = CudaContext.enter(device);
            try {
                CudaDriver.check("cuMemPoolCreate", cuda_driver_h.cuMemPoolCreate(out, props));
            } finally {
                CudaContext.exit(saved);
            }
            MemorySegment pool = out.get(ADDRESS, 0);
            try {
                setThreshold(pool, DeviceMemoryPool.releaseThreshold(device));
                // The driver exports pointers only of a pool exported once (CUDA_ERROR_INVALID_VALUE before):
                // export it now, so that every allocation's pointer can be shared, and close that descriptor.
                int fd = exportFd(device, pool);
                try {
                    UnixFds.close(fd);
                } catch (IOException e) {
                    throw new DeviceBridgeException("closing the pool's file descriptor failed: " + e.getMessage(), e);
                }
            } catch (RuntimeException e) {
                try {
                    CudaDriver.check("cuMemPoolDestroy", cuda_driver_h.cuMemPoolDestroy(pool));
                } catch (RuntimeException more) {
                    e.addSuppressed(more);
                }
                throw e;
            }
            return pool;
        }
    }

    /** Sets the release threshold of {@code pool} ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD}). */
    static void setThreshold(MemorySegment pool, long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocateFrom(JAVA_LONG, bytes);
            CudaDriver.check("cuMemPoolSetAttribute", cuda_driver_h.cuMemPoolSetAttribute(pool,
                    cuda_driver_h.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD(), value));
        }
    }

    /**
     * The 64 bytes that name the allocation at {@code address} (its start) of {@code device}'s shareable pool to a
     * process that imported the pool ({@code cuMemPoolExportPointer}).
     *
     * @throws CudaException if the driver refuses
     */
    static byte[] exportPointer(int device, long address) {
        long saved = CudaContext.enter(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(POINTER_SIZE);
            CudaDriver.check("cuMemPoolExportPointer", cuda_driver_h.cuMemPoolExportPointer(data, address));
            return data.toArray(JAVA_BYTE);
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Sends {@code device}'s shareable pool, as a POSIX file descriptor, to process {@code peerPid} listening on
     * the Unix socket at {@code socketPath}; the descriptor made for it is closed on every path.
     *
     * @throws UnsupportedFeatureException where the driver cannot share a pool as a file descriptor
     * @throws InvalidArgumentException for a socket path the platform cannot name
     * @throws DeviceBridgeException if the socket calls fail or another process listens there (nothing sent)
     * @throws CudaException if the driver fails
     */
    static void send(int device, String socketPath, long peerPid) {
        MemorySegment pool = of(device);
        if (pool == null) {
            throw new UnsupportedFeatureException("device", String.format(Locale.ROOT, "device %d's driver cannot"
                    + " share a memory pool as a POSIX file descriptor (CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES"
                    + " lacks CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)", device));
        }
        int fd = exportFd(device, pool);
        DeviceBridgeException failure = null;
        try {
            UnixFds.send(socketPath, peerPid, fd);
        } catch (IllegalArgumentException e) {
            failure = new InvalidArgumentException("socketPath", e.getMessage());
        } catch (IOException e) {
            failure = new DeviceBridgeException("sending device " + device + "'s memory pool to process " + peerPid
                    + " failed: " + e.getMessage(), e);
        } finally {
            try {
                UnixFds.close(fd);
            } catch (IOException e) {
                if (failure == null) {
                    failure = new DeviceBridgeException("closing the pool's file descriptor failed: " + e.getMessage(), e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** A new POSIX file descriptor of {@code pool} ({@code cuMemPoolExportToShareableHandle}); the caller closes it. */
    private static int exportFd(int device, MemorySegment pool) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            long saved = CudaContext.enter(device);
            try {
                CudaDriver.check("cuMemPoolExportToShareableHandle", cuda_driver_h.cuMemPoolExportToShareableHandle(
                        out, pool, cuda_driver_h.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR(), 0L));
            } finally {
                CudaContext.exit(saved);
            }
            return out.get(JAVA_INT, 0);
        }
    }
}
