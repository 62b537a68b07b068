package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;
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
 *
 * <p>The handle owns the pinned memory and frees it on {@code close()} (idempotent and thread-safe); the
 * segment may be used from any thread while the handle is live.
 */
public final class PinnedHostBuffer extends NativeHandle {
    private final long address;
    private final long byteSize;
    private volatile MemorySegment segment; // in this handle's arena, made on the first segment() call

    private PinnedHostBuffer(long address, long byteSize, String description, ReleaseAction release) {
        super(description, release);
        this.address = address;
        this.byteSize = byteSize;
    }

    /**
     * Allocates pinned host memory. Zero bytes allocate nothing (an empty segment).
     *
     * @param bytes the size in bytes
     * @return a buffer the caller owns and closes
     * @throws InvalidArgumentException if {@code bytes} is negative
     * @throws CudaException if the driver fails
     */
    public static PinnedHostBuffer allocate(long bytes) {
        requireNativeAccess();
        if (bytes < 0) {
            throw new InvalidArgumentException("bytes", "expected a byte size >= 0 but found " + bytes);
        }
        CudaDriver.require();
        if (bytes == 0) {
            return new PinnedHostBuffer(0, 0, "empty pinned host buffer", () -> { });
        }
        MemorySegment base;
        long saved = CudaContext.enterAny();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            CudaDriver.check("cuMemHostAlloc",
                    cuda_driver_h.cuMemHostAlloc(out, bytes, cuda_driver_h.CU_MEMHOSTALLOC_PORTABLE()));
            base = out.get(ADDRESS, 0);
        } finally {
            CudaContext.exit(saved);
        }
        CudaCounters.memHostAlloc(bytes);
        try {
            PointerAttributes.registerOwnQueried(base.address(), bytes);
        } catch (RuntimeException e) {
            long savedOnFree = CudaContext.enterAny();
            try {
                cuda_driver_h.cuMemFreeHost(base);
            } finally {
                CudaContext.exit(savedOnFree);
            }
            CudaCounters.pinnedFreed(bytes);
            throw e;
        }
        long address = base.address();
        // The free runs as the cleanup of this handle's arena: after every segment() is unusable, and never
        // while a native call holds one (close() then throws HandleBusyException and frees nothing).
        return new PinnedHostBuffer(address, bytes, String.format(Locale.ROOT, "pinned host buffer (0x%x, %d bytes)",
                address, bytes), () -> {
                    PointerAttributes.unregisterOwn(address);
                    try {
                        long savedOnFree = CudaContext.enterAny();
                        try {
                            CudaDriver.check("cuMemFreeHost", cuda_driver_h.cuMemFreeHost(MemorySegment.ofAddress(address)));
                        } finally {
                            CudaContext.exit(savedOnFree);
                        }
                    } finally {
                        CudaCounters.pinnedFreed(bytes);
                    }
                });
    }

    /**
     * The pinned memory, in this handle's arena: unusable once the handle is closed, and a native call that
     * holds it keeps {@link #close()} from freeing the memory (it throws
     * {@link org.devicebridge.HandleBusyException} instead).
     *
     * @return the pinned memory, borrowed from this handle
     * @throws org.devicebridge.HandleClosedException if the buffer was closed
     */
    public MemorySegment segment() {
        ensureLive();
        if (byteSize == 0) {
            return MemorySegment.NULL;
        }
        MemorySegment s = segment;
        if (s == null) {
            s = segment(address, byteSize);
            segment = s;
        }
        return s;
    }

    /** {@return the size in bytes} */
    public long byteSize() {
        return byteSize;
    }
}
