package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.RefCount;

/**
 * Device memory on one CUDA device. One allocation may be shared by several owners (for instance several
 * Arrow or DLPack exports of the same data): {@link #retain()} hands out another handle to the same
 * memory, and the memory is freed when the last handle is closed. Each handle's {@link #close()} is
 * idempotent and thread-safe and drops exactly its own reference.
 *
 * <p>Memory from {@link #allocate} is freed with {@code cuMemFree}; memory from {@link #allocateAsync} is
 * stream-ordered (the device's default memory pool: see {@link Cuda#setMemoryPoolThreshold} for keeping its freed memory
 * for reuse) and is freed with {@code cuMemFreeAsync} on the stream
 * it was allocated on, so work queued on that stream before the last close finishes first; work on other
 * streams must be ordered before the close by the caller (an event). Device memory is never mapped into
 * the JVM: read and write it with {@link CudaCopies}.
 */
public final class DeviceBuffer extends NativeHandle {
    private final Allocation allocation;

    /** How an allocation is given back. */
    enum Kind {
        MEM_ALLOC, POOL, IPC_POOL, WRAPPED, IPC, EMPTY;

        /** For descriptions, computed once. */
        final String label = name().toLowerCase(Locale.ROOT);
    }

    /** The memory shared by every handle of one allocation; never refers to a handle. */
    static final class Allocation {
        final long address;
        final long bytes;
        final int device;
        final Device identity;
        final Kind kind;
        final RefCount refs;

        Allocation(long address, long bytes, int device, Kind kind, Runnable free) {
            this.address = address;
            this.bytes = bytes;
            this.device = device;
            this.identity = Device.cuda(device);
            this.kind = kind;
            this.refs = new RefCount(free);
        }
    }

    private DeviceBuffer(Allocation allocation) {
        // concatenation, not String.format: a handle is made per allocation on the hot path (the same text)
        super("CUDA device buffer (" + allocation.kind.label + ", 0x" + Long.toHexString(allocation.address) + ", "
                + allocation.bytes + " bytes, device " + allocation.device + ")", allocation.refs::release);
        this.allocation = allocation;
    }

    /**
     * Allocates device memory with {@code cuMemAlloc}. Zero bytes allocate nothing (address 0).
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param bytes the size in bytes
     * @return a buffer the caller owns and closes
     * @throws InvalidArgumentException if {@code bytes} is negative, or for a device of another kind
     * @throws CudaException if the driver fails (e.g. {@code CUDA_ERROR_OUT_OF_MEMORY})
     */
    public static DeviceBuffer allocate(Device device, long bytes) {
        Cuda.requireCudaDevice(device);
        return allocate(device.ordinal(), bytes);
    }

    private static DeviceBuffer allocate(int device, long bytes) {
        requireNativeAccess();
        checkBytes(bytes);
        CudaContext.checkDevice(device);
        if (bytes == 0) {
            return empty(device);
        }
        long address;
        long saved = CudaContext.enter(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            CudaDriver.check("cuMemAlloc_v2", cuda_driver_h.cuMemAlloc_v2(out, bytes));
            address = out.get(JAVA_LONG, 0);
        } finally {
            CudaContext.exit(saved);
        }
        CudaCounters.memAlloc(bytes);
        PointerAttributes.registerOwn(address, bytes, device);
        return new DeviceBuffer(new Allocation(address, bytes, device, Kind.MEM_ALLOC, () -> {
            PointerAttributes.unregisterOwn(address);
            long savedOnFree = CudaContext.enter(device);
            try {
                CudaDriver.check("cuMemFree_v2", cuda_driver_h.cuMemFree_v2(address));
            } finally {
                CudaCounters.deviceFreed(bytes);
                CudaContext.exit(savedOnFree);
            }
        }));
    }

