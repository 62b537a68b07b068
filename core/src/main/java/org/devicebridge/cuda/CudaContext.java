package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * Primary contexts: each device's primary context is retained once, on first use, and kept for the life
 * of the process (as the runtime API does). {@link #enter(int)} makes it current on the calling thread
 * around the driver calls of one library entry point and {@link #exit(long)} restores the caller's context
 * afterwards, on every path. Every entry point here calls
 * {@link CudaDriver#require()} first, so no generated binding runs without a loaded driver.
 */
final class CudaContext {
    /** One pointer-sized slot per thread for cuCtxGetCurrent, so the check allocates nothing. */
    private static final ThreadLocal<MemorySegment> CURRENT_SLOT =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(ADDRESS));

    /**
     * One 8-byte slot per thread for a driver call's out-parameter, so hot paths need no arena. Read it
     * right after the call that fills it: any later driver call on this thread through this class may reuse it.
     */
    private static final ThreadLocal<MemorySegment> OUT_SLOT =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(8, 8));

    private CudaContext() {}

    /** This thread's out-parameter slot (8 bytes, 8-byte aligned); see {@link #OUT_SLOT}. */
    static MemorySegment outSlot() {
        return OUT_SLOT.get();
    }

    /** Initialised on first use, after the driver loaded. */
    private static final class Devices {
        static final int COUNT = count();
        static final AtomicReferenceArray<Primary> PRIMARY = new AtomicReferenceArray<>(COUNT);

        private static int count() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment n = arena.allocate(JAVA_INT);
                CudaDriver.check("cuDeviceGetCount", cuda_driver_h.cuDeviceGetCount(n));
                return n.get(JAVA_INT, 0);
            }
        }
    }

    /**
     * Checks that the driver is loaded and that {@code ordinal} names a device.
     *
     * @throws CudaUnavailableException without a driver
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}, as {@code cuDeviceGet} reports it) if no
     *     device has this ordinal
     */
    static void checkDevice(int ordinal) {
        CudaDriver.require();
        if (ordinal < 0 || ordinal >= Devices.COUNT) {
            int r = cuda_driver_h.CUDA_ERROR_INVALID_DEVICE();
            throw new CudaException("cuDeviceGet", r, CudaDriver.name(r), String.format(Locale.ROOT,
                    "no device with ordinal %d (this machine has %d)", ordinal, Devices.COUNT));
        }
    }

    /** Number of devices (the driver must be loaded). */
    static int deviceCount() {
        CudaDriver.require();
        return Devices.COUNT;
    }

    private record Primary(int device, MemorySegment context) {}

    /** The {@code CUdevice} handle of a device ordinal. */
    static int cuDevice(int ordinal) {
        return retained(ordinal).device();
    }

    /** The device's primary context, retained on first use. */
    static MemorySegment primary(int ordinal) {
        return retained(ordinal).context();
    }

    private static Primary retained(int ordinal) {
        checkDevice(ordinal);
        Primary p = Devices.PRIMARY.get(ordinal);
        if (p != null) {
            return p;
        }
        synchronized (Devices.PRIMARY) { // retain exactly once per device
            p = Devices.PRIMARY.get(ordinal);
            if (p == null) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment dev = arena.allocate(JAVA_INT);
                    CudaDriver.check("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, ordinal));
                    int handle = dev.get(JAVA_INT, 0);
                    MemorySegment out = arena.allocate(ADDRESS);
                    CudaDriver.check("cuDevicePrimaryCtxRetain", cuda_driver_h.cuDevicePrimaryCtxRetain(out, handle));
                    p = new Primary(handle, out.get(ADDRESS, 0));
                    Devices.PRIMARY.set(ordinal, p);
                }
            }
            return p;
        }
    }

    /** What {@link #exit} restores when the context was current already: nothing. */
    static final long UNCHANGED = -1;

    /**
     * Makes the device's primary context current on this thread (one {@code cuCtxGetCurrent}, plus one
     * {@code cuCtxSetCurrent} when another context, or none, was current) and returns what {@link #exit}
     * must restore: the caller's context, or {@link #UNCHANGED}. Every entry point that makes driver calls
     * for a given device brackets them, so that a caller's own context (another device's, or one a native
     * library made current) is current again when the library returns. A thread with no current context
     * keeps the primary context made current here, as the runtime API's lazy initialisation does: code on
     * that thread that calls the driver itself then finds a context, and the single-device path costs one
     * {@code cuCtxGetCurrent} per entry point.
     * {@snippet :
     * long saved = CudaContext.enter(device);
     * try {
     *     // driver calls for device
     * } finally {
     *     CudaContext.exit(saved);
     * }
     * }
     *
     * @throws CudaUnavailableException without a driver
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     */
    static long enter(int ordinal) {
        MemorySegment ctx = primary(ordinal);
        MemorySegment slot = CURRENT_SLOT.get();
        CudaDriver.check("cuCtxGetCurrent", cuda_driver_h.cuCtxGetCurrent(slot));
        long previous = slot.get(ADDRESS, 0).address();
        if (previous == ctx.address()) {
            return UNCHANGED;
        }
        CudaDriver.check("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(ctx));
        return previous == 0 ? UNCHANGED : previous;
    }

    /**
     * Makes sure some context is current on this thread for calls such as {@code cuMemHostAlloc} or
     * {@code cuPointerGetAttributes} that need one but no particular one: the caller's if it has one,
     * otherwise device 0's primary context (which every machine with a device has), left current as
     * {@link #enter} leaves it for a thread that had none. Returns what {@link #exit} must restore.
     *
     * @throws CudaUnavailableException without a driver
     */
    static long enterAny() {
        CudaDriver.require();
        MemorySegment slot = CURRENT_SLOT.get();
        CudaDriver.check("cuCtxGetCurrent", cuda_driver_h.cuCtxGetCurrent(slot));
        if (slot.get(ADDRESS, 0).address() != 0) {
            return UNCHANGED;
        }
        return enter(0);
    }

    /**
     * Makes current again the context {@link #enter} or {@link #enterAny} found ({@code cuCtxSetCurrent}),
     * unless it was {@link #UNCHANGED}.
     *
     * @param saved what {@code enter} returned
     */
    static void exit(long saved) {
        if (saved != UNCHANGED) {
            CudaDriver.check("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(MemorySegment.ofAddress(saved)));
        }
    }
}
