package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Locale;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.internal.NonTemporalCopy;
import org.devicebridge.internal.WorkerThreads;

/**
 * The host-side copies of one staging chunk (buffers packed into a chunk, or a chunk unpacked out to
 * buffers), collected as one list so that they can be cut into byte slices copied by several threads at
 * once: one thread's copy between pageable and pinned memory (about 8-10 GB/s) is far below the PCIe link,
 * so the staging copies, not the DMA, bound a pageable transfer.
 *
 * <p>{@link #start()} hands the slices to the shared {@link WorkerThreads} (made once, sized to the machine,
 * reused by every transfer) and returns at once, so that a staging ring can pack chunk N+1 while
 * chunk N's DMA runs; {@link #finish()} copies whatever slices no worker took yet on the caller's thread,
 * then waits for the rest. {@link #run()} is both. Chunks smaller than the threshold, and chunks touching
 * a segment confined to the calling thread, are not handed out: {@link #finish()} copies them on the
 * caller's thread. {@link #finish()} returns only when every slice finished, so no thread writes or reads
 * the chunk after it returns, whether it succeeded or not; a failure in any slice is thrown there as a
 * {@link DeviceBridgeException}.
 *
 * <p>Not thread-safe: one instance belongs to one chunk of one staging ring, and between {@link #start()}
 * and {@link #finish()} only {@link #isDone()} may be called.
 */
final class StagingCopy {
    /** Chunks below this many bytes are copied on the caller's thread. */
    static final long DEFAULT_PARALLEL_THRESHOLD = 1L << 20;
    /**
     * No slice is smaller than this, so that a thread's hand-off costs little next to its copy. One thread
     * copies 1 MiB between pageable and pinned memory in about 50 us on the GPU machine, so a 2 MiB step cut
     * in 1 MiB slices kept two threads busy for 100 us; in 256 KiB slices it keeps eight busy for 25 us.
     */
    static final long DEFAULT_MIN_SLICE = 256L << 10;
    /** The shared worker threads: the machine's cores less the caller's, at most 15. */
    static final int WORKERS = WorkerThreads.helpers();
    /** Threads copying one chunk at most, by default: every worker and the caller. */
    static final int PARALLELISM = WORKERS + 1;

    private final long threshold;
    private final long minSlice;
    private final int parallelism;
    private MemorySegment[] from = new MemorySegment[8]; // null: fill with zeros
    private long[] fromOffset = new long[8];
    private MemorySegment[] to = new MemorySegment[8];
    private long[] toOffset = new long[8];
    private boolean[] packed = new boolean[8]; // written for the copy engine to read next: see pack()
    private long packedBytes; // added by pack() over this copier's life
    private long[] start = new long[9]; // start[i]: where piece i begins in the concatenation; start[count]: total
    private int count;
    private boolean confined;
    private WorkerThreads.Job job; // the started job, until finish()

    StagingCopy() {
        this(DEFAULT_PARALLEL_THRESHOLD, DEFAULT_MIN_SLICE, PARALLELISM);
    }

    StagingCopy(long threshold, long minSlice, int parallelism) {
        if (minSlice < 1 || parallelism < 1) {
            throw new InvalidArgumentException(minSlice < 1 ? "minSlice" : "parallelism", "expected a positive value but found "
                    + (minSlice < 1 ? minSlice : parallelism));
        }
        this.threshold = threshold;
        this.minSlice = minSlice;
        this.parallelism = parallelism;
    }

    /** Bytes added by {@link #pack} since this copier was made. */
    long packedBytes() {
        return packedBytes;
    }

    /** Threads copying one chunk at most. */
    int parallelism() {
        return parallelism;
    }

    /** Forgets the pieces of the previous chunk. */
    void clear() {
        Arrays.fill(from, 0, count, null); // drop references to the caller's buffers
        Arrays.fill(to, 0, count, null);
        count = 0;
        confined = false;
    }

