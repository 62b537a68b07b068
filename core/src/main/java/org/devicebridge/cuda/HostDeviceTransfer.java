package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;

/**
 * Moves batches of host buffers to one device and back, at the speed of the link where the host memory allows
 * it. Each buffer is classified once per batch ({@link PointerAttributes#isPageLocked}): page-locked (pinned)
 * memory is copied by the copy engine directly ({@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync} on the
 * caller's stream); pageable memory goes through a ring of pinned staging chunks, allocated once per transfer
 * object and each guarded by its own event, which shared worker threads pack (or unpack) while the copy engine
 * moves the chunks before (docs/transfers.md). An upload packs a batch into <em>one</em> stream-ordered device
 * allocation, each buffer at a {@value #ALIGNMENT}-byte aligned offset, the bytes between buffers zero. Nothing
 * on the steady-state path creates an event, a thread or pinned memory.
 *
 * <p>Synchronisation: a download returns when the data arrived (one host wait per batch into page-locked
 * memory, one per staging chunk otherwise); {@link #downloadAsync} lets the caller work once the leading ranges
 * arrived. {@link #upload} returns when the host buffers may be changed; {@link #uploadAsync} returns once the
 * copies are queued, and the caller works before it {@linkplain DeviceUpload#await() awaits} the direct copies.
 *
 * <p>One transfer object serves one device and one batch at a time (its methods are serialised, and may be
 * called from any thread); it is an owning handle of its staging memory and events: {@link #close()} waits for
 * the copies still using the staging memory (a close from another thread also waits for a running batch), then
 * frees it and returns the events to their pool. Idempotent and thread-safe, as every handle's close.
 */
public final class HostDeviceTransfer extends NativeHandle {
    /** Alignment of every buffer in an uploaded allocation, as Arrow recommends for its buffers. */
    public static final int ALIGNMENT = 64;

    private final TransferEngine engine;

    private HostDeviceTransfer(TransferEngine engine) {
        super("host-device transfer for device " + engine.device, engine::close);
        this.engine = engine;
    }

    /**
     * Creates a transfer object for {@code device} with {@code stagingBytes} of pinned staging memory, in chunks
     * of {@link TransferOptions#DEFAULT_CHUNK_BYTES} (or half of it, if smaller).
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param stagingBytes at least {@code 2 * ALIGNMENT}
     * @return a transfer object the caller owns and closes
     * @throws InvalidArgumentException if {@code stagingBytes} is too small, or for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     */
    public static HostDeviceTransfer create(Device device, long stagingBytes) {
        Cuda.requireCudaDevice(device);
        requireNativeAccess();
        return create(device, TransferOptions.defaults().withStagingBytes(stagingBytes));
    }

    /**
     * Creates a transfer object for {@code device}: allocates its staging ring (pinned, one
     * {@code cuMemHostAlloc}) and takes its events from the device's pool.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @param options the staging memory, chunk size and threads
     * @return a transfer object the caller owns and closes; after a throw nothing is held
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal, or if the driver
     *     cannot allocate the staging memory
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static HostDeviceTransfer create(Device device, TransferOptions options) {
        Cuda.requireCudaDevice(device);
        requireNativeAccess();
        return new HostDeviceTransfer(TransferEngine.create(device.ordinal(), Objects.requireNonNull(options, "options")));
    }

    /** {@return the CUDA device this transfer copies to and from} */
    public Device device() {
        return engine.identity;
    }

    /** {@return the bytes one staging chunk holds: the unit of one staged copy} */
    public long chunkBytes() {
        return engine.ring.chunkBytes();
    }

    /**
     * {@return the bytes this transfer object moved through its staging ring so far (with the padding between
     * packed buffers): what did not go directly between page-locked host memory and the device, so a caller
     * whose host memory is pinned sees it stay unchanged}
     */
    public long stagedBytes() {
        return engine.stats.stagedBytes();
    }

    /** What this transfer object did so far: the tests' view of direct and staged copies and host waits. */
    TransferStatistics.Snapshot statistics() {
        return engine.stats.snapshot();
    }

    /**
     * Packs {@code buffers} into one new device allocation, queues the copies on {@code stream}, and waits (once)
     * for the direct copies, if any: when this returns the caller may change or free the host buffers. The device
     * data is ready for work queued on {@code stream} after this call (other streams must wait on an event
     * recorded on {@code stream}). Padding bytes between buffers are zero.
     *
     * @param buffers native host segments, in any memory; empty segments get an offset and no bytes
     * @param stream a stream of this transfer's device; the caller keeps owning it, and it must stay open until
     *     the returned allocation is freed (which is queued on it)
     * @return the allocation and the offsets, which the caller owns. After a throw the caller owns nothing new
     *     (an allocation made before the failure is freed), and no copy reads a buffer any more
     * @throws InvalidArgumentException for heap segments or a stream of another device
     * @throws org.devicebridge.HandleClosedException if this transfer, the stream or a buffer's arena is closed
     * @throws CudaException if a driver call fails
     */
    public DeviceUpload upload(List<MemorySegment> buffers, CudaStream stream) {
        DeviceUpload up = uploadAsync(buffers, stream);
        try {
            up.await();
        } catch (RuntimeException | Error e) {
            up.close();
            throw e;
        }
        return up;
    }

