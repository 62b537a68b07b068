package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;
import org.devicebridge.InvalidArgumentException;

/**
 * The staging logic of a {@link HostDeviceTransfer}, apart from the driver so that it can be tested without
 * a GPU: a ring of pinned chunks, reused by every batch, each guarded by its own event. A chunk is written
 * by the host only after the copies last queued from or into it finished.
 *
 * <p>Upload: chunk N+1 (and the next ones, as far as free chunks allow) is packed by the shared copy
 * threads while chunk N's copy to the device runs; a chunk's copy is queued as soon as it is packed.
 * Download: the copies of the next chunks into free chunks are queued ahead; each chunk is unpacked by the
 * copy threads as soon as its copy arrived, while the next chunks' copies run. The host waits only for a chunk
 * it needs next.
 *
 * <p>Not thread-safe: one ring belongs to one transfer object, whose methods are serialised.
 */
final class StagingRing {
    /** Chunks of a small batch are used in steps no smaller than this (a step's fixed costs stay small). */
    static final long MIN_STEP = 2L << 20;
    /** The private cache of one packing thread that {@link #aroundCachesTail} assumes: 2 MiB of L2. */
    static final long PRIVATE_CACHE_BYTES = 2L << 20;

    private final MemorySegment[] chunks;
    private final StagingCopy[] copies; // the host copies of each chunk, split over threads when large
    private final boolean[] used; // a copy from or into the chunk was queued and not yet seen finished
    private final long chunkBytes;
    /**
     * An upload packs the chunks that start in its last this many bytes around the caches
     * ({@link StagingCopy#pack}), the ones before them with ordinary stores ({@link StagingCopy#copy}): the
     * private caches of the packing threads hold the last bytes each thread wrote, and the copy engine reads
     * lines still dirty there at about half the link's rate (docs/transfers.md; bench/RESULTS.md, B6).
     */
    private final long aroundCachesTail;
    private int next; // the chunk the next batch starts with

    /**
     * A ring over {@code chunks} (at least two, of equal size) whose host copies run through
     * {@code copies} (one per chunk).
     */
    StagingRing(MemorySegment[] chunks, StagingCopy[] copies) {
        this(chunks, copies, copies.length == 0 ? 0 : copies[0].parallelism() * PRIVATE_CACHE_BYTES);
    }

    /** As {@link #StagingRing(MemorySegment[], StagingCopy[])}, with {@link #aroundCachesTail} given. */
    StagingRing(MemorySegment[] chunks, StagingCopy[] copies, long aroundCachesTail) {
        if (chunks.length < 2 || copies.length != chunks.length) {
            throw new InvalidArgumentException("chunks", "expected at least two staging chunks, one copier each, but found "
                    + chunks.length + " chunks and " + copies.length + " copiers");
        }
        this.chunks = chunks.clone();
        this.copies = copies.clone();
        this.used = new boolean[chunks.length];
        this.chunkBytes = chunks[0].byteSize();
        this.aroundCachesTail = aroundCachesTail;
        for (MemorySegment c : chunks) {
            if (c.byteSize() != chunkBytes) {
                throw new InvalidArgumentException("chunks", "expected staging chunks of one size");
            }
        }
    }

    /** Bytes at the end of an upload that are packed around the caches. */
    long aroundCachesTail() {
        return aroundCachesTail;
    }

    /** Bytes one chunk holds. */
    long chunkBytes() {
        return chunkBytes;
    }

    /**
     * The bytes of each chunk that a batch of {@code stagedBytes} uses: a batch smaller than the ring is
     * spread over every chunk, in steps of at least {@link #MIN_STEP}, so that its first copy waits for a
     * small part of the packing, and every step is packed at once.
     */
    long stepFor(long stagedBytes) {
        long perChunk = (stagedBytes + chunks.length - 1) / chunks.length;
        return Math.min(chunkBytes, Math.max(MIN_STEP, BatchTransfer.alignUp(perChunk)));
    }

    /** Number of chunks. */
    int size() {
        return chunks.length;
    }

    private int slot(int chunk) {
        return (int) ((next + (long) chunk) % chunks.length);
    }

