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
 * Page-locked host memory, the kind asynchronous copies can overlap with other work: either allocated by
 * {@link #allocate} ({@code cuMemHostAlloc}, {@code CU_MEMHOSTALLOC_PORTABLE}: pinned for every context), or
 * existing native memory page-locked in place by {@link #register} ({@code cuMemHostRegister}).
 * {@link #segment()} is bounded to this handle: after {@link #close()} it can no longer be accessed. Pinning
 * memory is slow; pin once and reuse (as {@link HostDeviceTransfer} does).
 *
 * <p>An allocated buffer owns the pinned memory and frees it on {@code close()}; a registered one
 * unregisters the memory on {@code close()} and leaves it to whoever allocated it. {@code close()} is
 * idempotent and thread-safe; the segment may be used from any thread while the handle is live.
 */
public final class PinnedHostBuffer extends NativeHandle {
    private final long address;
    private final long byteSize;
    private volatile MemorySegment segment; // in this handle's arena, made on the first segment() call

    private PinnedHostBuffer(long address, long byteSize, String description, AutoCloseable release) {
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
     * Page-locks existing native host memory ({@code cuMemHostRegister}, {@code CU_MEMHOSTREGISTER_PORTABLE})
     * so that asynchronous copies from and to it can overlap with other work; {@link #close()} unregisters it
     * ({@code cuMemHostUnregister}). The memory stays owned by whoever allocated it and must outlive the
     * returned handle: close the handle before the segment's arena.
     *
     * @param segment native memory of at least one byte, not registered already
     * @return a handle the caller owns and closes; the memory stays the caller's. After a throw nothing is
     *     registered.
     * @throws InvalidArgumentException if the segment is a heap segment or empty
     * @throws org.devicebridge.HandleClosedException if the segment's arena is closed
     * @throws CudaException if the driver refuses (e.g. {@code CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED})
     */
    public static PinnedHostBuffer register(MemorySegment segment) {
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
        long address = segment.address();
        return new PinnedHostBuffer(address, bytes, String.format(Locale.ROOT,
                "registered pinned host memory (0x%x, %d bytes)", address, bytes), () -> {
                    PointerAttributes.invalidate(address);
                    long savedOnFree = CudaContext.enterAny();
                    try {
                        CudaDriver.check("cuMemHostUnregister",
                                cuda_driver_h.cuMemHostUnregister(MemorySegment.ofAddress(address)));
                    } finally {
                        CudaContext.exit(savedOnFree);
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
