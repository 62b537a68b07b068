package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * Copies between host memory and device memory, between devices ({@link #copyPeer}), and device fills. Each copy comes as a synchronous call,
 * which returns when the data arrived, and as {@code ...Async(..., stream)}, which only queues the copy on
 * {@code stream}. The synchronous forms use the driver's {@code cuMemcpy*} and {@code cuMemsetD8} on the
 * legacy default stream and then wait for that stream ({@code cuStreamSynchronize}): the driver alone
 * returns early for device-to-device copies, fills and copies from pageable memory. Like every
 * legacy-stream operation they are ordered after work on blocking streams, not on non-blocking ones.
 *
 * <p>For an async copy the caller keeps owning every argument and must keep the host segment's memory
 * and the device buffers alive, and must not touch the destination, until the stream reached the copy
 * (synchronize the stream, or record an event and wait for it). Asynchronous copies overlap with other
 * work only when the host memory is pinned ({@link PinnedHostBuffer}); from
 * pageable memory the driver stages them and may return only after the copy. Host segments must be
 * native (off-heap) memory. Copies of zero bytes do nothing.
 *
 * <p>Argument errors (a heap or read-only host segment, a range outside a buffer) throw
 * {@link InvalidArgumentException} before anything is queued; a closed buffer or stream throws
 * {@link HandleClosedException}.
 *
 * <p>Stateless and thread-safe; the caller keeps owning every segment, buffer, range and stream it
 * passes.
 */
public final class CudaCopies {
    private CudaCopies() {}

    /**
     * Copies all of {@code src} into {@code dst} at {@code dstOffset}; returns when the copy is done.
     *
     * @param src the host memory to copy (the caller keeps owning it)
     * @param dst the destination device buffer; the caller keeps owning it
     * @param dstOffset the byte offset in {@code dst}
     */
    public static void hostToDevice(MemorySegment src, DeviceBuffer dst, long dstOffset) {
        requireNativeAccess();
        checkHost(src, "src");
        Objects.requireNonNull(dst, "dst");
        long bytes = src.byteSize();
        long d = dst.addressOf(dstOffset, bytes);
        if (bytes == 0) {
            return;
        }
        inContext(dst.ordinal(), "cuMemcpyHtoD_v2",
                () -> cuda_driver_h.cuMemcpyHtoD_v2(d, src, bytes), Wait.LEGACY_STREAM);
    }

    /**
     * Queues a copy of all of {@code src} into {@code dst} at {@code dstOffset} on {@code stream}.
     *
     * @param src the host memory to copy (the caller keeps owning it)
     * @param dst the destination device buffer; the caller keeps owning it
     * @param dstOffset the byte offset in {@code dst}
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     */
    public static void hostToDeviceAsync(MemorySegment src, DeviceBuffer dst, long dstOffset, CudaStream stream) {
        requireNativeAccess();
        checkHost(src, "src");
        Objects.requireNonNull(dst, "dst");
        Objects.requireNonNull(stream, "stream");
        long bytes = src.byteSize();
        long d = dst.addressOf(dstOffset, bytes);
        MemorySegment s = stream.raw();
        if (bytes == 0) {
            return;
        }
        inContext(stream.ordinal(), "cuMemcpyHtoDAsync_v2",
                () -> cuda_driver_h.cuMemcpyHtoDAsync_v2(d, src, bytes, s), Wait.NONE);
    }

    /**
     * Copies {@code dst.byteSize()} bytes of {@code src} from {@code srcOffset} into {@code dst}; blocks.
     *
     * @param src the source device buffer; the caller keeps owning it
     * @param srcOffset the byte offset in {@code src}
     * @param dst the host memory to copy into (the caller keeps owning it)
     */
    public static void deviceToHost(DeviceBuffer src, long srcOffset, MemorySegment dst) {
        requireNativeAccess();
        Objects.requireNonNull(src, "src");
        checkHost(dst, "dst");
        long bytes = dst.byteSize();
        long s = src.addressOf(srcOffset, bytes);
        if (bytes == 0) {
            return;
        }
        checkWritable(dst);
        inContext(src.ordinal(), "cuMemcpyDtoH_v2", () -> cuda_driver_h.cuMemcpyDtoH_v2(dst, s, bytes), Wait.NONE);
    }

    /**
     * Queues a copy of {@code dst.byteSize()} bytes of {@code src} from {@code srcOffset} into {@code dst}.
     *
     * @param src the source device buffer; the caller keeps owning it
     * @param srcOffset the byte offset in {@code src}
     * @param dst the host memory to copy into (the caller keeps owning it)
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     */
    public static void deviceToHostAsync(DeviceBuffer src, long srcOffset, MemorySegment dst, CudaStream stream) {
        requireNativeAccess();
        Objects.requireNonNull(src, "src");
        checkHost(dst, "dst");
        Objects.requireNonNull(stream, "stream");
        long bytes = dst.byteSize();
        long s = src.addressOf(srcOffset, bytes);
        MemorySegment st = stream.raw();
        if (bytes == 0) {
            return;
        }
        checkWritable(dst);
        inContext(stream.ordinal(), "cuMemcpyDtoHAsync_v2",
                () -> cuda_driver_h.cuMemcpyDtoHAsync_v2(dst, s, bytes, st), Wait.NONE);
    }

    /**
     * Copies all of {@code src} into {@code dst} at {@code dstOffset} (possibly the same buffer, not
     * overlapping); returns when the copy is done.
     *
     * @param src the source range
     * @param dst the destination device buffer; the caller keeps owning it
     * @param dstOffset the byte offset in {@code dst}
     */
    public static void deviceToDevice(DeviceRange src, DeviceBuffer dst, long dstOffset) {
        requireNativeAccess();
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        long bytes = src.byteSize();
        long s = src.address();
        long d = dst.addressOf(dstOffset, bytes);
        if (bytes == 0) {
            return;
        }
        inContext(dst.ordinal(), "cuMemcpyDtoD_v2",
                () -> cuda_driver_h.cuMemcpyDtoD_v2(d, s, bytes), Wait.LEGACY_STREAM);
    }

    /**
     * Queues a copy of all of {@code src} into {@code dst} at {@code dstOffset} on {@code stream}.
     *
     * @param src the source range
     * @param dst the destination device buffer; the caller keeps owning it
     * @param dstOffset the byte offset in {@code dst}
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     */
    public static void deviceToDeviceAsync(DeviceRange src, DeviceBuffer dst, long dstOffset, CudaStream stream) {
        requireNativeAccess();
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        Objects.requireNonNull(stream, "stream");
        long bytes = src.byteSize();
        long s = src.address();
        long d = dst.addressOf(dstOffset, bytes);
        MemorySegment st = stream.raw();
        if (bytes == 0) {
            return;
        }
        inContext(stream.ordinal(), "cuMemcpyDtoDAsync_v2",
                () -> cuda_driver_h.cuMemcpyDtoDAsync_v2(d, s, bytes, st), Wait.NONE);
    }

    /**
     * Copies all of {@code src} into {@code dst} at {@code dstOffset}, where the two buffers may be on
     * different devices ({@code cuMemcpyPeer} between their primary contexts); returns when the copy is
     * done. The copy goes over NVLink or PCIe peer-to-peer where the driver can, through host memory
     * otherwise: {@link Cuda#enablePeerAccess} is not required, only faster. Work that wrote {@code src}
     * must have finished (or been ordered before the legacy default stream of {@code dst}'s device).
     *
     * @param src the source range, on any device; the caller keeps owning its buffer
     * @param dst the destination device buffer, on any device; the caller keeps owning it
     * @param dstOffset the byte offset in {@code dst}
     * @throws InvalidArgumentException if the range does not fit in {@code dst} at {@code dstOffset}
     * @throws HandleClosedException if a buffer is closed
     * @throws CudaException if the driver fails
     */
    public static void copyPeer(DeviceRange src, DeviceBuffer dst, long dstOffset) {
        requireNativeAccess();
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        long bytes = src.byteSize();
        long s = src.address();
        long d = dst.addressOf(dstOffset, bytes);
        if (bytes == 0) {
            return;
        }
        MemorySegment srcContext = CudaContext.primary(src.buffer().ordinal());
        MemorySegment dstContext = CudaContext.primary(dst.ordinal());
        inContext(dst.ordinal(), "cuMemcpyPeer",
                () -> cuda_driver_h.cuMemcpyPeer(d, dstContext, s, srcContext, bytes), Wait.LEGACY_STREAM);
    }

    /**
     * Queues on {@code stream} a copy of all of {@code src} into {@code dst} at {@code dstOffset}, where the
     * two buffers may be on different devices ({@code cuMemcpyPeerAsync} between their primary contexts).
     * {@code stream} may belong to either device: the copy is ordered after the work queued on it before,
     * and work queued on it after sees the data. Work on the other device's streams that wrote
     * {@code src} (or still reads {@code dst}) must be ordered first, e.g. with an event recorded there and
     * {@link CudaStream#waitEvent} on {@code stream}: waiting on another device's event is legal. Both
     * buffers must stay open until the copy finished.
     *
     * @param src the source range, on any device; the caller keeps owning its buffer
     * @param dst the destination device buffer, on any device; the caller keeps owning it
     * @param dstOffset the byte offset in {@code dst}
     * @param stream a stream of {@code src}'s or {@code dst}'s device; the caller keeps owning it
     * @throws InvalidArgumentException if the range does not fit in {@code dst} at {@code dstOffset}, or
     *     {@code stream} belongs to a third device
     * @throws HandleClosedException if a buffer or the stream is closed
     * @throws CudaException if the driver fails
     */
    public static void copyPeerAsync(DeviceRange src, DeviceBuffer dst, long dstOffset, CudaStream stream) {
        requireNativeAccess();
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        Objects.requireNonNull(stream, "stream");
        int srcDevice = src.buffer().ordinal();
        if (stream.ordinal() != srcDevice && stream.ordinal() != dst.ordinal()) {
            throw new InvalidArgumentException("stream", String.format(Locale.ROOT,
                    "expected a stream of device %d or %d (the source's or the destination's) but found one of device %d",
                    srcDevice, dst.ordinal(), stream.ordinal()));
        }
        long bytes = src.byteSize();
        long s = src.address();
        long d = dst.addressOf(dstOffset, bytes);
        MemorySegment st = stream.raw();
        if (bytes == 0) {
            return;
        }
        MemorySegment srcContext = CudaContext.primary(srcDevice);
        MemorySegment dstContext = CudaContext.primary(dst.ordinal());
        inContext(stream.ordinal(), "cuMemcpyPeerAsync",
                () -> cuda_driver_h.cuMemcpyPeerAsync(d, dstContext, s, srcContext, bytes, st), Wait.NONE);
    }

    /**
     * Sets every byte of {@code dst} to {@code value}; returns when done.
     *
     * @param dst the destination range
     * @param value the byte to write
     */
    public static void fill(DeviceRange dst, byte value) {
        requireNativeAccess();
        Objects.requireNonNull(dst, "dst");
        long bytes = dst.byteSize();
        long d = dst.address();
        if (bytes == 0) {
            return;
        }
        inContext(dst.buffer().ordinal(), "cuMemsetD8_v2",
                () -> cuda_driver_h.cuMemsetD8_v2(d, value, bytes), Wait.LEGACY_STREAM);
    }

    /**
     * Queues setting every byte of {@code dst} to {@code value} on {@code stream}.
     *
     * @param dst the destination range
     * @param value the byte to write
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     */
    public static void fillAsync(DeviceRange dst, byte value, CudaStream stream) {
        requireNativeAccess();
        Objects.requireNonNull(dst, "dst");
        Objects.requireNonNull(stream, "stream");
        long bytes = dst.byteSize();
        long d = dst.address();
        MemorySegment st = stream.raw();
        if (bytes == 0) {
            return;
        }
        inContext(stream.ordinal(), "cuMemsetD8Async",
                () -> cuda_driver_h.cuMemsetD8Async(d, value, bytes, st), Wait.NONE);
    }

    /** What a copy waits for after its driver call returns. */
    private enum Wait {
        /** Nothing: the call itself returned when done, or only queued the work. */
        NONE,
        /** The legacy default stream, where the synchronous driver calls queue their work. */
        LEGACY_STREAM
    }

    /** One driver call returning a {@code CUresult}. */
    @FunctionalInterface
    private interface DriverCall {
        int invoke();
    }

    /**
     * Makes {@code device}'s primary context current, makes {@code call} (a failure is a {@link CudaException}
     * naming {@code function}), waits as {@code wait} says, and makes the caller's context current again.
     */
    private static void inContext(int device, String function, DriverCall call, Wait wait) {
        long saved = CudaContext.enter(device);
        try {
            CudaDriver.check(function, call.invoke());
            if (wait == Wait.LEGACY_STREAM) {
                syncLegacyStream();
            }
        } finally {
            CudaContext.exit(saved);
        }
    }

    /** Waits for the legacy default stream, where the synchronous driver calls queue their work. */
    private static void syncLegacyStream() {
        CudaDriver.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(MemorySegment.NULL));
    }

    /** A host segment the driver may read or write: native, and its arena still open. */
    static void checkHost(MemorySegment segment, String name) {
        Objects.requireNonNull(segment, name);
        if (!segment.isNative()) {
            throw new InvalidArgumentException(name, "expected native (off-heap) memory but found a heap segment");
        }
        if (!segment.scope().isAlive()) {
            throw new HandleClosedException(name + ": the segment's arena is closed");
        }
    }

    private static void checkWritable(MemorySegment dst) {
        if (dst.isReadOnly()) {
            throw new InvalidArgumentException("dst", "expected a writable segment but found a read-only one");
        }
    }
}
