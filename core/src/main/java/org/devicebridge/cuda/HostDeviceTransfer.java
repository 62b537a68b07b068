package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;

/**
 * Moves batches of host buffers to one device and back, at the speed of the link where the host memory
 * allows it.
 *
 * <p>Every buffer is first classified, once per batch ({@link PointerAttributes#isPageLocked}):
 * <ul>
 *   <li><b>Page-locked</b> host memory (pinned: {@link PinnedHostBuffer}, {@link HostRegistration}, a pinned
 *       Arrow allocator) is copied by the copy engine directly, with {@code cuMemcpyHtoDAsync} /
 *       {@code cuMemcpyDtoHAsync} on the caller's stream: no staging copy.</li>
 *   <li><b>Pageable</b> memory goes through a ring of pinned staging chunks, allocated once per transfer
 *       object and reused by every batch, each guarded by its own event: the host copies between the
 *       caller's buffers and the chunks are split over a small shared set of threads sized to the machine
 *       (all woken at once), and chunk N+1 is packed (or unpacked) while chunk N's copy runs. A batch
 *       smaller than the ring is spread over every chunk in smaller steps (2 MiB at least), so that its
 *       first copy starts early. Where the user opts in ({@code -Ddevicebridge.nonTemporalCopy=true}, x86-64
 *       Linux), an upload packs its last chunks with non-temporal stores, which keep them out of the cores'
 *       private caches, where the copy engine reads lines more slowly (see
 *       {@code org.devicebridge.internal.NonTemporalCopy} and docs/transfers.md).</li>
 * </ul>
 * {@link #upload} packs a batch into <em>one</em> stream-ordered device allocation (one
 * {@code cuMemAllocFromPoolAsync} from the device's memory pool per batch), each buffer at a
 * {@value #ALIGNMENT}-byte aligned offset, the bytes between buffers zero. The downloads copy ranges of device
 * memory into host segments. Nothing on the steady-state path creates an event, a thread or pinned memory.
 *
 * <p>Synchronisation: a download returns when the data arrived: one host wait per batch when every
 * destination is page-locked (two with leading ranges), one per staging chunk otherwise (with leading ranges,
 * the later chunks are also waited for by a worker thread, which starts their unpacking). {@link #upload}
 * returns when the host buffers may be changed: one host wait per batch if a buffer was copied directly, none
 * for a batch that was staged entirely (its bytes were copied into staging memory before it returns).
 * {@link #uploadAsync} never waits for a direct copy: the caller keeps the page-locked buffers unchanged until
 * the stream reached the upload (record an event on it, or synchronize it).
 *
 * <p>One transfer object serves one device and one batch at a time (its methods are serialised, and may be
 * called from any thread); it is an owning handle of its staging memory and events: {@link #close()} waits
 * for the copies still using the staging memory (a close from another thread also waits for a running
 * batch), then frees it and returns the events to their pool. Idempotent and thread-safe, as every
 * handle's close.
 */
public final class HostDeviceTransfer extends NativeHandle {
    /** Alignment of every buffer in an uploaded allocation, as Arrow recommends for its buffers. */
    public static final int ALIGNMENT = 64;

    private final int device;
    private final StagingRing ring;
    private final TransferEvents events;
    private final TransferStatistics stats;
    /**
     * Held by every batch and by the release step, so that a close waits for a running batch instead of
     * freeing staging memory under it. Not the handle itself: the release step must not capture the handle.
     */
    private final Object lock;

    /**
     * How a transfer object stages pageable memory.
     *
     * @param stagingBytes pinned staging memory in all, allocated once (rounded down to whole chunks)
     * @param chunkBytes the size of one staging chunk: the largest unit of one staged copy and of one host
     *     wait (a batch smaller than the ring uses each chunk in part); a multiple of {@value #ALIGNMENT}, at
     *     most half of {@code stagingBytes} (the ring has at least two)
     * @param threads threads that pack or unpack one chunk at most (the caller and the shared workers)
     */
    public record Options(long stagingBytes, long chunkBytes, int threads) {
        /** Staging memory by default: 64 MiB. */
        public static final long DEFAULT_STAGING_BYTES = 64L << 20;
        /** Chunk size by default (B6's sweep on the H100 machine chooses it): 8 MiB. */
        public static final long DEFAULT_CHUNK_BYTES = 8L << 20;

