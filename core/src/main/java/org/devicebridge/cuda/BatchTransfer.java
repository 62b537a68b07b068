package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;

/**
 * One batch of host buffers to the device or back, apart from the driver so that it can be tested without
 * a GPU: buffers in page-locked memory are copied by the copy engine directly, the others through the
 * staging ring, all queued on one stream (through {@link TransferOps}). A download runs as a
 * {@link DownloadRun}.
 *
 * <p>Upload layout: the staged buffers first, packed in their order at {@value #ALIGNMENT}-byte aligned
 * offsets with zeros between them (packed in the staging chunks), then the direct buffers, in their order,
 * each aligned; the bytes between two direct buffers are zeroed on the device. A batch with no direct buffer
 * is laid out exactly as before direct copies existed: every buffer in order.
 */
final class BatchTransfer {
    static final int ALIGNMENT = HostDeviceTransfer.ALIGNMENT;

    private BatchTransfer() {}

    /**
     * What one batch runs on: the transfer's staging ring, the driver calls on the batch's stream, and the
     * counts. Borrows all three.
     */
    record Lane(StagingRing ring, TransferOps ops, TransferStatistics stats) {}

    /**
     * Where each buffer of an upload lands.
     *
     * @param offsets where buffer {@code i} starts in the device allocation
     * @param sizes the size of buffer {@code i}
     * @param staged the staged buffers, in layout order
     * @param direct the direct buffers, in layout order
     * @param stagedBytes the bytes of the staged region {@code [0, stagedBytes)}
     * @param total the size of the device allocation
     */
    record Layout(long[] offsets, long[] sizes, int[] staged, int[] direct, long stagedBytes, long total) {}

    /** The layout of buffers of {@code sizes} bytes where {@code direct[i]} says which are copied directly. */
    static Layout layout(long[] sizes, boolean[] direct) {
        int n = sizes.length;
        int directCount = 0;
        for (boolean d : direct) {
            directCount += d ? 1 : 0;
        }
        int[] stagedOrder = new int[n - directCount];
        int[] directOrder = new int[directCount];
        long[] offsets = new long[n];
        long end = 0;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (!direct[i]) {
                offsets[i] = alignUp(end);
                end = Math.addExact(offsets[i], sizes[i]);
                stagedOrder[k++] = i;
            }
        }
        long stagedBytes = directCount == 0 ? end : alignUp(end); // the padding before the first direct buffer is staged
        end = stagedBytes;
        k = 0;
        for (int i = 0; i < n; i++) {
            if (direct[i]) {
                offsets[i] = alignUp(end);
                end = Math.addExact(offsets[i], sizes[i]);
                directOrder[k++] = i;
            }
        }
        return new Layout(offsets, sizes.clone(), stagedOrder, directOrder, stagedBytes, end);
    }

    static long alignUp(long v) {
        return Math.addExact(v, ALIGNMENT - 1) & -ALIGNMENT;
    }

    /**
     * Queues the upload of {@code src} laid out by {@code layout} into {@code [base, base + layout.total())}:
     * the zeros between direct buffers, the direct copies, then the staged chunks. The caller records the end
     * of the direct copies if this returns {@code true} (their sources are read by the copy engine until then).
     * After a throw every direct copy already queued has finished (the host waited for it).
     *
     * @return {@code true} if a direct copy was queued
     */
    static boolean upload(Lane lane, MemorySegment[] src, Layout layout, long base) {
        int[] direct = layout.direct();
        long[] offsets = layout.offsets();
        long[] sizes = layout.sizes();
        TransferOps ops = lane.ops();
        boolean queued = false;
        try {
            for (int k = 0; k + 1 < direct.length; k++) {
                long end = offsets[direct[k]] + sizes[direct[k]];
                long gap = offsets[direct[k + 1]] - end;
                if (gap > 0) {
                    ops.zero(base + end, gap);
                }
            }
            for (int i : direct) {
                ops.toDevice(base + offsets[i], src[i], sizes[i]);
                queued = true;
                lane.stats().direct(sizes[i]);
            }
            if (layout.stagedBytes() > 0) {
                lane.ring().upload(src, layout, base, ops);
                lane.stats().staged(layout.stagedBytes());
            }
            return queued;
        } catch (RuntimeException | Error e) {
            if (queued) {
                settle(ops, e);
            }
            throw e;
        }
    }

    /**
     * Copies {@code batch} (its leading count ignored): returns when every byte arrived, one host wait for a
     * batch of direct copies only, one per staging chunk otherwise. After a throw no copy of this batch still
     * writes into a destination.
     */
    static void download(Lane lane, DownloadBatch batch) {
        try (DownloadRun run = DownloadRun.start(lane, batch.withLeading(batch.count()))) {
            run.await();
        }
    }

    /** After a failure: waits for the copies queued so far, so that none still uses a caller's buffer. */
    static void settle(TransferOps ops, Throwable e) {
        try {
            ops.record(TransferOps.BATCH);
            ops.await(TransferOps.BATCH);
        } catch (RuntimeException | Error more) {
            e.addSuppressed(more);
        }
    }
}
