package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;

/**
 * Page-locked host memory from {@code cuMemHostAlloc} ({@code CU_MEMHOSTALLOC_PORTABLE}: pinned for every
 * context), the kind asynchronous copies can overlap with other work. {@link #segment()} is bounded to
 * this handle: after {@link #close()} it can no longer be accessed. Allocating pinned memory is slow;
 * allocate once and reuse (as {@link HostDeviceTransfer} does).
 */
public final class PinnedHostBuffer extends NativeHandle {
    private final MemorySegment segment;

    private PinnedHostBuffer(MemorySegment segment, String description, ReleaseAction release) {
        super(description, release);
        this.segment = segment;
    }

    /**
     * Allocates pinned host memory. Zero bytes allocate nothing (an empty segment).
     *
     * @return a buffer the caller owns and closes
     * @throws InvalidArgumentException if {@code bytes} is negative
     * @throws CudaException if the driver fails
     */
    public static PinnedHostBuffer allocate(long bytes) {
        if (bytes < 0) {
            throw new InvalidArgumentException("bytes", "expected a byte size >= 0 but found " + bytes);
        }
        CudaContext.ensureAnyCurrent();
        if (bytes == 0) {
            return new PinnedHostBuffer(MemorySegment.NULL, "empty pinned host buffer", () -> { });
        }
        MemorySegment base;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            CudaDriver.check("cuMemHostAlloc",
                    cuda_driver_h.cuMemHostAlloc(out, bytes, cuda_driver_h.CU_MEMHOSTALLOC_PORTABLE()));
            base = out.get(ADDRESS, 0);
        }
        CudaCounters.memHostAlloc(bytes);
        try {
            PointerAttributes.registerOwnQueried(base.address(), bytes);
        } catch (RuntimeException e) {
            cuda_driver_h.cuMemFreeHost(base);
            CudaCounters.pinnedFreed(bytes);
            throw e;
        }
        Arena scope = Arena.ofShared();
        MemorySegment segment = base.reinterpret(bytes, scope, null);
        long address = base.address();
        return new PinnedHostBuffer(segment, String.format(Locale.ROOT, "pinned host buffer (0x%x, %d bytes)",
                address, bytes), () -> {
                    // Closing the arena first makes every copy of segment() unusable before the memory goes.
                    // If it cannot close (a thread is using the segment right now), the memory is leaked
                    // rather than freed under that thread's feet.
                    scope.close();
                    PointerAttributes.unregisterOwn(address);
                    try {
                        CudaContext.ensureAnyCurrent();
                        CudaDriver.check("cuMemFreeHost", cuda_driver_h.cuMemFreeHost(MemorySegment.ofAddress(address)));
                    } finally {
                        CudaCounters.pinnedFreed(bytes);
                    }
                });
    }

    /** The pinned memory; valid until this handle is closed. */
    public MemorySegment segment() {
        ensureLive();
        return segment;
    }

    /** The size in bytes. */
    public long byteSize() {
        return segment.byteSize();
    }
}