        /**
         * Checks the options.
         *
         * @throws InvalidArgumentException if {@code chunkBytes} is not a positive multiple of {@value #ALIGNMENT},
         *     {@code stagingBytes} holds fewer than two chunks, or {@code threads} is below 1
         */
        public Options {
            if (chunkBytes < ALIGNMENT || chunkBytes % ALIGNMENT != 0) {
                throw new InvalidArgumentException("chunkBytes", "expected a positive multiple of " + ALIGNMENT
                        + " but found " + chunkBytes);
            }
            if (stagingBytes / chunkBytes < 2) {
                throw new InvalidArgumentException("stagingBytes", String.format(Locale.ROOT,
                        "expected room for at least two chunks of %d bytes but found %d bytes", chunkBytes, stagingBytes));
            }
            if (threads < 1) {
                throw new InvalidArgumentException("threads", "expected at least 1 but found " + threads);
            }
        }

        /**
         * The defaults: {@value #DEFAULT_STAGING_BYTES} bytes of staging memory in chunks of
         * {@value #DEFAULT_CHUNK_BYTES} bytes, and every core (up to 16) packing.
         *
         * @return the default options
         */
        public static Options defaults() {
            return new Options(DEFAULT_STAGING_BYTES, DEFAULT_CHUNK_BYTES, StagingCopy.PARALLELISM);
        }

        /**
         * These options with {@code stagingBytes} of staging memory; the chunk shrinks to half of it if it no
         * longer fits twice.
         *
         * @param stagingBytes at least {@code 2 * ALIGNMENT}
         * @return new options
         * @throws InvalidArgumentException if {@code stagingBytes} is too small
         */
        public Options withStagingBytes(long stagingBytes) {
            long chunk = Math.min(chunkBytes, stagingBytes / 2 / ALIGNMENT * ALIGNMENT);
            return new Options(stagingBytes, chunk, threads);
        }

        /**
         * These options with chunks of {@code chunkBytes}.
         *
         * @param chunkBytes see the record's parameter
         * @return new options
         * @throws InvalidArgumentException if the chunk is invalid or does not fit twice
         */
        public Options withChunkBytes(long chunkBytes) {
            return new Options(stagingBytes, chunkBytes, threads);
        }

        /**
         * These options with at most {@code threads} threads per chunk.
         *
         * @param threads at least 1
         * @return new options
         * @throws InvalidArgumentException if {@code threads} is below 1
         */
        public Options withThreads(int threads) {
            return new Options(stagingBytes, chunkBytes, threads);
        }
    }

    /**
     * What a transfer object did since it was created.
     *
     * @param batches uploads and downloads
     * @param directCopies buffers copied directly between page-locked host memory and the device
     * @param directBytes the bytes of those copies
     * @param stagedBytes bytes that went through the staging ring (with the padding between packed buffers)
     * @param hostWaits times the host waited for the device ({@code cuEventSynchronize})
     */
    public record Statistics(long batches, long directCopies, long directBytes, long stagedBytes, long hostWaits) {}

    /**
     * A batch packed into one device allocation.
     *
     * @param buffer the device allocation holding every buffer; the caller owns it (close this record or
     *     the buffer to free it)
     * @param offsets where buffer {@code i} starts in {@code buffer}, a multiple of {@value #ALIGNMENT}
     * @param sizes the size of buffer {@code i} in bytes
     */
    public record Upload(DeviceBuffer buffer, long[] offsets, long[] sizes) implements AutoCloseable {
        /**
         * Copies the arrays in.
         *
         * @throws NullPointerException if an argument is null
         */
        public Upload {
            Objects.requireNonNull(buffer, "buffer");
            offsets = offsets.clone();
            sizes = sizes.clone();
        }

        /**
         * Where each buffer starts in {@link #buffer()}.
         *
         * @return a copy of the offsets
         */
        @Override
        public long[] offsets() {
            return offsets.clone();
        }

        /**
         * The size of each buffer.
         *
         * @return a copy of the sizes
         */
        @Override
        public long[] sizes() {
            return sizes.clone();
        }

        /** {@return the number of buffers in the batch} */
        public int count() {
            return offsets.length;
        }

        /**
         * The batch's buffers as ranges of {@link #buffer()}, e.g. to {@link #download} them.
         *
         * @return ranges borrowing {@link #buffer()}
         */
        public DeviceRanges ranges() {
            return new DeviceRanges(buffer, offsets, sizes);
        }

