package org.devicebridge.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A batch of host buffers packed into one device allocation by {@link HostDeviceTransfer#upload} or
 * {@link HostDeviceTransfer#uploadAsync}: buffer {@code i} starts at {@code offsets()[i]} (a multiple of
 * {@value HostDeviceTransfer#ALIGNMENT}) and holds {@code sizes()[i]} bytes; the bytes between buffers are zero.
 *
 * <p>After {@link HostDeviceTransfer#uploadAsync} the copy engine may still read page-locked host buffers:
 * {@link #await()} returns once it no longer does (one host wait if a buffer was copied directly, none
 * otherwise). Thread-safe.
 *
 * <p>Owns the allocation and the event that marks the end of its direct copies: {@link #close()} (idempotent)
 * frees the allocation, stream-ordered on the upload's stream, and returns the event to its pool without
 * waiting for it.
 */
public final class DeviceUpload implements AutoCloseable {
    private final DeviceBuffer buffer;
    private final long[] offsets;
    private final long[] sizes;
    private final TransferStatistics stats;
    private CudaEvent directCopies; // guarded by this; null once awaited or closed, or if there were none

    DeviceUpload(DeviceBuffer buffer, long[] offsets, long[] sizes, CudaEvent directCopies, TransferStatistics stats) {
        this.buffer = Objects.requireNonNull(buffer, "buffer");
        this.offsets = offsets.clone();
        this.sizes = sizes.clone();
        this.directCopies = directCopies;
        this.stats = stats;
    }

    /** {@return the device allocation holding every buffer; this upload owns it} */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /** {@return a copy of where each buffer starts in {@link #buffer()}} */
    public long[] offsets() {
        return offsets.clone();
    }

    /** {@return a copy of the size of each buffer in bytes} */
    public long[] sizes() {
        return sizes.clone();
    }

    /** {@return the number of buffers in the batch} */
    public int count() {
        return offsets.length;
    }

    /**
     * The batch's buffers as ranges of {@link #buffer()}, e.g. to {@link HostDeviceTransfer#download} them.
     *
     * @return ranges borrowing {@link #buffer()}
     */
    public List<DeviceRange> ranges() {
        List<DeviceRange> ranges = new ArrayList<>(offsets.length);
        for (int i = 0; i < offsets.length; i++) {
            ranges.add(new DeviceRange(buffer, offsets[i], sizes[i]));
        }
        return List.copyOf(ranges);
    }

    /**
     * Blocks until the copy engine no longer reads the upload's host buffers: waits once for the direct copies
     * of page-locked buffers (if any, and not yet waited for); pageable buffers were read before the upload
     * returned. Later calls return at once. It does not wait for the staged copies into the device allocation:
     * work queued on the upload's stream is ordered after them.
     *
     * @throws CudaException if the wait fails (the event is returned to its pool all the same)
     */
    public void await() {
        CudaEvent e;
        synchronized (this) {
            e = directCopies;
            directCopies = null;
        }
        if (e != null) {
            try (e) {
                stats.hostWait();
                e.synchronize();
            }
        }
    }

    /** Frees the allocation (stream-ordered, on the upload's stream); does not wait for the copies. */
    @Override
    public void close() {
        CudaEvent e;
        synchronized (this) {
            e = directCopies;
            directCopies = null;
        }
        try {
            if (e != null) {
                e.close();
            }
        } finally {
            buffer.close();
        }
    }
}
