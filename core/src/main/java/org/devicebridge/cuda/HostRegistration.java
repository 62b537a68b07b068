package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;

/**
 * Page-locks existing native host memory ({@code cuMemHostRegister}, {@code CU_MEMHOSTREGISTER_PORTABLE})
 * so that asynchronous copies from and to it can overlap with other work; {@link #close()} unregisters it
 * ({@code cuMemHostUnregister}). The memory itself stays owned by whoever allocated it and must outlive
 * this registration: close the registration before the segment's arena.
 *
 * <p>Thread safety: {@code close()} is idempotent and thread-safe, as every handle's.
 */
public final class HostRegistration extends NativeHandle {
    private final MemorySegment segment;

    private HostRegistration(MemorySegment segment, ReleaseAction release) {
        super(String.format(Locale.ROOT, "CUDA host registration (0x%x, %d bytes)", segment.address(),
                segment.byteSize()), release);
        this.segment = segment;
    }

    /**
     * Registers a native segment with CUDA.
     *
     * @param segment native memory of at least one byte, not registered already
     * @return a registration the caller owns and closes; the segment stays the caller's
     * @throws InvalidArgumentException if the segment is a heap segment or empty
     * @throws HandleClosedException if the segment's arena is closed
     * @throws CudaException if the driver refuses (e.g. {@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED})
     */
    public static HostRegistration register(MemorySegment segment) {
        requireNativeAccess();
        CudaCopies.checkHost(segment, "segment");
        if (segment.byteSize() == 0) {
            throw new InvalidArgumentException("segment", "expected at least one byte to register but found an empty segment");
        }
        long bytes = segment.byteSize();
        long saved = CudaContext.enterAny();
        try {
            CudaDriver.check("cuMemHostRegister_v2", cuda_driver_h.cuMemHostRegister_v2(segment, bytes,
                    cuda_driver_h.CU_MEMHOSTREGISTER_PORTABLE()));
        } finally {
            CudaContext.exit(saved);
        }
        CudaCounters.memHostRegister();
        MemorySegment base = MemorySegment.ofAddress(segment.address());
        return new HostRegistration(segment, () -> {
            PointerAttributes.invalidate(base.address());
            long savedOnFree = CudaContext.enterAny();
            try {
                CudaDriver.check("cuMemHostUnregister", cuda_driver_h.cuMemHostUnregister(base));
            } finally {
                CudaContext.exit(savedOnFree);
            }
        });
    }

    /** {@return the registered segment (owned by the caller of {@link #register})} */
    public MemorySegment segment() {
        ensureLive();
        return segment;
    }

    /** {@return {@code true} while registered} */
    public boolean isRegistered() {
        return isLive();
    }
}