        /** Frees the device allocation (stream-ordered, on the upload's stream). */
        @Override
        public void close() {
            buffer.close();
        }
    }

    private HostDeviceTransfer(int device, PinnedHostBuffer staging, StagingRing ring, TransferEvents events,
                               Object lock) {
        super("host-device transfer for device " + device, release(staging, ring, events, lock));
        this.device = device;
        this.ring = ring;
        this.events = events;
        this.stats = new TransferStatistics();
        this.lock = lock;
    }

    /** Waits for the copies still using the staging memory, then frees it and returns the events to their pool. */
    private static ReleaseAction release(PinnedHostBuffer staging, StagingRing ring, TransferEvents events,
                                         Object lock) {
        return () -> {
            synchronized (lock) {
                try {
                    ring.drain(s -> events.chunk(s).synchronize());
                } finally {
                    try {
                        events.close();
                    } finally {
                        staging.close();
                    }
                }
            }
        };
    }

    /**
     * Creates a transfer object for {@code device} with {@code stagingBytes} of pinned staging memory, in
     * chunks of {@link Options#DEFAULT_CHUNK_BYTES} (or half of it, if smaller).
     *
     * @param device the device ordinal
     * @param stagingBytes at least {@code 2 * ALIGNMENT}
     * @return a transfer object the caller owns and closes
     * @throws InvalidArgumentException if {@code stagingBytes} is too small
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     */
    public static HostDeviceTransfer create(int device, long stagingBytes) {
        requireNativeAccess();
        if (stagingBytes < 2L * ALIGNMENT) {
            throw new InvalidArgumentException("stagingBytes", "expected at least " + 2 * ALIGNMENT
                    + " bytes of staging memory but found " + stagingBytes);
        }
        return create(device, Options.defaults().withStagingBytes(stagingBytes));
    }

    /**
     * Creates a transfer object for {@code device}: allocates its staging ring (pinned, one
     * {@code cuMemHostAlloc}) and takes its events from the device's pool.
     *
     * @param device the device ordinal
     * @param options the staging memory, chunk size and threads
     * @return a transfer object the caller owns and closes
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal, or if the
     *     driver cannot allocate the staging memory
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static HostDeviceTransfer create(int device, Options options) {
        Objects.requireNonNull(options, "options");
        CudaContext.checkDevice(device);
        int count = Math.toIntExact(options.stagingBytes() / options.chunkBytes());
        long chunk = options.chunkBytes();
        PinnedHostBuffer staging = PinnedHostBuffer.allocate(Math.multiplyExact(chunk, count));
        TransferEvents events = null;
        try {
            events = TransferEvents.acquire(device, count);
            MemorySegment[] chunks = new MemorySegment[count];
            StagingCopy[] copies = new StagingCopy[count];
            for (int i = 0; i < count; i++) {
                chunks[i] = staging.segment().asSlice(i * chunk, chunk);
                copies[i] = new StagingCopy(StagingCopy.DEFAULT_PARALLEL_THRESHOLD, StagingCopy.DEFAULT_MIN_SLICE,
                        options.threads());
            }
            return new HostDeviceTransfer(device, staging, new StagingRing(chunks, copies), events, new Object());
        } catch (RuntimeException e) {
            try {
                if (events != null) {
                    events.close();
                }
            } finally {
                staging.close();
            }
            throw e;
        }
    }

    /**
     * The device ordinal.
     *
     * @return the ordinal
     */
    public int device() {
        return device;
    }

    /**
     * Bytes one staging chunk holds: the unit of one staged copy.
     *
     * @return the chunk size
     */
    public long chunkBytes() {
        return ring.chunkBytes();
    }

    /**
     * What this transfer object did so far (a snapshot).
     *
     * @return the counts
     */
    public Statistics statistics() {
        synchronized (lock) {
            return stats.snapshot();
        }
    }

