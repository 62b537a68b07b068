package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One batch of host buffers to the device or back, apart from the driver so that it can be tested without
 * a GPU: buffers in page-locked memory are copied by the copy engine directly, the others through the
 * staging ring, all queued on one stream (through {@link TransferOps}).
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
     * Where each buffer of an upload lands.
     *
     * @param offsets where buffer {@code i} starts in the device allocation
     * @param staged the staged buffers, in layout order
     * @param direct the direct buffers, in layout order
     * @param stagedBytes the bytes of the staged region {@code [0, stagedBytes)}
     * @param total the size of the device allocation
     */
    record Layout(long[] offsets, int[] staged, int[] direct, long stagedBytes, long total) {}

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
        return new Layout(offsets, stagedOrder, directOrder, stagedBytes, end);
    }

    static long alignUp(long v) {
        return Math.addExact(v, ALIGNMENT - 1) & -ALIGNMENT;
    }

    /**
     * Queues the upload of {@code src} laid out by {@code layout} into {@code [base, base + layout.total())}:
     * the zeros between direct buffers, the direct copies, then the staged chunks; then records
     * {@link TransferOps#BATCH} if a direct copy was queued (its source is read by the copy engine until
     * that event). After a throw every direct copy already queued has finished (the host waited for it).
     *
     * @return {@code true} if a direct copy was queued (the caller waits for {@code BATCH} before the
     *     sources may change)
     */
    static boolean upload(StagingRing ring, MemorySegment[] src, long[] sizes, Layout layout, long base,
                          TransferOps ops, TransferStatistics stats) {
        int[] direct = layout.direct();
        long[] offsets = layout.offsets();
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
                stats.direct(sizes[i]);
            }
            if (layout.stagedBytes() > 0) {
                ring.upload(src, offsets, sizes, layout.staged(), layout.stagedBytes(), base, ops);
                stats.staged(layout.stagedBytes());
            }
            if (queued) {
                ops.record(TransferOps.BATCH);
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
     * Copies device ranges {@code [addresses[i], + sizes[i])} into {@code dst[i]}: destinations in
     * page-locked memory ({@code direct[i]}) by the copy engine directly, the others through the staging ring
     * (ranges of one group, e.g. one allocation, that follow each other closely share a copy; {@code groups}
     * may be {@code null}: one group). Returns when every byte arrived: one host wait for a batch of direct
     * copies only, one per staging chunk otherwise. After a throw no copy of this batch still writes into a
     * destination.
     *
     * <p>With {@code afterLeading} (else {@code null}): ranges {@code [0, leading)} are queued first and
     * {@code afterLeading} runs on this thread once they arrived, before this returns. Where every range is
     * direct that is while the others may still be arriving (two host waits: {@link TransferOps#LEADING},
     * then {@link TransferOps#BATCH}); otherwise once every range arrived. If it throws, the copies are
     * waited for, then its exception is thrown.
     */
    static void download(StagingRing ring, long[] addresses, long[] groups, MemorySegment[] dst, long[] sizes,
                         boolean[] direct, int leading, Runnable afterLeading, TransferOps ops,
                         TransferStatistics stats) {
        int n = dst.length;
        boolean allDirect = true;
        for (int i = 0; i < n; i++) {
            allDirect &= direct[i] || sizes[i] == 0;
        }
        if (afterLeading == null || leading >= n) {
            download(ring, addresses, groups, dst, sizes, direct, ops, stats);
            if (afterLeading != null) {
                afterLeading.run();
            }
            return;
        }
        if (!allDirect) {
            downloadStaged(ring, addresses, groups, dst, sizes, direct, leading, afterLeading, ops, stats);
            return;
        }
        boolean queued = false;
        boolean leadingRecorded = false; // none when the leading ranges have no bytes
        try {
            for (int i = 0; i < n; i++) {
                if (i == leading && queued) {
                    ops.record(TransferOps.LEADING);
                    leadingRecorded = true;
                }
                if (sizes[i] > 0) {
                    ops.toHost(dst[i], addresses[i], sizes[i]);
                    queued = true;
                    stats.direct(sizes[i]);
                }
            }
            ops.record(TransferOps.BATCH);
        } catch (RuntimeException | Error e) {
            if (queued) {
                settle(ops, e);
            }
            throw e;
        }
        try {
            if (leadingRecorded) {
                ops.await(TransferOps.LEADING);
            }
            afterLeading.run();
        } catch (RuntimeException | Error e) {
            settle(ops, e);
            throw e;
        }
        ops.await(TransferOps.BATCH);
    }

    /** {@link #download(StagingRing, long[], long[], MemorySegment[], long[], boolean[], int, Runnable, TransferOps, TransferStatistics)} without work between. */
    static void download(StagingRing ring, long[] addresses, long[] groups, MemorySegment[] dst, long[] sizes,
                         boolean[] direct, TransferOps ops, TransferStatistics stats) {
        downloadStaged(ring, addresses, groups, dst, sizes, direct, dst.length, null, ops, stats);
    }

    /**
     * The downloads of a batch with a staged range (or none at all): the direct copies first, then the staged
     * ranges through the ring, the leading ones in chunks of their own, and {@code work} (if not null) run by
     * the ring once those arrived ({@link StagingRing#download(DownloadPlan, MemorySegment[], TransferOps,
     * Runnable)}: the direct copies, queued before, have arrived too).
     */
    private static void downloadStaged(StagingRing ring, long[] addresses, long[] groups, MemorySegment[] dst,
                                       long[] sizes, boolean[] direct, int leading, Runnable work, TransferOps ops,
                                       TransferStatistics stats) {
        int n = dst.length;
        int stagedCount = 0;
        int stagedLeading = 0;
        boolean queued = false;
        try {
            for (int i = 0; i < n; i++) {
                if (sizes[i] == 0) {
                    continue;
                }
                if (direct[i]) {
                    ops.toHost(dst[i], addresses[i], sizes[i]);
                    queued = true;
                    stats.direct(sizes[i]);
                } else {
                    stagedLeading += i < leading ? 1 : 0;
                    stagedCount++;
                }
            }
            if (stagedCount > 0) {
                long[] a = new long[stagedCount];
                long[] s = new long[stagedCount];
                long[] g = groups == null ? null : new long[stagedCount];
                MemorySegment[] d = new MemorySegment[stagedCount];
                int k = 0;
                for (int i = 0; i < n; i++) {
                    if (!direct[i] && sizes[i] > 0) {
                        a[k] = addresses[i];
                        s[k] = sizes[i];
                        d[k] = dst[i];
                        if (g != null) {
                            g[k] = groups[i];
                        }
                        k++;
                    }
                }
                // the staged copies are queued after the direct ones: the last chunk's wait covers them all
                long step = work == null ? ring.stepFor(Arrays.stream(s).sum())
                        : ring.stepFor(padded(s, 0, stagedLeading), padded(s, stagedLeading, stagedCount));
                DownloadPlan plan = DownloadPlan.of(a, s, g, step, stagedLeading);
                for (long bytes : s) {
                    stats.staged(bytes);
                }
                if (work == null) {
                    ring.download(plan, d, ops);
                } else {
                    ring.download(plan, d, ops, work);
                }
            } else if (queued) {
                ops.record(TransferOps.BATCH);
                ops.await(TransferOps.BATCH);
                if (work != null) {
                    work.run();
                }
            }
        } catch (RuntimeException | Error e) {
            if (queued) {
                settle(ops, e);
            }
            throw e;
        }
    }

    /** The bytes of ranges {@code [from, to)} with the padding a download plan may put before each. */
    private static long padded(long[] sizes, int from, int to) {
        long bytes = 0;
        for (int i = from; i < to; i++) {
            bytes += sizes[i] + ALIGNMENT - 1;
        }
        return bytes;
    }

    /**
     * Runs {@code work} while an upload's queued copies run, then waits once for its direct copies (if
     * {@code direct}); if {@code work} throws, waits for them first ({@link #settle}), then throws.
     */
    static void runWhileCopying(Runnable work, boolean direct, TransferOps ops) {
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            if (direct) {
                settle(ops, e);
            }
            throw e;
        }
        if (direct) {
            ops.await(TransferOps.BATCH);
        }
    }

    /** After a failure: waits for the copies queued so far, so that none still uses a caller's buffer. */
    private static void settle(TransferOps ops, Throwable e) {
        try {
            ops.record(TransferOps.BATCH);
            ops.await(TransferOps.BATCH);
        } catch (RuntimeException | Error more) {
            e.addSuppressed(more);
        }
    }
}
