package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * The CUDA IPC calls behind {@link DeviceBuffer#ipcHandle()}, {@link DeviceBuffer#openIpcHandle},
 * {@link CudaEvent#ipcHandle()} and {@link CudaEvent#openIpcHandle}: a 64-byte handle ({@code CUipcMemHandle}, {@code CUipcEventHandle}) made in
 * one process opens the same device memory or event in another process on the same machine. The handle
 * is plain bytes (send it over any channel); it carries no ownership: the exporting process must keep
 * the buffer (or event) alive until every other process has closed what it opened. Handles are meant
 * for other processes: the driver does not promise to open a process's own handles.
 *
 * <p>Stateless and thread-safe: its methods may run concurrently on any threads; each says who owns what
 * after a return and after a throw.
 */
final class CudaIpc {
    /** Size of an IPC handle in bytes ({@code CU_IPC_HANDLE_SIZE}). */
    static final int HANDLE_SIZE = 64;

    private CudaIpc() {}

    /**
     * The IPC handle of a device buffer ({@code cuIpcGetMemHandle}). Only {@code cuMemAlloc} memory can be
     * shared this way: a buffer from {@link DeviceBuffer#allocate}, or a {@link DeviceBuffer#wrap wrapped} one
     * that starts where its allocation starts (as the driver's {@code cuMemGetAddressRange} reports it) and
     * whose memory the driver agrees to share (memory of another process's {@code cudaMalloc}, for instance,
     * imported through the Arrow C Device interface); the handle names the whole allocation, so a buffer must
     * not be a view into a larger one.
     *
     * @param buffer the device buffer; the caller keeps owning it
     * @return 64 bytes; the caller keeps owning {@code buffer} and must keep it open while others use it
     * @throws UnsupportedFeatureException for stream-ordered, opened or empty buffers, and for wrapped buffers
     *         that do not start at their allocation's base
     * @throws CudaException if the driver refuses (for example wrapped memory of a stream-ordered pool)
     */
    static byte[] getMemHandle(DeviceBuffer buffer) {
        requireNativeAccess();
        Objects.requireNonNull(buffer, "buffer");
        DeviceBuffer.Kind kind = buffer.kind();
        if (kind == DeviceBuffer.Kind.WRAPPED && buffer.address() != 0) {
            PointerAttributes a = PointerAttributes.query(buffer.address());
            if (a.rangeStart() != buffer.address()) {
                throw new UnsupportedFeatureException("buffer", String.format(java.util.Locale.ROOT,
                        "expected a wrapped buffer at the base of its allocation but found one at 0x%x inside the"
                        + " allocation at 0x%x: CUDA IPC shares whole allocations", buffer.address(), a.rangeStart()));
            }
        } else if (kind != DeviceBuffer.Kind.MEM_ALLOC) {
            throw new UnsupportedFeatureException("buffer", "only memory from DeviceBuffer.allocate (cuMemAlloc)"
                    + " can be shared through CUDA IPC, not a " + kind.name().toLowerCase(java.util.Locale.ROOT)
                    + " buffer");
        }
        long address = buffer.address();
        long saved = CudaContext.enter(buffer.ordinal());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(HANDLE_SIZE);
            CudaDriver.check("cuIpcGetMemHandle", cuda_driver_h.cuIpcGetMemHandle(handle, address));
            return handle.toArray(JAVA_BYTE);
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Opens device memory another process shared ({@code cuIpcOpenMemHandle} with
     * {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}) on {@code device}. Its size is the mapped range as
     * {@code cuMemGetAddressRange} reports it: at least the exported allocation's size (the driver may round
     * it up), so the exporter should send the meaningful size along with the handle.
     *
     * @param handle the 64 bytes from {@link #getMemHandle} in the other process
     * @param device the CUDA device ordinal
     * @return a buffer the caller owns; its last close unmaps the memory ({@code cuIpcCloseMemHandle}); the
     *     memory itself stays the other process's
     * @throws InvalidArgumentException if {@code handle} is not 64 bytes
     * @throws CudaException if the driver refuses (e.g. {@code CUDA_ERROR_INVALID_HANDLE} for a stale handle)
     */
    static DeviceBuffer openMemHandle(int device, byte[] handle) {
        requireNativeAccess();
        checkHandle(handle);
        long address;
        long bytes;
        long saved = CudaContext.enter(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(HANDLE_SIZE);
            MemorySegment.copy(handle, 0, h, JAVA_BYTE, 0, HANDLE_SIZE);
            MemorySegment out = arena.allocate(JAVA_LONG);
            CudaDriver.check("cuIpcOpenMemHandle_v2", cuda_driver_h.cuIpcOpenMemHandle_v2(out, h,
                    cuda_driver_h.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS()));
            address = out.get(JAVA_LONG, 0);
            try {
                MemorySegment base = arena.allocate(JAVA_LONG);
                MemorySegment size = arena.allocate(JAVA_LONG);
                CudaDriver.check("cuMemGetAddressRange_v2", cuda_driver_h.cuMemGetAddressRange_v2(base, size, address));
                bytes = size.get(JAVA_LONG, 0) - (address - base.get(JAVA_LONG, 0));
            } catch (RuntimeException e) {
                cuda_driver_h.cuIpcCloseMemHandle(address);
                throw e;
            }
        } finally {
            CudaContext.exit(saved);
        }
        return DeviceBuffer.ofIpc(address, bytes, device);
    }

    /**
     * The IPC handle of an event made by {@link CudaEvent#createInterprocess} ({@code cuIpcGetEventHandle}).
     *
     * @param event an interprocess event; the caller keeps owning it
     * @return 64 bytes; the caller keeps owning {@code event}
     * @throws CudaException if the driver refuses (e.g. a pooled event, which is not interprocess)
     */
    static byte[] getEventHandle(CudaEvent event) {
        requireNativeAccess();
        Objects.requireNonNull(event, "event");
        MemorySegment e = event.raw();
        long saved = CudaContext.enter(event.ordinal());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(HANDLE_SIZE);
            CudaDriver.check("cuIpcGetEventHandle", cuda_driver_h.cuIpcGetEventHandle(handle, e));
            return handle.toArray(JAVA_BYTE);
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Opens an event another process shared ({@code cuIpcOpenEventHandle}); wait on it with
     * {@link CudaStream#waitEvent} or {@link CudaEvent#synchronize}. Recording it here is allowed too.
     *
     * @param device the CUDA device ordinal
     * @param handle the {@code CUipcEventHandle} bytes the other process shared (only read)
     * @return an event the caller owns; close releases this process's reference
     */
    static CudaEvent openEventHandle(int device, byte[] handle) {
        requireNativeAccess();
        checkHandle(handle);
        long saved = CudaContext.enter(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(HANDLE_SIZE);
            MemorySegment.copy(handle, 0, h, JAVA_BYTE, 0, HANDLE_SIZE);
            MemorySegment out = arena.allocate(ADDRESS);
            CudaDriver.check("cuIpcOpenEventHandle", cuda_driver_h.cuIpcOpenEventHandle(out, h));
            return CudaEvent.ofOpened(out.get(ADDRESS, 0), device);
        } finally {
            CudaContext.exit(saved);
        }
    }

    private static void checkHandle(byte[] handle) {
        Objects.requireNonNull(handle, "handle");
        if (handle.length != HANDLE_SIZE) {
            throw new InvalidArgumentException("handle", "expected a CUDA IPC handle of " + HANDLE_SIZE
                    + " bytes but found " + handle.length);
        }
    }
}
