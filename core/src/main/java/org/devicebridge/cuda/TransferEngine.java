package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import org.devicebridge.Device;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;

/**
 * What a {@link HostDeviceTransfer} owns and does under its lock: the pinned staging memory and its ring, the
 * events, the counts, and the checks that turn a call's arguments into a batch. The handle's release step is
 * {@link #close()}, so that it does not capture the handle.
 *
 * <p>The lock serialises batches; a {@link PendingDownload} holds it from {@code downloadAsync} until its
 * {@code await()} or {@code close()}, on the thread that started it.
 */
final class TransferEngine {
    final int device;
    final Device identity;
    final StagingRing ring;
    final TransferStatistics stats = new TransferStatistics();
    private final PinnedHostBuffer staging;
    private final TransferEvents events;
    private final DeviceBuffer.Kind uploadMemory;
    private final ReentrantLock lock = new ReentrantLock();
    private PendingDownload pending; // guarded by lock

    private TransferEngine(int device, PinnedHostBuffer staging, StagingRing ring, TransferEvents events,
                           DeviceBuffer.Kind uploadMemory) {
        this.device = device;
        this.identity = Device.cuda(device);
        this.staging = staging;
        this.ring = ring;
        this.events = events;
        this.uploadMemory = uploadMemory;
    }

    /**
     * Allocates the staging ring (pinned, one {@code cuMemHostAlloc}) and takes the events from the device's
     * pool; after a throw nothing is held.
     */
    static TransferEngine create(int device, TransferOptions options) {
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
            return new TransferEngine(device, staging, new StagingRing(chunks, copies), events,
                    options.ipcShareable() ? DeviceBuffer.Kind.IPC_POOL : DeviceBuffer.Kind.POOL);
        } catch (RuntimeException | Error e) {
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

    /** Takes the lock for one batch. */
    void lock() {
        lock.lock();
        if (pending != null) { // this thread's own download is still in flight
            lock.unlock();
            throw new HandleBusyException("expected no download in flight on this transfer but found one started on"
                    + " this thread: await or close it first", null);
        }
    }

    void unlock() {
        lock.unlock();
    }

    /** Ops on {@code stream}, the batch's lane; the stream's device context is current until they are closed. */
    StreamTransferOps ops(CudaStream stream) {
        checkDevice("stream", "stream", Objects.requireNonNull(stream, "stream").ordinal());
        return new StreamTransferOps(stream, events, stats);
    }

    BatchTransfer.Lane lane(TransferOps ops) {
        return new BatchTransfer.Lane(ring, ops, stats);
    }

    /** Marks {@code download} as holding the lock until {@link #finished}. */
    void started(PendingDownload download) {
        pending = download;
    }

    /** Ends what {@link #started} began, and lets the lock go. */
    void finished() {
        pending = null;
        lock.unlock();
    }

    /**
     * Queues an upload (the caller holds the lock and {@code ops}): the allocation, the copies, and an event
     * after the direct copies, if any. After a throw nothing new is held and no copy reads a buffer.
     */
    DeviceUpload upload(List<MemorySegment> buffers, CudaStream stream, StreamTransferOps ops) {
        MemorySegment[] src = Objects.requireNonNull(buffers, "buffers").toArray(new MemorySegment[0]);
        long[] sizes = new long[src.length];
        boolean[] direct = new boolean[src.length];
        for (int i = 0; i < src.length; i++) {
            CudaCopies.checkHost(src[i], "buffers[" + i + "]");
            sizes[i] = src[i].byteSize();
            direct[i] = PointerAttributes.isPageLocked(src[i]);
        }
        BatchTransfer.Layout layout = BatchTransfer.layout(sizes, direct);
        DeviceBuffer dst = DeviceBuffer.allocateAsync(device, layout.total(), stream, uploadMemory);
        CudaEvent copied = null;
        boolean queued = false;
        try {
            stats.batch();
            queued = BatchTransfer.upload(lane(ops), src, layout, dst.address());
            if (queued) {
                copied = CudaEvent.acquire(identity);
                copied.record(stream);
            }
            return new DeviceUpload(dst, layout.offsets(), sizes, copied, stats);
        } catch (RuntimeException | Error e) {
            if (queued) { // no event marks the direct copies: wait for them here
                BatchTransfer.settle(ops, e);
            }
            if (copied != null) {
                copied.close();
            }
            dst.close();
            throw e;
        }
    }

    /** Checks a download's arguments into a batch; classifies each destination. */
    DownloadBatch download(List<DeviceRange> sources, List<MemorySegment> destinations, int leading) {
        Objects.requireNonNull(sources, "sources");
        Objects.requireNonNull(destinations, "destinations");
        int n = sources.size();
        if (destinations.size() != n) {
            throw new InvalidArgumentException("destinations", "expected one destination per source (" + n
                    + ") but found " + destinations.size());
        }
        if (leading < 0 || leading > n) {
            throw new InvalidArgumentException("leading", "expected 0 to " + n + " leading ranges but found " + leading);
        }
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
            checkDevice("src", "buffer", r.buffer().ordinal());
            addresses[i] = r.address(); // checks the buffer is live
            sizes[i] = r.byteSize();
            groups[i] = r.buffer().address(); // one allocation: one group
        }
        for (int i = 0; i < n; i++) {
            direct[i] = PointerAttributes.isPageLocked(dst[i]);
        }
        stats.batch();
        return new DownloadBatch(addresses, groups, dst, sizes, direct, leading);
    }

    void checkDevice(String parameter, String what, int found) {
        if (found != device) {
            throw new InvalidArgumentException(parameter, String.format(Locale.ROOT,
                    "expected a %s of device %d (the transfer's) but found one of device %d", what, device, found));
        }
    }

    /**
     * The release step: finishes this thread's download in flight, if any, waits for the copies still using the
     * staging memory (another thread's batch first), then frees it and returns the events to their pool.
     */
    void close() {
        lock.lock();
        try {
            if (pending != null && lock.getHoldCount() > 1) {
                PendingDownload p = pending;
                p.close();
            }
            ring.drain(s -> events.chunk(s).synchronize());
        } finally {
            try {
                events.close();
            } finally {
                try {
                    staging.close();
                } finally {
                    lock.unlock();
                }
            }
        }
    }
}
