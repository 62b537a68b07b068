package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.IntConsumer;
import org.devicebridge.NativeHandle;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * Moves batches of host buffers to one device and back through reused pinned staging memory.
 *
 * <p>{@link #upload} packs a batch of host buffers into <em>one</em> stream-ordered device allocation,
 * each buffer at a {@value #ALIGNMENT}-byte aligned offset, copying them into pinned staging memory and
 * from there with asynchronous copies; {@link #download} copies ranges of device buffers back. The
 * staging memory is split in two halves used in turn, each guarded by its own event, so that packing
 * the next chunk (or batch) overlaps the copy of the previous one; the host waits only before reusing a
 * half. A batch that fits in one half costs one {@code cuMemAllocFromPoolAsync} from the device's
 * memory pool, one event record, one copy per 4 MiB piece on upload (a piece's copy to the device runs while
 * the next piece is packed) and one copy on download, and no {@code cuMemAlloc}, {@code cuMemHostAlloc},
 * event or thread creation: the staging memory and the two events are made once, in {@link #create}.
 *
 * <p>The host copies between the caller's buffers and staging memory of a chunk of 4 MiB or more are split
 * over a small shared pool of daemon threads (at most 8, the caller included), because one thread copies
 * pageable memory far slower than the link moves it. Buffers confined to the calling thread (a confined
 * {@link Arena}'s segments) are always copied by the calling thread.
 *
 * <p>One transfer object serves one device and one batch at a time (its methods are serialised); it is
 * an owning handle of its staging memory and events: {@link #close()} waits for the copies still using the
 * staging memory (a close from another thread also waits for a running upload or download), then frees it
 * and returns the events to their pool. Idempotent and thread-safe, as every handle's close.
 */
public final class HostDeviceTransfer extends NativeHandle {
    /** Alignment of every buffer in an uploaded allocation, as Arrow recommends for its buffers. */
    public static final int ALIGNMENT = 64;

    private final int device;
    private final Stager stager;
    private final CudaEvent[] halfDone;
    /**
     * Held by {@link #upload} and {@link #download} and by the release step, so that a close waits for a
     * running batch instead of freeing staging memory under it. Not the handle itself: the release step
     * must not capture the handle.
     */
    private final Object lock;

    /**
     * A batch packed into one device allocation.
     *
     * @param buffer the device allocation holding every buffer; the caller owns it (close this record or
     *     the buffer to free it)
     * @param offsets where buffer {@code i} starts in {@code buffer}, a multiple of {@value #ALIGNMENT}
     * @param sizes the size of buffer {@code i} in bytes
     */
    public record Upload(DeviceBuffer buffer, long[] offsets, long[] sizes) implements AutoCloseable {
        /** Copies the arrays. */
        public Upload {
            Objects.requireNonNull(buffer, "buffer");
            offsets = offsets.clone();
            sizes = sizes.clone();
        }

        /** {@return a copy of the buffer offsets} */
        @Override
        public long[] offsets() {
            return offsets.clone();
        }

        /** {@return a copy of the buffer sizes} */
        @Override
        public long[] sizes() {
            return sizes.clone();
        }

        /** {@return number of buffers in the batch} */
        public int count() {
            return offsets.length;
        }

        /** {@return the batch's buffers as ranges of {@link #buffer()}, e.g. to {@link #download} them} */
        public DeviceRanges ranges() {
            return new DeviceRanges(buffer, offsets, sizes);
        }

        /** Frees the device allocation (stream-ordered, on the upload's stream). */
        @Override
        public void close() {
            buffer.close();
        }
    }

    private HostDeviceTransfer(int device, PinnedHostBuffer staging, Stager stager, CudaEvent[] halfDone, Object lock) {
        super("host-device transfer for device " + device, release(staging, stager, halfDone, lock));
        this.device = device;
        this.stager = stager;
        this.halfDone = halfDone;
        this.lock = lock;
    }

    /** Waits for the copies still using the staging memory, then frees it and returns the events to their pool. */
    private static ReleaseAction release(PinnedHostBuffer staging, Stager stager, CudaEvent[] halfDone, Object lock) {
        return () -> {
            synchronized (lock) {
                try {
                    stager.drain(h -> halfDone[h].synchronize());
                } finally {
                    try {
                        halfDone[0].close();
                        halfDone[1].close();
                    } finally {
                        staging.close();
                    }
                }
            }
        };
    }

    /**
     * Creates a transfer object for {@code device} with {@code stagingBytes} of pinned staging memory (two
     * halves; a batch up to half of it moves in one copy and one synchronisation).
     *
     * @param stagingBytes at least {@code 2 * ALIGNMENT}
     * @param device the CUDA device ordinal
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
        CudaContext.checkDevice(device);
        PinnedHostBuffer staging = PinnedHostBuffer.allocate(stagingBytes);
        CudaEvent[] events = new CudaEvent[2];
        try {
            events[0] = CudaEvent.acquire(device);
            events[1] = CudaEvent.acquire(device);
            long half = staging.byteSize() / 2 / ALIGNMENT * ALIGNMENT;
            MemorySegment s = staging.segment();
            Stager stager = new Stager(s.asSlice(0, half), s.asSlice(half, half));
            return new HostDeviceTransfer(device, staging, stager, events, new Object());
        } catch (RuntimeException e) {
            for (CudaEvent ev : events) {
                if (ev != null) {
                    ev.close();
                }
            }
            staging.close();
            throw e;
        }
    }

    /** {@return the device ordinal} */
    public int device() {
        return device;
    }

    /** {@return bytes one copy can move: half the staging memory} */
    public long chunkBytes() {
        return stager.chunkBytes();
    }

    /** Where each buffer of a batch lands: {@value #ALIGNMENT}-byte aligned, in order; the last is the total. */
    static long[] packedOffsets(long[] sizes) {
        long[] offsets = new long[sizes.length + 1];
        long end = 0;
        for (int i = 0; i < sizes.length; i++) {
            long start = alignUp(end);
            offsets[i] = start;
            end = Math.addExact(start, sizes[i]);
        }
        offsets[sizes.length] = end;
        return offsets;
    }

    private static long alignUp(long v) {
        return Math.addExact(v, ALIGNMENT - 1) & -ALIGNMENT;
    }

    /**
     * Packs {@code buffers} into one new device allocation and queues the copies on {@code stream}. The
     * host buffers are read before this returns (they are copied into staging memory), so the caller may
     * reuse them at once; the device data is ready for work queued on {@code stream} after this call (other
     * streams must wait on an event recorded on {@code stream}). Padding bytes between buffers are zero.
     *
     * @param buffers native host segments, in order; empty segments get an offset and no bytes
     * @param stream a stream of this transfer's device; the caller keeps owning it, and it must stay open
     *     until the returned allocation is freed (which is queued on it)
     * @return the allocation and the offsets; the caller owns the allocation. After a throw the caller owns
     *     nothing new (an allocation made before the failure is freed)
     * @throws InvalidArgumentException for heap segments or a stream of another device
     * @throws CudaException if a driver call fails
     */
    public Upload upload(List<MemorySegment> buffers, CudaStream stream) {
        synchronized (lock) {
            ensureLive();
            return uploadLocked(buffers, stream);
        }
    }

    private Upload uploadLocked(List<MemorySegment> buffers, CudaStream stream) {
        Objects.requireNonNull(buffers, "buffers");
        Objects.requireNonNull(stream, "stream");
        checkStream(stream);
        MemorySegment[] src = buffers.toArray(new MemorySegment[0]);
        long[] sizes = new long[src.length];
        for (int i = 0; i < src.length; i++) {
            CudaCopies.checkHost(src[i], "buffers[" + i + "]");
            sizes[i] = src[i].byteSize();
        }
        long[] placed = packedOffsets(sizes);
        long total = placed[src.length];
        long[] offsets = Arrays.copyOf(placed, src.length);
        DeviceBuffer dst = DeviceBuffer.allocateAsync(device, total, stream);
        try {
            stager.upload(src, offsets, sizes, total, dst.address(), new StreamOps(stream));
        } catch (RuntimeException e) {
            dst.close();
            throw e;
        }
        return new Upload(dst, offsets, sizes);
    }

    /**
     * Copies ranges of a device buffer into new host segments allocated from {@code arena}
     * ({@value #ALIGNMENT}-byte aligned). Returns when the data arrived. Work that produced the data must
     * be ordered before this call on {@code stream}, or finished.
     *
     * @param src the ranges to copy (for a whole uploaded batch: {@link Upload#ranges()}); the caller keeps
     *     owning the buffer
     * @param arena allocates the results; the caller owns it
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     * @return one segment per range, filled
     * @throws InvalidArgumentException if the stream or the buffer is of another device
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
     * {@code offsets[i]} and fills all of {@code destinations.get(i)}. Returns when the data arrived. Work
     * that produced the data must be ordered before this call on {@code stream}, or finished.
     *
     * @param src the device buffer; the caller keeps owning it and the destinations
     * @param offsets where each range starts in {@code src}; range {@code i} fills {@code destinations[i]}
     * @param destinations the host segments to copy into, owned by the caller
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     * @throws InvalidArgumentException if a range lies outside {@code src}, for heap or read-only
     *     destinations, or a stream or buffer of another device
     */
    public void download(DeviceBuffer src, long[] offsets, List<MemorySegment> destinations, CudaStream stream) {
        synchronized (lock) {
            ensureLive();
            downloadLocked(src, offsets, destinations, stream);
        }
    }

    private void downloadLocked(DeviceBuffer src, long[] offsets, List<MemorySegment> destinations, CudaStream stream) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(offsets, "offsets");
        Objects.requireNonNull(destinations, "destinations");
        Objects.requireNonNull(stream, "stream");
        MemorySegment[] dst = destinations.toArray(new MemorySegment[0]);
        if (dst.length != offsets.length) {
            throw new InvalidArgumentException("destinations", "expected one destination per offset ("
                    + offsets.length + ") but found " + dst.length);
        }
        long[] sizes = new long[dst.length];
        for (int i = 0; i < dst.length; i++) {
            CudaCopies.checkHost(dst[i], "destinations[" + i + "]");
            if (dst[i].isReadOnly()) {
                throw new InvalidArgumentException("destinations[" + i + "]",
                        "expected a writable segment but found a read-only one");
            }
            sizes[i] = dst[i].byteSize();
        }
        DeviceRanges ranges = new DeviceRanges(src, offsets, sizes); // checks every range
        checkStream(stream);
        checkBuffer(src);
        stager.download(src.address(), ranges.offsets(), dst, sizes, new StreamOps(stream));
    }

    /**
     * Copies ranges of several device buffers into caller-provided host segments, in one batch on
     * {@code stream}: range {@code i} is {@code sources.get(i)} and fills all of {@code destinations.get(i)}.
     * The host waits once for the whole batch while it fits half the staging memory (once per half
     * otherwise), not once per buffer. Ranges of one allocation that follow each other closely are copied
     * with one call; ranges of different allocations never share a copy (the bytes between two allocations
     * may not be mapped). Returns when the data arrived. Work that produced the data must be ordered before
     * this call on {@code stream}, or finished.
     *
     * @param sources the ranges (for speed: sorted by device address); the caller keeps owning their buffers
     * @param destinations one writable native host segment per range, of exactly the range's size; the
     *     caller keeps owning them
     * @param stream the CUDA stream the work is ordered on; the caller keeps owning it
     * @throws InvalidArgumentException if the lists differ in length, a destination's size differs from its
     *     range's, for heap or read-only destinations, or a stream or buffer of another device
     * @throws org.devicebridge.HandleClosedException if a source buffer is closed
     */
    public void download(List<DeviceRange> sources, List<MemorySegment> destinations, CudaStream stream) {
        synchronized (lock) {
            ensureLive();
            downloadLocked(sources, destinations, stream);
        }
    }

    private void downloadLocked(List<DeviceRange> sources, List<MemorySegment> destinations, CudaStream stream) {
        Objects.requireNonNull(sources, "sources");
        Objects.requireNonNull(destinations, "destinations");
        Objects.requireNonNull(stream, "stream");
        int n = sources.size();
        if (destinations.size() != n) {
            throw new InvalidArgumentException("destinations", "expected one destination per source (" + n
                    + ") but found " + destinations.size());
        }
        checkStream(stream);
        MemorySegment[] dst = destinations.toArray(new MemorySegment[0]);
        long[] addresses = new long[n];
        long[] sizes = new long[n];
        long[] groups = new long[n];
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
        stager.download(0, addresses, groups, dst, sizes, new StreamOps(stream));
    }

    /** The driver calls the stager makes for one batch, on one stream. */
    interface Ops {
        /** Queues a copy of {@code bytes} bytes of staging memory to a device address. */
        void toDevice(long deviceAddress, MemorySegment from, long bytes);

        /** Queues a copy of {@code bytes} bytes from a device address into staging memory. */
        void toHost(MemorySegment to, long deviceAddress, long bytes);

        /** Marks the copies queued so far as the ones that use staging half {@code half}. */
        void record(int half);

        /** Blocks until the copies last marked for {@code half} finished. */
        void await(int half);
    }

    private final class StreamOps implements Ops {
        private final CudaStream stream;

        StreamOps(CudaStream stream) {
            this.stream = stream;
        }

        @Override
        public void toDevice(long deviceAddress, MemorySegment from, long bytes) {
            MemorySegment s = stream.raw();
            CudaContext.makeCurrent(device);
            CudaDriver.check("cuMemcpyHtoDAsync_v2", cuda_driver_h.cuMemcpyHtoDAsync_v2(deviceAddress, from, bytes, s));
        }

        @Override
        public void toHost(MemorySegment to, long deviceAddress, long bytes) {
            MemorySegment s = stream.raw();
            CudaContext.makeCurrent(device);
            CudaDriver.check("cuMemcpyDtoHAsync_v2", cuda_driver_h.cuMemcpyDtoHAsync_v2(to, deviceAddress, bytes, s));
        }

        @Override
        public void record(int half) {
            halfDone[half].record(stream);
        }

        @Override
        public void await(int half) {
            halfDone[half].synchronize();
        }
    }

    /**
     * The staging logic, apart from the driver so that it can be tested without a GPU: two halves used in
     * turn; a half is written only after the copies last queued from or into it finished.
     */
    static final class Stager {
        /** Upload piece: large enough that a copy call's cost is small, small enough to start the DMA early. */
        static final long DEFAULT_UPLOAD_PIECE = 4L << 20;

        private final MemorySegment[] halves;
        private final boolean[] used = new boolean[2];
        private final StagingCopy copies; // the host copies of one chunk, split over threads when large
        private final long pieceBytes;
        private int next;

        Stager(MemorySegment first, MemorySegment second) {
            this(first, second, new StagingCopy(), DEFAULT_UPLOAD_PIECE);
        }

        Stager(MemorySegment first, MemorySegment second, StagingCopy copies, long pieceBytes) {
            if (pieceBytes < 1) {
                throw new InvalidArgumentException("pieceBytes", "expected a positive value but found " + pieceBytes);
            }
            this.halves = new MemorySegment[] {first, second};
            this.copies = copies;
            this.pieceBytes = pieceBytes;
        }

        long chunkBytes() {
            return halves[0].byteSize();
        }

        /**
         * Packs {@code src} at {@code offsets} into {@code [base, base + total)} on the device, chunk by chunk.
         * A chunk is packed and sent in pieces of at most {@code pieceBytes}, so that its first piece's copy to
         * the device runs while the next piece is packed; a half is recorded once, after its last piece.
         */
        void upload(MemorySegment[] src, long[] offsets, long[] sizes, long total, long base, Ops ops) {
            copies.clear();
            long chunk = chunkBytes();
            long piece = Math.min(pieceBytes, chunk);
            int first = 0; // first buffer that may overlap the current piece
            for (long pos = 0; pos < total; pos += chunk) {
                long len = Math.min(chunk, total - pos);
                MemorySegment half = acquire(ops);
                boolean sent = false; // a copy from this half is queued: it must be recorded, even on failure
                try {
                    for (long at = pos; at < pos + len; at += piece) {
                        long end = Math.min(pos + len, at + piece);
                        // pack the bytes of [at, end): the buffers, and zeros in the padding between them
                        while (first < src.length && offsets[first] + sizes[first] <= at) {
                            first++;
                        }
                        long cursor = at;
                        for (int i = first; i < src.length && offsets[i] < end; i++) {
                            long from = Math.max(at, offsets[i]);
                            long to = Math.min(end, offsets[i] + sizes[i]);
                            if (to > from) {
                                copies.zero(half, cursor - pos, from - cursor);
                                copies.copy(src[i], from - offsets[i], half, from - pos, to - from);
                                cursor = to;
                            }
                        }
                        copies.zero(half, cursor - pos, end - cursor);
                        copies.run(); // every slice finished (or failed and threw) before the piece is sent
                        ops.toDevice(base + at, half.asSlice(at - pos, end - at), end - at);
                        sent = true;
                    }
                } finally {
                    if (sent) {
                        release(ops);
                    }
                }
            }
        }

        /**
         * Copies device ranges {@code [base + offsets[i], + sizes[i])} into {@code dst[i]}. Ranges are split
         * into parts that fit a half; parts whose device ranges follow each other with gaps under
         * {@link #ALIGNMENT} (a packed batch) are placed at the same distances in staging and copied with one
         * call. While one half's copies run, the other half is filled.
         */
        void download(long base, long[] offsets, MemorySegment[] dst, long[] sizes, Ops ops) {
            download(base, offsets, null, dst, sizes, ops);
        }

        /**
         * As {@link #download(long, long[], MemorySegment[], long[], Ops)}, joining only parts of ranges of one
         * group ({@code groups[i]}, e.g. the allocation holding range {@code i}); {@code null}: one group.
         */
        void download(long base, long[] offsets, long[] groups, MemorySegment[] dst, long[] sizes, Ops ops) {
            copies.clear();
            long chunk = chunkBytes();
            List<long[]> pending = new ArrayList<>(); // parts {range, offsetInRange, length, stagingOffset}
            int pendingHalf = -1;
            List<long[]> current = new ArrayList<>();
            int currentHalf = -1;
            MemorySegment half = null;
            long used = 0;
            long copyDev = 0; // the copy being assembled: device offset, staging offset, length (0: none)
            long copyStage = 0;
            long copyLen = 0;
            long copyGroup = 0;
            for (int i = 0; i < dst.length; i++) {
                long group = groups == null ? 0 : groups[i];
                long done = 0;
                while (done < sizes[i]) {
                    if (half == null) {
                        currentHalf = next;
                        half = acquire(ops);
                        used = 0;
                    }
                    long dev = offsets[i] + done;
                    long place = alignUp(used);
                    boolean joinable = copyLen > 0 && group == copyGroup;
                    if (joinable && dev >= copyDev + copyLen && dev - (copyDev + copyLen) < ALIGNMENT) {
                        place = copyStage + (dev - copyDev); // keep the packed distance: one copy for both
                    }
                    if (place >= chunk) { // this half is full: queue its copy, unpack the previous half
                        flush(ops, base, copyDev, half, copyStage, copyLen);
                        copyLen = 0;
                        release(ops);
                        if (pendingHalf >= 0) {
                            unpack(ops, pending, pendingHalf, dst);
                        }
                        pending = current;
                        pendingHalf = currentHalf;
                        current = new ArrayList<>();
                        half = null;
                        continue;
                    }
                    long len = Math.min(sizes[i] - done, chunk - place);
                    if (joinable && place >= copyStage + copyLen && dev - copyDev == place - copyStage) {
                        copyLen = place + len - copyStage; // extends the copy over the gap (inside src)
                    } else {
                        flush(ops, base, copyDev, half, copyStage, copyLen);
                        copyDev = dev;
                        copyStage = place;
                        copyLen = len;
                        copyGroup = group;
                    }
                    current.add(new long[] {i, done, len, place});
                    used = place + len;
                    done += len;
                }
            }
            if (half != null) {
                flush(ops, base, copyDev, half, copyStage, copyLen);
                release(ops);
            }
            if (pendingHalf >= 0) {
                unpack(ops, pending, pendingHalf, dst);
            }
            if (half != null) {
                unpack(ops, current, currentHalf, dst);
            }
        }

        private static void flush(Ops ops, long base, long dev, MemorySegment half, long stage, long len) {
            if (len > 0) {
                ops.toHost(half.asSlice(stage, len), base + dev, len);
            }
        }

        /** Waits for a half's copies and copies its parts out to their destinations. */
        private void unpack(Ops ops, List<long[]> parts, int h, MemorySegment[] dst) {
            ops.await(h);
            MemorySegment half = halves[h];
            for (long[] p : parts) {
                copies.copy(half, p[3], dst[(int) p[0]], p[1], p[2]);
            }
            copies.run();
        }

        /** The next half, once the copies last queued from or into it finished. */
        private MemorySegment acquire(Ops ops) {
            if (used[next]) {
                ops.await(next);
            }
            return halves[next];
        }

        /** Marks the copies queued from or into the current half, and turns to the other half. */
        private void release(Ops ops) {
            ops.record(next);
            used[next] = true;
            next = 1 - next;
        }

        /** Waits (through {@code await}) for every copy still using the staging memory. */
        void drain(IntConsumer await) {
            for (int h = 0; h < 2; h++) {
                if (used[h]) {
                    await.accept(h);
                }
            }
        }
    }

    private void checkBuffer(DeviceBuffer src) {
        if (src.device() != device) {
            throw new InvalidArgumentException("src", String.format(Locale.ROOT,
                    "expected a buffer of device %d (the transfer's) but found one of device %d", device, src.device()));
        }
    }

    private void checkStream(CudaStream stream) {
        if (stream.device() != device) {
            throw new InvalidArgumentException("stream", String.format(Locale.ROOT,
                    "expected a stream of device %d (the transfer's) but found one of device %d", device, stream.device()));
        }
    }
}