    /**
     * Packs {@code buffers} into one new device allocation and queues the copies on {@code stream}, then
     * waits (once) for the direct copies, if any: when this returns the caller may change or free the host
     * buffers. The device data is ready for work queued on {@code stream} after this call (other streams
     * must wait on an event recorded on {@code stream}). Padding bytes between buffers are zero.
     *
     * @param buffers native host segments, in any memory; empty segments get an offset and no bytes
     * @param stream a stream of this transfer's device; the caller keeps owning it, and it must stay open
     *     until the returned allocation is freed (which is queued on it)
     * @return the allocation and the offsets; the caller owns the allocation. After a throw the caller owns
     *     nothing new (an allocation made before the failure is freed), and no copy reads a buffer any more
     * @throws InvalidArgumentException for heap segments or a stream of another device
     * @throws org.devicebridge.HandleClosedException if this transfer, the stream or a buffer's arena is closed
     * @throws CudaException if a driver call fails
     */
    public Upload upload(List<MemorySegment> buffers, CudaStream stream) {
        return upload(buffers, () -> { }, stream);
    }

    /**
     * As {@link #upload(List, CudaStream)}, with host work (counting nulls, say) done while the copy engine
     * still reads: {@code whileCopying} runs on this thread once every copy is queued (pageable buffers packed),
     * before the one wait. If it throws, this waits for the copies, frees the allocation and throws its
     * exception. It runs holding this transfer (another thread's batch waits) and must not use it.
     *
     * @param buffers as for {@link #upload(List, CudaStream)}
     * @param whileCopying runs once the copies are queued; it may read the buffers, not change them
     * @param stream as for {@link #upload(List, CudaStream)}
     * @return as {@link #upload(List, CudaStream)} returns
     * @throws InvalidArgumentException for heap segments or a stream of another device
     * @throws org.devicebridge.HandleClosedException if this transfer, the stream or a buffer's arena is closed
     * @throws CudaException if a driver call fails
     */
    public Upload upload(List<MemorySegment> buffers, Runnable whileCopying, CudaStream stream) {
        Objects.requireNonNull(whileCopying, "whileCopying");
        synchronized (lock) {
            ensureLive();
            try (StreamTransferOps ops = ops(stream)) {
                Batch b = uploadLocked(buffers, stream, ops);
                try {
                    BatchTransfer.runWhileCopying(whileCopying, b.direct, ops);
                } catch (RuntimeException | Error e) {
                    b.upload.close();
                    throw e;
                }
                return b.upload;
            }
        }
    }

    /**
     * As {@link #upload}, without waiting for the direct copies: the copy engine reads the page-locked
     * buffers after this returns, until {@code stream} reaches the upload; pageable buffers have been read
     * when this returns. No host wait for a batch of page-locked buffers. What it keeps alive: each staging
     * chunk until its own event (reused or freed only after it), the allocation until its stream-ordered free.
     * The caller keeps the page-locked buffers alive and unchanged until an event recorded on {@code stream}
     * after this call completed (or hands their owner to {@link CudaStream#closeAfterQueuedWork}).
     *
     * @param buffers native host segments, in any memory; empty segments get an offset and no bytes
     * @param stream a stream of this transfer's device; the caller keeps owning it, and it must stay open
     *     until the returned allocation is freed (which is queued on it)
     * @return the allocation and the offsets; the caller owns the allocation. After a throw the caller owns
     *     nothing new, and no copy reads a buffer any more
     * @throws InvalidArgumentException for heap segments or a stream of another device
     * @throws org.devicebridge.HandleClosedException if this transfer, the stream or a buffer's arena is closed
     * @throws CudaException if a driver call fails
     */
    public Upload uploadAsync(List<MemorySegment> buffers, CudaStream stream) {
        synchronized (lock) {
            ensureLive();
            try (StreamTransferOps ops = ops(stream)) {
                return uploadLocked(buffers, stream, ops).upload;
            }
        }
    }

    /** An upload and whether direct copies of it may still run (until {@link TransferOps#BATCH}). */
    private record Batch(Upload upload, boolean direct) {}

    private Batch uploadLocked(List<MemorySegment> buffers, CudaStream stream, StreamTransferOps ops) {
        Objects.requireNonNull(buffers, "buffers");
        MemorySegment[] src = buffers.toArray(new MemorySegment[0]);
        long[] sizes = new long[src.length];
        boolean[] direct = new boolean[src.length];
        for (int i = 0; i < src.length; i++) {
            CudaCopies.checkHost(src[i], "buffers[" + i + "]");
            sizes[i] = src[i].byteSize();
            direct[i] = PointerAttributes.isPageLocked(src[i]);
        }
        BatchTransfer.Layout layout = BatchTransfer.layout(sizes, direct);
        DeviceBuffer dst = DeviceBuffer.allocateAsync(device, layout.total(), stream);
        boolean queued;
        try {
            stats.batch();
            queued = BatchTransfer.upload(ring, src, sizes, layout, dst.address(), ops, stats);
        } catch (RuntimeException | Error e) {
            dst.close();
            throw e;
        }
        return new Batch(new Upload(dst, layout.offsets(), sizes), queued);
    }