    /**
     * As {@link #upload}, without waiting for the direct copies: pageable buffers have been read (into staging
     * chunks) when this returns, and the copy engine reads page-locked ones until the upload's
     * {@link DeviceUpload#await()} returns, or {@code stream} reaches the upload. The caller may do host work
     * meanwhile (reading, not changing, the buffers). What it keeps alive: each staging chunk until its own event
     * (reused or freed only after it), the allocation until its stream-ordered free, the direct copies' event
     * until the upload's {@code await()} or {@code close()}.
     *
     * @param buffers native host segments, in any memory; empty segments get an offset and no bytes
     * @param stream a stream of this transfer's device; the caller keeps owning it, and it must stay open until
     *     the returned allocation is freed (which is queued on it)
     * @return the allocation and the offsets, which the caller owns; the caller keeps the page-locked buffers
     *     alive and unchanged until {@code await()}, an event recorded on {@code stream} after this call, or
     *     {@link CudaStream#closeAfterQueuedWork}. After a throw the caller owns nothing new, and no copy reads a
     *     buffer any more
     * @throws InvalidArgumentException for heap segments or a stream of another device
     * @throws org.devicebridge.HandleClosedException if this transfer, the stream or a buffer's arena is closed
     * @throws org.devicebridge.HandleBusyException if this thread has a download in flight on this transfer
     * @throws CudaException if a driver call fails
     */
    public DeviceUpload uploadAsync(List<MemorySegment> buffers, CudaStream stream) {
        engine.lock();
        try {
            ensureLive();
            try (StreamTransferOps ops = engine.ops(stream)) {
                return engine.upload(buffers, stream, ops);
            }
        } finally {
            engine.unlock();
        }
    }

    /**
     * Copies ranges of a device buffer into new host segments allocated from {@code arena}
     * ({@value #ALIGNMENT}-byte aligned), as {@link #download(List, List, CudaStream)} does.
     *
     * @param src the ranges (for a whole uploaded batch: {@link DeviceUpload#ranges()}); the caller keeps owning
     *     their buffers
     * @param arena allocates the results; the caller owns it (memory of a pinned arena is copied into directly)
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @return one segment per range, filled, which {@code arena} owns
     * @throws InvalidArgumentException if the stream or the buffer is of another device
     * @throws CudaException if a driver call fails
     */
    public List<MemorySegment> download(List<DeviceRange> src, Arena arena, CudaStream stream) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(arena, "arena");
        List<MemorySegment> out = new ArrayList<>(src.size());
        for (DeviceRange range : src) {
            out.add(arena.allocate(Objects.requireNonNull(range, "src[]").byteSize(), ALIGNMENT));
        }
        download(src, out, stream);
        return out;
    }

    /**
     * Copies ranges of device buffers into caller-provided host segments, in one batch on {@code stream}: range
     * {@code i} fills all of {@code destinations.get(i)}. Page-locked destinations are written by the copy engine
     * directly (one host wait for a batch of them); the others go through the staging ring (one host wait per
     * chunk), where ranges of one allocation that follow each other closely are copied with one call. Returns
     * when the data arrived. Work that produced the data must be ordered before this call on {@code stream}.
     *
     * @param sources the ranges; the caller keeps owning their buffers
     * @param destinations one writable native host segment per range, of exactly the range's size; the caller
     *     keeps owning them
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @throws InvalidArgumentException if the lists differ in length, a destination's size differs from its
     *     range's, for heap or read-only destinations, or a stream or buffer of another device
     * @throws org.devicebridge.HandleClosedException if this transfer or a source buffer is closed
     * @throws CudaException if a driver call fails (then no copy writes into a destination any more)
     */
    public void download(List<DeviceRange> sources, List<MemorySegment> destinations, CudaStream stream) {
        try (PendingDownload d = downloadAsync(sources, destinations, Objects.requireNonNull(sources, "sources").size(),
                stream)) {
            d.await();
        }
    }

    /**
     * As {@link #download(List, List, CudaStream)}, returning while the copies run: ranges {@code [0, leading)}
     * are copied first, and the returned download's {@link PendingDownload#awaitLeading()} returns once they
     * arrived, while the others may still arrive, so that the caller can check the leading ones meanwhile.
     * Into page-locked destinations the copy engine writes the rest (a second host wait); where a destination
     * is pageable, every range arrives before {@code awaitLeading()} returns. The download holds this transfer until its {@code await()} or {@code close()} (see {@link PendingDownload}).
     *
     * @param sources the ranges; the caller keeps owning their buffers
     * @param destinations one writable native host segment per range, of exactly the range's size; the caller
     *     keeps owning them, and neither reads (beyond the leading ones after {@code awaitLeading()}), changes nor
     *     frees them until the download's {@code await()} or {@code close()} returned
     * @param leading how many of the first ranges are copied before the others, {@code 0 .. sources.size()}
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @return the download in flight, which the caller owns and closes (try-with-resources). After a throw
     *     nothing is held and no copy writes into a destination
     * @throws InvalidArgumentException as {@link #download(List, List, CudaStream)} does, or if {@code leading}
     *     is out of range
     * @throws org.devicebridge.HandleClosedException if this transfer or a source buffer is closed
     * @throws org.devicebridge.HandleBusyException if this thread has a download in flight on this transfer
     * @throws CudaException if a driver call fails
     */
    public PendingDownload downloadAsync(List<DeviceRange> sources, List<MemorySegment> destinations, int leading,
                                         CudaStream stream) {
        engine.lock();
        boolean started = false;
        try {
            ensureLive();
            try (StreamTransferOps ops = engine.ops(stream)) {
                DownloadBatch batch = engine.download(sources, destinations, leading);
                PendingDownload d = new PendingDownload(engine, DownloadRun.start(engine.lane(ops), batch), ops);
                engine.started(d);
                started = true;
                return d;
            }
        } finally {
            if (!started) {
                engine.unlock();
            }
        }
    }
}
