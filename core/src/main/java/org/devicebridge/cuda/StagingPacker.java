package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;

/**
 * Packs the chunks of one {@link StagingRing} upload, in order, each into its slot: the buffers' bytes and the
 * zeros between them, around the caches for the chunks that start in the upload's last
 * {@code aroundCachesTail} bytes (see the ring's field of that name).
 */
final class StagingPacker {
    private final MemorySegment[] src;
    private final long[] offsets;
    private final long[] sizes;
    private final int[] order;
    private final long stagedBytes;
    private final long step;
    private final long aroundCachesTail;
    private int first; // the first staged buffer that may overlap the next chunk

    /** Packs the staged buffers of {@code layout}, read from {@code src}, in chunks of {@code step} bytes. */
    StagingPacker(MemorySegment[] src, BatchTransfer.Layout layout, long step, long aroundCachesTail) {
        this.src = src;
        this.offsets = layout.offsets();
        this.sizes = layout.sizes();
        this.order = layout.staged();
        this.stagedBytes = layout.stagedBytes();
        this.step = step;
        this.aroundCachesTail = aroundCachesTail;
    }

    /**
     * Collects chunk {@code c}'s copies into {@code chunk} (its slot) through {@code copy} and starts them
     * (chunks are packed in order).
     */
    void pack(int c, StagingCopy copy, MemorySegment chunk) {
        long at = (long) c * step;
        long end = Math.min(stagedBytes, at + step);
        while (first < order.length && offsets[order[first]] + sizes[order[first]] <= at) {
            first++;
        }
        boolean aroundCaches = stagedBytes - at <= aroundCachesTail; // the chunk starts in the tail
        long cursor = at;
        for (int k = first; k < order.length && offsets[order[k]] < end; k++) {
            int i = order[k];
            long from = Math.max(at, offsets[i]);
            long to = Math.min(end, offsets[i] + sizes[i]);
            if (to > from) {
                copy.zero(chunk, cursor - at, from - cursor);
                if (aroundCaches) {
                    copy.pack(src[i], from - offsets[i], chunk, from - at, to - from);
                } else {
                    copy.copy(src[i], from - offsets[i], chunk, from - at, to - from);
                }
                cursor = to;
            }
        }
        copy.zero(chunk, cursor - at, end - cursor);
        copy.start();
    }
}