    /**
     * Copies ranges of a device buffer into new host segments allocated from {@code arena}
     * ({@value #ALIGNMENT}-byte aligned). Returns when the data arrived. Work that produced the data must
     * be ordered before this call on {@code stream}, or finished.
     *
     * @param src the ranges to copy (for a whole uploaded batch: {@link Upload#ranges()}); the caller keeps
     *     owning the buffer
     * @param arena allocates the results; the caller owns it (memory of a pinned arena is copied into
     *     directly)
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @return one segment per range, filled
     * @throws InvalidArgumentException if the stream or the buffer is of another device
     * @throws CudaException if a driver call fails
     */
    public List<MemorySegment> download(DeviceRanges src, Arena arena, CudaStream stream) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(arena, "arena");
        Objects.requireNonNull(stream, "stream");
        checkStream(stream);
        checkBuffer(src.buffer());
        List<MemorySegment> out = new ArrayList<>(src.count());
        for (long size : src.sizes()) {
            out.add(arena.allocate(size, ALIGNMENT));
        }
        download(src.buffer(), src.offsets(), out, stream);
        return out;
    }

    /**
     * Copies ranges of a device buffer into caller-provided host segments: range {@code i} starts at
     * {@code offsets[i]} and fills all of {@code destinations.get(i)}. Page-locked destinations are written
     * by the copy engine directly. Returns when the data arrived. Work that produced the data must be
     * ordered before this call on {@code stream}, or finished.
     *
     * @param src the device buffer; the caller keeps owning it and the destinations
     * @param offsets where each range starts in {@code src}
     * @param destinations one writable native host segment per offset
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @throws InvalidArgumentException if a range lies outside {@code src}, for heap or read-only
     *     destinations, or a stream or buffer of another device
     * @throws CudaException if a driver call fails
     */
    public void download(DeviceBuffer src, long[] offsets, List<MemorySegment> destinations, CudaStream stream) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(offsets, "offsets");
        Objects.requireNonNull(destinations, "destinations");
        if (destinations.size() != offsets.length) {
            throw new InvalidArgumentException("destinations", "expected one destination per offset ("
                    + offsets.length + ") but found " + destinations.size());
        }
        List<DeviceRange> sources = new ArrayList<>(offsets.length);
        for (int i = 0; i < offsets.length; i++) {
            MemorySegment d = Objects.requireNonNull(destinations.get(i), "destinations[" + i + "]");
            sources.add(src.range(offsets[i], d.byteSize())); // checks every range
        }
        download(sources, destinations, stream);
    }

    /**
     * Copies ranges of several device buffers into caller-provided host segments, in one batch on
     * {@code stream}: range {@code i} is {@code sources.get(i)} and fills all of {@code destinations.get(i)}.
     * Page-locked destinations are written by the copy engine directly (one host wait for a batch of them);
     * the others go through the staging ring (one host wait per chunk), where ranges of one allocation that
     * follow each other closely are copied with one call (ranges of different allocations never share a
     * copy: the bytes between two allocations may not be mapped). Returns when the data arrived. Work that
     * produced the data must be ordered before this call on {@code stream}, or finished.
     *
     * @param sources the ranges (for speed: sorted by device address); the caller keeps owning their buffers
     * @param destinations one writable native host segment per range, of exactly the range's size; the
     *     caller keeps owning them
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @throws InvalidArgumentException if the lists differ in length, a destination's size differs from its
     *     range's, for heap or read-only destinations, or a stream or buffer of another device
     * @throws org.devicebridge.HandleClosedException if this transfer or a source buffer is closed
     * @throws CudaException if a driver call fails
     */
    public void download(List<DeviceRange> sources, List<MemorySegment> destinations, CudaStream stream) {
        synchronized (lock) {
            ensureLive();
            downloadLocked(sources, destinations, Objects.requireNonNull(sources, "sources").size(), null, stream);
        }
    }

    /**
     * As {@link #download(List, List, CudaStream)}, with host work (checking offsets, say) done while the copy
     * engine still writes: ranges {@code [0, leading)} are copied first, then the others, and
     * {@code whileRestArrives} runs on this thread once the leading ranges arrived, while the others may still
     * arrive (so it must not read their destinations): into page-locked destinations the copy engine writes
     * them (a second host wait); otherwise the leading ranges fill staging chunks of their own and, if the
     * batch fits the staging ring, a worker thread waits for each later chunk and the workers unpack it
     * (destinations confined to this thread: this thread, afterwards); a batch larger than the ring runs it
     * once every range arrived. Returns when every byte arrived and {@code whileRestArrives} returned; if it
     * throws, this waits for the batch's copies and unpacking, then throws its exception. It runs holding this
     * transfer (another thread's batch waits) and must not use it.
     *
     * @param sources the ranges; the caller keeps owning their buffers
     * @param destinations one writable native host segment per range, of exactly the range's size; the
     *     caller keeps owning them
     * @param leading how many of the first ranges are copied before the others, {@code 0 .. sources.size()}
     * @param whileRestArrives runs once the leading ranges arrived
     * @param stream a stream of this transfer's device; the caller keeps owning it
     * @throws InvalidArgumentException as {@link #download(List, List, CudaStream)} does, or if
     *     {@code leading} is out of range
     * @throws org.devicebridge.HandleClosedException if this transfer or a source buffer is closed
     * @throws CudaException if a driver call fails
     */
    public void download(List<DeviceRange> sources, List<MemorySegment> destinations, int leading,
                         Runnable whileRestArrives, CudaStream stream) {
        Objects.requireNonNull(whileRestArrives, "whileRestArrives");
        synchronized (lock) {
            ensureLive();
            downloadLocked(sources, destinations, leading, whileRestArrives, stream);
        }
    }

    private void downloadLocked(List<DeviceRange> sources, List<MemorySegment> destinations, int leading,
                                Runnable whileRestArrives, CudaStream stream) {
        Objects.requireNonNull(sources, "sources");
        Objects.requireNonNull(destinations, "destinations");
        Objects.requireNonNull(stream, "stream");
        int n = sources.size();
        if (destinations.size() != n) {
            throw new InvalidArgumentException("destinations", "expected one destination per source (" + n
                    + ") but found " + destinations.size());
        }
        if (leading < 0 || leading > n) {
            throw new InvalidArgumentException("leading", "expected 0 to " + n + " leading ranges but found " + leading);
        }
        checkStream(stream);
        MemorySegment[] dst = destinations.toArray(new MemorySegment[0]);
        long[] addresses = new long[n];
        long[] sizes = new long[n];
        long[] groups = new long[n];
        boolean[] direct = new boolean[n];
        for (int i = 0; i < n; i++) {
            DeviceRange r = Objects.requireNonNull(sources.get(i), "sources[" + i + "]");
            CudaCopies.checkHost(dst[i], "destinations[" + i + "]");
            if (dst[i].isReadOnly()) {
                throw new InvalidArgumentException("destinations[" + i + "]",
                        "expected a writable segment but found a read-only one");
            }
            if (dst[i].byteSize() != r.byteSize()) {
                throw new InvalidArgumentException("destinations[" + i + "]", "expected " + r.byteSize()
                        + " bytes (the size of sources[" + i + "]) but found " + dst[i].byteSize());
            }
            checkBuffer(r.buffer());
            addresses[i] = r.address(); // checks the buffer is live
            sizes[i] = r.byteSize();
            groups[i] = r.buffer().address(); // one allocation: one group
        }
        for (int i = 0; i < n; i++) {
            direct[i] = PointerAttributes.isPageLocked(dst[i]);
        }
        stats.batch();
        try (StreamTransferOps ops = ops(stream)) {
            BatchTransfer.download(ring, addresses, groups, dst, sizes, direct, leading, whileRestArrives, ops, stats);
        }
    }

    private StreamTransferOps ops(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        checkStream(stream);
        return new StreamTransferOps(stream, events, stats);
    }

    private void checkBuffer(DeviceBuffer src) {
        checkDevice("src", "buffer", src.device());
    }

    private void checkStream(CudaStream stream) {
        checkDevice("stream", "stream", stream.device());
    }

    private void checkDevice(String parameter, String what, int found) {
        if (found != device) {
            throw new InvalidArgumentException(parameter, String.format(Locale.ROOT,
                    "expected a %s of device %d (the transfer's) but found one of device %d", what, device, found));
        }
    }
}