    /**
     * Allocates stream-ordered device memory from the device's default memory pool
     * ({@code cuMemAllocFromPoolAsync}): the memory may be used by work queued on {@code stream} after
     * this call. The last close frees it with {@code cuMemFreeAsync} on the same stream (which therefore
     * stays alive, even if its handle is closed, until then). Zero bytes allocate nothing.
     *
     * @param stream a stream of {@code device}; the caller keeps owning it
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param bytes the size in bytes
     * @return a buffer the caller owns and closes
     * @throws InvalidArgumentException if {@code bytes} is negative, for a device of another kind, or if the
     *     stream is on another device
     * @throws CudaException if the driver fails (e.g. memory pools unsupported on this device)
     */
    public static DeviceBuffer allocateAsync(Device device, long bytes, CudaStream stream) {
        Cuda.requireCudaDevice(device);
        return allocateAsync(device.ordinal(), bytes, stream);
    }

    private static DeviceBuffer allocateAsync(int device, long bytes, CudaStream stream) {
        return allocateAsync(device, bytes, stream, Kind.POOL);
    }

    /**
     * {@link #allocateAsync(Device, long, CudaStream)} from the default pool ({@code kind} {@code POOL}) or from
     * the device's IPC-shareable pool ({@code IPC_POOL}: {@link IpcMemoryPool}; the default pool where the driver
     * cannot share one).
     */
    static DeviceBuffer allocateAsync(int device, long bytes, CudaStream stream, Kind kind) {
        requireNativeAccess();
        checkBytes(bytes);
        Objects.requireNonNull(stream, "stream");
        if (stream.ordinal() != device) {
            throw new InvalidArgumentException("stream", String.format(Locale.ROOT,
                    "expected a stream of device %d but found one of device %d", device, stream.ordinal()));
        }
        CudaContext.checkDevice(device);
        if (bytes == 0) {
            return empty(device);
        }
        MemorySegment pool = kind == Kind.IPC_POOL ? IpcMemoryPool.of(device) : null;
        Kind made = pool == null ? Kind.POOL : Kind.IPC_POOL;
        pool = pool == null ? DeviceMemoryPool.of(device) : pool;
        CudaStream.Ref streamRef = stream.retainRef();
        long address;
        long saved = CudaContext.enter(device);
        try {
            MemorySegment out = CudaContext.outSlot(); // no arena per allocation
            CudaDriver.check("cuMemAllocFromPoolAsync",
                    cuda_driver_h.cuMemAllocFromPoolAsync(out, bytes, pool, streamRef.raw));
            address = out.get(JAVA_LONG, 0);
        } catch (RuntimeException e) {
            streamRef.refs.release();
            throw e;
        } finally {
            CudaContext.exit(saved);
        }
        CudaCounters.memAllocAsync(bytes);
        PointerAttributes.registerOwn(address, bytes, device);
        return new DeviceBuffer(new Allocation(address, bytes, device, made, () -> {
            PointerAttributes.unregisterOwn(address);
            try {
                long savedOnFree = CudaContext.enter(device);
                try {
                    CudaDriver.check("cuMemFreeAsync", cuda_driver_h.cuMemFreeAsync(address, streamRef.raw));
                } finally {
                    CudaContext.exit(savedOnFree);
                }
            } finally {
                CudaCounters.deviceFreed(bytes);
                streamRef.refs.release();
            }
        }));
    }

    /**
     * Views device memory someone else allocated, e.g. a pointer imported from a native library. The
     * memory is not freed by this library; when the last handle is closed, {@code owner} (if not null) is
     * closed, which lets the caller give the memory back to whoever owns it.
     *
     * @param devicePointer the device address ({@code CUdeviceptr}); 0 only with {@code bytes == 0}
     * @param owner closed once when the last handle is closed; may be null
     * @param bytes the size in bytes
     * @param device the CUDA device the memory is on ({@link DeviceKind#CUDA})
     * @return a buffer the caller owns. After a return {@code owner} belongs to the buffer; after a throw
     *     it still belongs to the caller (it is not closed)
     * @throws InvalidArgumentException if {@code bytes} is negative, {@code devicePointer} is 0 with bytes, or
     *     for a device of another kind
     */
    public static DeviceBuffer wrap(long devicePointer, long bytes, Device device, AutoCloseable owner) {
        Cuda.requireCudaDevice(device);
        return wrap(devicePointer, bytes, device.ordinal(), owner);
    }

