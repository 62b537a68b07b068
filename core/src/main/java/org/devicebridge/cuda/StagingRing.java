package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import java.util.function.IntConsumer;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.internal.WorkerThreads;

/**
 * The staging logic of a {@link HostDeviceTransfer}, apart from the driver so that it can be tested without
 * a GPU: a ring of pinned chunks, reused by every batch, each guarded by its own event. A chunk is written
 * by the host only after the copies last queued from or into it finished.
 *
 * <p>Upload: chunk N+1 (and the next ones, as far as free chunks allow) is packed by the shared copy
 * threads while chunk N's copy to the device runs; a chunk's copy is queued as soon as it is packed.
 * Download: the copies of the next chunks into free chunks are queued ahead; each chunk is unpacked by the
 * copy threads as soon as its copy arrived, while the next chunks' copies run (a {@link Split} download hands
 * its later chunks to a worker). The host waits only for a chunk it needs next.
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

    /**
     * The step of a download whose {@code leadBytes} (with their alignment padding) fill chunks of their own
     * before the {@code lateBytes}: at least {@link #stepFor(long)} of both, and large enough (up to a whole
     * chunk) for the two to fit the ring at once, so that every copy can be queued before the leading chunks
     * are unpacked ({@link #startSplit}).
     */
    long stepFor(long leadBytes, long lateBytes) {
        long step = stepFor(leadBytes + lateBytes);
        if (leadBytes == 0 || lateBytes == 0) {
            return step;
        }
        long fits = chunkBytes;
        for (int lead = 1; lead < chunks.length; lead++) {
            long s = Math.max(BatchTransfer.alignUp((leadBytes + lead - 1) / lead),
                    BatchTransfer.alignUp((lateBytes + chunks.length - lead - 1) / (chunks.length - lead)));
            fits = Math.min(fits, s);
        }
        return Math.max(step, fits);
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

    /** {@code true} if {@code plan} has late chunks and fits the ring at once ({@link #startSplit}). */
    boolean fits(DownloadPlan plan) {
        return plan.chunks() <= chunks.length && plan.leadingChunks() < plan.chunks();
    }

    /**
     * Starts a download of {@code plan} (one that {@link #fits}) into {@code dst}: queues every chunk's copy.
     * After a throw no copy or unpacking writes into a destination.
     */
    Split startSplit(DownloadPlan plan, MemorySegment[] dst, TransferOps ops) {
        return new Split(plan, dst, ops);
    }

    /**
     * A download split at its leading chunks: between {@link #awaitLeading()} and {@link #finish()} a worker waits
     * for each later chunk and hands its unpacking to the workers. A method that throws waits for every unpacking.
     */
    final class Split {
        private final int n;
        private final int leading;
        private final TransferOps ops;
        private WorkerThreads.Job watcher;
        private boolean ended;

        private Split(DownloadPlan plan, MemorySegment[] dst, TransferOps ops) {
            this.n = plan.chunks();
            this.leading = plan.leadingChunks();
            this.ops = ops;
            try {
                for (int c = 0; c < n; c++) {
                    issue(plan, c, ops);
                }
                for (int c = 0; c < n; c++) {
                    addParts(plan, c, dst);
                }
            } catch (RuntimeException | Error e) {
                end(e);
                throw e;
            }
        }

        /** Returns once the leading chunks arrived and were unpacked; starts the worker that brings the others. */
        void awaitLeading() {
            try {
                for (int c = 0; c < leading; c++) {
                    int s = slot(c);
                    ops.await(s);
                    used[s] = false;
                    copies[s].start();
                }
                for (int c = 0; c < leading; c++) {
                    copies[slot(c)].finish();
                }
                watcher = WorkerThreads.startBeside(ignored -> {
                    for (int c = leading; c < n; c++) {
                        ops.awaitElsewhere(slot(c));
                        copies[slot(c)].start(); // its slices go to the workers (one slice: finish() below copies it)
                    }
                    return 0;
                });
            } catch (RuntimeException | Error e) {
                end(e);
                throw e;
            }
        }

        /** Returns once every chunk arrived and was unpacked. */
        void finish() {
            try {
                WorkerThreads.Job w = watcher;
                watcher = null;
                if (w != null) {
                    w.finish();
                }
                for (int c = leading; c < n; c++) {
                    int s = slot(c);
                    copies[s].finish();
                    ops.await(s); // arrived already: counts the chunk's wait on this thread
                    used[s] = false;
                }
                ended = true;
                next = slot(n);
            } catch (RuntimeException | Error e) {
                end(e);
                throw e;
            }
        }

        /** After a failure: no thread starts an unpacking after this, and every started one finished. */
        private void end(Throwable e) {
            if (ended) {
                return;
            }
            ended = true;
            if (watcher != null) {
                try {
                    watcher.finish();
                } catch (RuntimeException | Error more) {
                    e.addSuppressed(more);
                }
                watcher = null;
            }
            finishAll(e);
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