    /** Adds a copy of {@code bytes} bytes from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset}. */
    void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        if (bytes > 0) {
            add(src, srcOffset, dst, dstOffset, bytes);
        }
    }

    /**
     * As {@link #copy}, into staging memory that the copy engine reads next: written with {@link NonTemporalCopy}, around
     * the caches where the platform allows it (an unpack is not: whoever reads the buffers next wants them cached).
     */
    void pack(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        if (bytes > 0) {
            add(src, srcOffset, dst, dstOffset, bytes);
            packed[count - 1] = true;
            packedBytes += bytes;
        }
    }

    /** Adds zeroing {@code bytes} bytes of {@code dst} at {@code dstOffset}. */
    void zero(MemorySegment dst, long dstOffset, long bytes) {
        if (bytes > 0) {
            add(null, 0, dst, dstOffset, bytes);
        }
    }

    private void add(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        if (job != null) {
            throw new IllegalStateException("pieces added to a started staging copy");
        }
        if (count == from.length) {
            int n = count * 2;
            from = Arrays.copyOf(from, n);
            fromOffset = Arrays.copyOf(fromOffset, n);
            to = Arrays.copyOf(to, n);
            toOffset = Arrays.copyOf(toOffset, n);
            packed = Arrays.copyOf(packed, n);
            start = Arrays.copyOf(start, n + 1);
        }
        from[count] = src;
        fromOffset[count] = srcOffset;
        to[count] = dst;
        toOffset[count] = dstOffset;
        packed[count] = false; // pack() marks its own
        start[count + 1] = Math.addExact(start[count], bytes);
        confined |= (src != null && !WorkerThreads.canShare(src)) || !WorkerThreads.canShare(dst);
        count++;
    }

    /** Bytes the pieces added since {@link #clear()} copy or zero. */
    long totalBytes() {
        return start[count];
    }

    /** How many slices the current pieces are cut into (1: copied on the caller's thread only). */
    int slices() {
        long total = totalBytes();
        if (parallelism == 1 || confined || total < threshold || total < 2 * minSlice) {
            return 1;
        }
        return (int) Math.min(parallelism, total / minSlice);
    }

    /**
     * Hands the slices of the pieces added since {@link #clear()} to the workers, unless they are copied on the
     * caller's thread (see the class comment); returns at once. Call {@link #finish()} next.
     *
     * @return {@code true} if the workers may take them; {@code false} if {@link #finish()} copies them all
     */
    boolean start() {
        if (job != null) {
            throw new IllegalStateException("staging copy started twice");
        }
        int slices = slices();
        long total = totalBytes();
        job = WorkerThreads.start(slices, s -> {
            copyRange(sliceStart(s, slices, total), sliceStart(s + 1, slices, total));
            return 0;
        }, 0, Long::sum);
        return slices > 1; // one slice: the caller copies it in finish()
    }

    /**
     * Where slice {@code s} of {@code slices} begins ({@code total} for {@code s == slices}): on 64-byte
     * multiples, so that each thread's stores stay on its own cache lines.
     */
    private static long sliceStart(long s, int slices, long total) {
        return s == slices ? total : (total / slices * s) & -64L;
    }

    /** {@code true} if nothing is started, or every slice of the started copy finished; never blocks. */
    boolean isDone() {
        return job == null || job.isDone();
    }

    /** {@code true} between {@link #start()} and {@link #finish()}. */
    boolean isStarted() {
        return job != null;
    }

    /**
     * Copies the slices no worker took yet, waits for the others, and clears. Only clears if nothing was
     * started.
     *
     * @throws DeviceBridgeException if a copy failed (for example a source segment's arena was closed); every
     *     slice has stopped by then
     */
    void finish() {
        WorkerThreads.Job j = job;
        if (j == null) {
            clear(); // pieces added but never started (a failure came between): dropped
            return;
        }
        try {
            j.finish();
        } catch (RuntimeException | Error e) {
            throw failed(e);
        } finally {
            job = null;
            clear();
        }
    }

    /** Copies every piece added since {@link #clear()}, and clears: {@link #start()} then {@link #finish()}. */
    void run() {
        start();
        finish();
    }

    private static DeviceBridgeException failed(Throwable cause) {
        if (cause instanceof DeviceBridgeException d) {
            return d;
        }
        return new DeviceBridgeException(String.format(Locale.ROOT,
                "host copy to or from staging memory failed: %s", cause), cause);
    }

    /** Copies bytes {@code [lo, hi)} of the concatenation of the pieces. */
    void copyRange(long lo, long hi) {
        int i = Arrays.binarySearch(start, 0, count + 1, lo);
        i = i >= 0 ? i : -i - 2; // the piece that contains lo
        for (; i < count && start[i] < hi; i++) {
            long a = Math.max(lo, start[i]);
            long b = Math.min(hi, start[i + 1]);
            if (b <= a) {
                continue;
            }
            long skip = a - start[i];
            if (from[i] == null) {
                to[i].asSlice(toOffset[i] + skip, b - a).fill((byte) 0);
            } else if (packed[i]) {
                NonTemporalCopy.copy(from[i], fromOffset[i] + skip, to[i], toOffset[i] + skip, b - a);
            } else {
                MemorySegment.copy(from[i], fromOffset[i] + skip, to[i], toOffset[i] + skip, b - a);
            }
        }
    }
}