    private static DeviceBuffer wrap(long devicePointer, long bytes, int device, AutoCloseable owner) {
        requireNativeAccess();
        checkBytes(bytes);
        if (devicePointer == 0 && bytes != 0) {
            throw new InvalidArgumentException("devicePointer", "expected a device address for " + bytes
                    + " bytes but found NULL");
        }
        CudaContext.checkDevice(device);
        return new DeviceBuffer(new Allocation(devicePointer, bytes, device, Kind.WRAPPED, () -> {
            if (owner != null) {
                try {
                    owner.close();
                } catch (RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new DeviceBridgeException("closing the owner of a wrapped device buffer failed", e);
                }
            }
        }));
    }

    /** A buffer over memory mapped by {@code cuIpcOpenMemHandle}; the last close unmaps it. */
    static DeviceBuffer ofIpc(long address, long bytes, int device) {
        Allocations.allocated(Allocations.Kind.IPC, bytes);
        return new DeviceBuffer(new Allocation(address, bytes, device, Kind.IPC, () -> {
            long saved = CudaContext.enter(device);
            try {
                CudaDriver.check("cuIpcCloseMemHandle", cuda_driver_h.cuIpcCloseMemHandle(address));
            } finally {
                CudaContext.exit(saved);
                Allocations.freed(Allocations.Kind.IPC, bytes);
            }
        }));
    }

    private static DeviceBuffer empty(int device) {
        return new DeviceBuffer(new Allocation(0, 0, device, Kind.EMPTY, () -> { }));
    }

    private static void checkBytes(long bytes) {
        if (bytes < 0) {
            throw new InvalidArgumentException("bytes", "expected a byte size >= 0 but found " + bytes);
        }
    }

    /**
     * Another handle to the same memory: the memory is freed when this and every other handle are closed.
     *
     * @return a handle the caller owns and closes
     * @throws HandleClosedException if this handle is closed
     */
    public DeviceBuffer retain() {
        ensureLive();
        if (!allocation.refs.retain()) {
            throw new HandleClosedException(description() + " is freed");
        }
        return new DeviceBuffer(allocation);
    }

    /** {@return the device address ({@code CUdeviceptr}); 0 for an empty buffer} */
    public long address() {
        ensureLive();
        return allocation.address;
    }

    /** {@return the size in bytes} */
    public long byteSize() {
        return allocation.bytes;
    }

    /** {@return the CUDA device the memory is on} */
    public Device device() {
        return allocation.identity;
    }

    /** The device ordinal, for this package's driver calls. */
    int ordinal() {
        return allocation.device;
    }

    /** {@return how many live handles share this allocation (0 once freed)} */
    public int referenceCount() {
        return allocation.refs.count();
    }

    /** {@return {@code true} for stream-ordered memory from {@link #allocateAsync}} */
    public boolean isStreamOrdered() {
        return allocation.kind == Kind.POOL || allocation.kind == Kind.IPC_POOL;
    }

    Kind kind() {
        return allocation.kind;
    }

    /**
     * The range {@code [offset, offset + bytes)} of this buffer, for {@link CudaCopies}; it borrows this
     * handle, which the caller keeps owning.
     *
     * @param offset the first byte, from the start of this buffer
     * @param bytes the range's size in bytes
     * @return the range, borrowing this buffer
     * @throws InvalidArgumentException unless the range lies inside the buffer
     */
    public DeviceRange range(long offset, long bytes) {
        return new DeviceRange(this, offset, bytes);
    }

