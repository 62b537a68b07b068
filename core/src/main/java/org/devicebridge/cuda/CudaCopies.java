package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * Copies between host memory and device memory, and device fills. Each copy comes as a synchronous call,
 * which returns when the data arrived, and as {@code ...Async(..., stream)}, which only queues the copy on
 * {@code stream}. The synchronous forms use the driver's {@code cuMemcpy*} and {@code cuMemsetD8} on the
 * legacy default stream and then wait for that stream ({@code cuStreamSynchronize}): the driver alone
 * returns early for device-to-device copies, fills and copies from pageable memory. Like every
 * legacy-stream operation they are ordered after work on blocking streams, not on non-blocking ones.
 *
 * <p>For an async copy the caller keeps owning every argument and must keep the host segment's memory
 * and the device buffers alive, and must not touch the destination, until the stream reached the copy
 * (synchronize the stream, or record an event and wait for it). Asynchronous copies overlap with other
 * work only when the host memory is pinned ({@link PinnedHostBuffer}, {@link HostRegistration}); from
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
     * @param src the source memory
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
        CudaContext.makeCurrent(dst.device());
        CudaDriver.check("cuMemcpyHtoD_v2", cuda_driver_h.cuMemcpyHtoD_v2(d, src, bytes));
        syncLegacyStream();
    }

    /**
     * Queues a copy of all of {@code src} into {@code dst} at {@code dstOffset} on {@code stream}.
     *
     * @param src the source memory
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
        CudaContext.makeCurrent(stream.device());
        CudaDriver.check("cuMemcpyHtoDAsync_v2", cuda_driver_h.cuMemcpyHtoDAsync_v2(d, src, bytes, s));
    }

    /**
     * Copies {@code dst.byteSize()} bytes of {@code src} from {@code srcOffset} into {@code dst}; blocks.
     *
     * @param src the source device buffer; the caller keeps owning it
     * @param srcOffset the byte offset in {@code src}
     * @param dst the destination memory
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
        CudaContext.makeCurrent(src.device());
        CudaDriver.check("cuMemcpyDtoH_v2", cuda_driver_h.cuMemcpyDtoH_v2(dst, s, bytes));
    }

    /**
     * Queues a copy of {@code dst.byteSize()} bytes of {@code src} from {@code srcOffset} into {@code dst}.
     *
     * @param src the source device buffer; the caller keeps owning it
     * @param srcOffset the byte offset in {@code src}
     * @param dst the destination memory
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
        CudaContext.makeCurrent(stream.device());
        CudaDriver.check("cuMemcpyDtoHAsync_v2", cuda_driver_h.cuMemcpyDtoHAsync_v2(dst, s, bytes, st));
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
        CudaContext.makeCurrent(dst.device());
        CudaDriver.check("cuMemcpyDtoD_v2", cuda_driver_h.cuMemcpyDtoD_v2(d, s, bytes));
        syncLegacyStream();
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
        CudaContext.makeCurrent(stream.device());
        CudaDriver.check("cuMemcpyDtoDAsync_v2", cuda_driver_h.cuMemcpyDtoDAsync_v2(d, s, bytes, st));
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
        CudaContext.makeCurrent(dst.buffer().device());
        CudaDriver.check("cuMemsetD8_v2", cuda_driver_h.cuMemsetD8_v2(d, value, bytes));
        syncLegacyStream();
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
        CudaContext.makeCurrent(stream.device());
        CudaDriver.check("cuMemsetD8Async", cuda_driver_h.cuMemsetD8Async(d, value, bytes, st));
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
