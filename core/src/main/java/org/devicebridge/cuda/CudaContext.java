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
 * of the process (as the runtime API does); {@link #makeCurrent(int)} makes it current on the calling
 * thread before a driver call that needs a context. Every entry point here calls
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

    /** Makes the device's primary context current on this thread, unless it already is. */
    static void makeCurrent(int ordinal) {
        MemorySegment ctx = primary(ordinal);
        MemorySegment slot = CURRENT_SLOT.get();
        CudaDriver.check("cuCtxGetCurrent", cuda_driver_h.cuCtxGetCurrent(slot));
        if (slot.get(ADDRESS, 0).address() != ctx.address()) {
            CudaDriver.check("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(ctx));
        }
    }

    /**
     * Makes sure some context is current on this thread (device 0's primary context if none is), for calls
     * such as cuMemHostAlloc or cuPointerGetAttributes that need one but no particular one.
     */
    static void ensureAnyCurrent() {
        CudaDriver.require();
        MemorySegment slot = CURRENT_SLOT.get();
        CudaDriver.check("cuCtxGetCurrent", cuda_driver_h.cuCtxGetCurrent(slot));
        if (slot.get(ADDRESS, 0).address() == 0) {
            makeCurrent(0);
        }
    }
}