    /**
     * This buffer's CUDA IPC handle ({@code cuIpcGetMemHandle}): 64 bytes that
     * {@link #openIpcHandle(Device, byte[])} opens in another process on the same machine. The handle is plain
     * bytes (send it over any channel) and carries no ownership. Only {@code cuMemAlloc} memory can be shared
     * this way: a buffer from {@link #allocate}, or a {@link #wrap wrapped} one that starts where its
     * allocation starts (as {@code cuMemGetAddressRange} reports it) and whose memory the driver agrees to
     * share; the handle names the whole allocation. Handles are meant for other processes: the driver does
     * not promise to open a process's own handles.
     *
     * @return 64 bytes; the caller keeps owning this buffer and must keep it open while others use it
     * @throws UnsupportedFeatureException for stream-ordered, opened or empty buffers, and for wrapped
     *         buffers that do not start at their allocation's base
     * @throws CudaException if the driver refuses (for example wrapped memory of a stream-ordered pool)
     */
    public byte[] ipcHandle() {
        return CudaIpc.getMemHandle(this);
    }

    /**
     * The 64 bytes ({@code CUmemPoolPtrExportData} of {@code cuMemPoolExportPointer}) that name this buffer's
     * memory to a process that imported its pool, for stream-ordered memory of the device's IPC-shareable pool:
     * what an upload with {@link TransferOptions#ipcShareable()} allocates where the driver can share a pool
     * as a POSIX file descriptor. The other process imports the pool once ({@link Cuda#sendIpcPool}, then
     * {@code cuMemPoolImportFromShareableHandle}) and each buffer with {@code cuMemPoolImportPointer}; the bytes
     * carry no ownership, and the other process must free its import ({@code cuMemFree}) before this buffer's
     * last close frees the memory.
     *
     * @return 64 bytes; the caller keeps owning this buffer and must keep it open while others use it
     * @throws UnsupportedFeatureException for any other buffer (the default pool's, {@code cuMemAlloc}, wrapped,
     *         opened or empty memory)
     * @throws CudaException if the driver refuses
     */
    public byte[] ipcPoolPointer() {
        requireNativeAccess();
        if (allocation.kind != Kind.IPC_POOL) {
            throw new UnsupportedFeatureException("buffer", "expected memory of the device's IPC-shareable pool"
                    + " (an upload with TransferOptions.withIpcShareable(true)) but found a " + allocation.kind.label
                    + " buffer");
        }
        return IpcMemoryPool.exportPointer(allocation.device, address());
    }

    /**
     * Opens device memory another process shared with {@link #ipcHandle()} ({@code cuIpcOpenMemHandle} with
     * {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}) on {@code device}. Its size is the mapped range as
     * {@code cuMemGetAddressRange} reports it: at least the exported allocation's size (the driver may round
     * it up), so the exporter should send the meaningful size along with the handle.
     *
     * @param device the CUDA device to map it on ({@link DeviceKind#CUDA})
     * @param handle the 64 bytes from {@link #ipcHandle()} in the other process (only read)
     * @return a buffer the caller owns; its last close unmaps the memory ({@code cuIpcCloseMemHandle}); the
     *     memory itself stays the other process's. After a throw nothing is mapped.
     * @throws InvalidArgumentException if {@code handle} is not 64 bytes, or for a device of another kind
     * @throws CudaException if the driver refuses (e.g. {@code CUDA_ERROR_INVALID_HANDLE} for a stale handle)
     */
    public static DeviceBuffer openIpcHandle(Device device, byte[] handle) {
        Cuda.requireCudaDevice(device);
        return CudaIpc.openMemHandle(device.ordinal(), handle);
    }

    /**
     * Checks that this handle is live and {@code [offset, offset + bytes)} lies inside the buffer, and
     * returns the range's device address.
     */
    long addressOf(long offset, long bytes) {
        ensureLive();
        DeviceRange.checkInside(offset, bytes, allocation.bytes, "");
        return allocation.address + offset;
    }
}