    /**
     * Packs the staged buffers of {@code layout} ({@code src[i]} for {@code i} in {@link BatchTransfer.Layout#staged()},
     * at its offset in {@code [0, stagedBytes)}) into {@code [base, base + stagedBytes)} on the device, with
     * zeros between them, chunk by chunk (in steps of {@link #stepFor} bytes). Returns once every chunk's copy
     * is queued: the host buffers have then been read, and the last copies may still run (the chunks' events
     * guard them).
     */
    void upload(MemorySegment[] src, BatchTransfer.Layout layout, long base, TransferOps ops) {
        long stagedBytes = layout.stagedBytes();
        long step = stepFor(stagedBytes);
        int n = Math.toIntExact((stagedBytes + step - 1) / step);
        StagingPacker packer = new StagingPacker(src, layout, step, aroundCachesTail);
        int published = 0;
        int sent = 0;
        try {
            while (sent < n) {
                if (published == sent) {
                    claim(slot(published), ops);
                    pack(packer, published++);
                }
                while (published < n && published - sent < chunks.length && isFree(slot(published), ops)) {
                    pack(packer, published++);
                }
                int s = slot(sent);
                copies[s].finish(); // copies the slices no thread took yet, waits for the others
                long at = (long) sent * step;
                long len = Math.min(step, stagedBytes - at);
                ops.toDevice(base + at, chunks[s].asSlice(0, len), len);
                ops.record(s);
                used[s] = true;
                sent++;
            }
        } catch (RuntimeException | Error e) {
            finishAll(e);
            throw e;
        } finally {
            next = slot(n);
        }
    }

    /** Packs chunk {@code c} of an upload into its slot. */
    private void pack(StagingPacker packer, int c) {
        packer.pack(c, copies[slot(c)], chunks[slot(c)]);
    }

    /**
     * Copies the staged part of a download: {@code plan}'s entry {@code i} fills {@code dst[i]} (at the
     * part offsets the plan gives). Returns when every byte arrived and was unpacked.
     */
    void download(DownloadPlan plan, MemorySegment[] dst, TransferOps ops) {
        int n = plan.chunks();
        int issued = 0;
        int unpacked = 0;
        try {
            while (unpacked < n) {
                if (issued == unpacked) {
                    issue(plan, issued++, ops);
                }
                while (issued < n && issued - unpacked < chunks.length && copies[slot(issued)].isDone()
                        && isFree(slot(issued), ops)) {
                    issue(plan, issued++, ops);
                }
                int s = slot(unpacked);
                ops.await(s);
                used[s] = false;
                StagingCopy copy = copies[s];
                addParts(plan, unpacked, dst);
                if (!copy.start()) {
                    copy.finish(); // not for the pool: unpacked now, while the next chunks' copies run
                }
                unpacked++;
            }
            for (int c = Math.max(0, n - chunks.length); c < n; c++) {
                copies[slot(c)].finish(); // throws the first failure, once every slice stopped
            }
        } catch (RuntimeException | Error e) {
            finishAll(e);
            throw e;
        } finally {
            next = slot(n);
        }
    }

    /** Adds the unpacking of chunk {@code c}'s parts into {@code dst} to its slot's copier (not started). */
    private void addParts(DownloadPlan plan, int c, MemorySegment[] dst) {
        StagingCopy copy = copies[slot(c)];
        MemorySegment chunk = chunks[slot(c)];
        for (int k = plan.firstPart(c); k < plan.firstPart(c + 1); k++) {
            copy.copy(chunk, plan.partStage(k), dst[plan.partEntry(k)], plan.partOffset(k), plan.partLength(k));
        }
    }

    /** Queues chunk {@code c}'s copies into its slot, once the slot's previous use finished. */
    private void issue(DownloadPlan plan, int c, TransferOps ops) {
        int s = slot(c);
        claim(s, ops);
        for (int k = plan.firstCopy(c); k < plan.firstCopy(c + 1); k++) {
            long len = plan.copyLength(k);
            ops.toHost(chunks[s].asSlice(plan.copyStage(k), len), plan.copyDevice(k), len);
        }
        ops.record(s);
        used[s] = true;
    }

    /** Waits until slot {@code s} may be written: its host copies and its last queued copy finished. */
    private void claim(int s, TransferOps ops) {
        copies[s].finish();
        if (used[s]) {
            ops.await(s);
            used[s] = false;
        }
    }

    /** {@code true} (and the slot marked free) if the last copy queued from or into slot {@code s} finished. */
    private boolean isFree(int s, TransferOps ops) {
        if (used[s] && ops.query(s)) {
            used[s] = false;
        }
        return !used[s];
    }

    /** After a failure: waits for every started host copy (their failures are added to {@code e}). */
    private void finishAll(Throwable e) {
        for (StagingCopy c : copies) {
            try {
                c.finish();
            } catch (RuntimeException | Error more) {
                if (more != e) {
                    e.addSuppressed(more);
                }
            }
        }
    }

    /**
     * Waits for every host copy and (through {@code await}, given a chunk's number) every queued copy still
     * using a chunk, before the chunks are freed.
     */
    void drain(IntConsumer await) {
        RuntimeException failure = null;
        for (int s = 0; s < chunks.length; s++) {
            try {
                copies[s].finish();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
            if (used[s]) {
                await.accept(s);
                used[s] = false;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
