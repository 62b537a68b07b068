package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * A CUDA event: a marker recorded on a stream that other streams (or the host) can wait for. Events from
 * {@link #acquire} come from a per-device pool and have timing disabled ({@code CU_EVENT_DISABLE_TIMING},
 * the cheap kind); {@link #close()} returns the event to its pool, so acquiring one per batch creates no
 * driver object on the steady-state path. Methods may be called from any thread.
 *
 * <p>The handle owns the event: {@code close()} (idempotent and thread-safe) returns it to its pool or
 * destroys it.
 */
public final class CudaEvent extends NativeHandle {
    private final MemorySegment raw;
    private final Device device;

    private CudaEvent(MemorySegment raw, Device device, String description, AutoCloseable release) {
        super(description, release);
        this.raw = raw;
        this.device = device;
    }

    /**
     * An event of {@code device} from its pool.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @return an event the caller owns; closing it returns it to the pool
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaEvent acquire(Device device) {
        Cuda.requireCudaDevice(device);
        requireNativeAccess();
        CudaEventPool pool = CudaEventPool.of(device.ordinal());
        MemorySegment e = pool.take();
        return new CudaEvent(e, device, describe("pooled CUDA event", e, device), () -> pool.give(e));
    }

    /**
     * Creates an event that another process can open ({@code CU_EVENT_INTERPROCESS |
     * CU_EVENT_DISABLE_TIMING}, as the driver requires); see {@link #ipcHandle()}. Not pooled:
     * close destroys it.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @return an event the caller owns
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException if the driver refuses
     */
    public static CudaEvent createInterprocess(Device device) {
        Cuda.requireCudaDevice(device);
        requireNativeAccess();
        int ordinal = device.ordinal();
        MemorySegment e = CudaEventPool.create(ordinal,
                cuda_driver_h.CU_EVENT_INTERPROCESS() | cuda_driver_h.CU_EVENT_DISABLE_TIMING());
        return new CudaEvent(e, device, describe("interprocess CUDA event", e, device),
                () -> CudaEventPool.destroy(e, ordinal));
    }

    /** An event opened from another process's handle; close destroys this process's reference. */
    static CudaEvent ofOpened(MemorySegment e, int device) {
        Device identity = Device.cuda(device);
        return new CudaEvent(e, identity, describe("CUDA event opened from an IPC handle", e, identity),
                () -> CudaEventPool.destroy(e, device));
    }

    private static String describe(String what, MemorySegment e, Device device) {
        // concatenation, not String.format: an event handle is made per acquire, on the hot path
        return what + " 0x" + Long.toHexString(e.address()) + " on device " + device.ordinal();
    }

    /** {@return the CUDA device this event belongs to} */
    public Device device() {
        return device;
    }

    /** The device ordinal, for this package's driver calls. */
    int ordinal() {
        return device.ordinal();
    }

    /** {@return the {@code CUevent} value, for handing to native code (e.g. an Arrow device array's sync event)} */
    public long address() {
        ensureLive();
        return raw.address();
    }

    /**
     * Records the work queued on {@code stream} so far ({@code cuEventRecord}); a later record replaces it.
     * The stream must be on this event's device.
     *
     * @param stream the stream to record on; the caller keeps owning it
     * @throws InvalidArgumentException if {@code stream} is of another device
     */
    public void record(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        if (stream.ordinal() != device.ordinal()) {
            throw new InvalidArgumentException("stream", String.format(Locale.ROOT,
                    "expected a stream of device %d (the event's) but found one of device %d", device.ordinal(),
                    stream.device().ordinal()));
        }
        ensureLive();
        MemorySegment s = stream.raw();
        long saved = CudaContext.enter(device.ordinal());
        try {
            CudaDriver.check("cuEventRecord", cuda_driver_h.cuEventRecord(raw, s));
        } finally {
            CudaContext.exit(saved);
        }
    }

    /** Blocks the calling thread until the recorded work finished (at once if never recorded). */
    public void synchronize() {
        ensureLive();
        long saved = CudaContext.enter(device.ordinal());
        try {
            CudaDriver.check("cuEventSynchronize", cuda_driver_h.cuEventSynchronize(raw));
        } finally {
            CudaContext.exit(saved);
        }
    }

    /** {@return {@code true} if the recorded work finished (or nothing was recorded); never blocks} */
    public boolean query() {
        ensureLive();
        long saved = CudaContext.enter(device.ordinal());
        int r;
        try {
            r = cuda_driver_h.cuEventQuery(raw);
        } finally {
            CudaContext.exit(saved);
        }
        if (r == cuda_driver_h.CUDA_ERROR_NOT_READY()) {
            return false;
        }
        CudaDriver.check("cuEventQuery", r);
        return true;
    }

    /**
     * This event's CUDA IPC handle ({@code cuIpcGetEventHandle}), for an event made by
     * {@link #createInterprocess}: 64 bytes that {@link #openIpcHandle(Device, byte[])} opens in another process.
     *
     * @return 64 bytes; the caller keeps owning this event
     * @throws CudaException if the driver refuses (e.g. a pooled event, which is not interprocess)
     */
    public byte[] ipcHandle() {
        return CudaIpc.getEventHandle(this);
    }

    /**
     * Opens an event another process shared with {@link #ipcHandle()} ({@code cuIpcOpenEventHandle}); wait on
     * it with {@link CudaStream#waitEvent} or {@link #synchronize}. Recording it here is allowed too.
     *
     * @param device the CUDA device to open it on ({@link DeviceKind#CUDA})
     * @param handle the 64 bytes the other process shared (only read)
     * @return an event the caller owns; close releases this process's reference. After a throw nothing is
     *     opened.
     * @throws org.devicebridge.InvalidArgumentException if {@code handle} is not 64 bytes, or for a device of
     *     another kind
     * @throws CudaException if the driver refuses
     */
    public static CudaEvent openIpcHandle(Device device, byte[] handle) {
        Cuda.requireCudaDevice(device);
        return CudaIpc.openEventHandle(device.ordinal(), handle);
    }

    /** The {@code CUevent}, checked live. */
    MemorySegment raw() {
        ensureLive();
        return raw;
    }
}
