package org.devicebridge.cuda;

import java.util.Locale;
import org.devicebridge.InvalidArgumentException;

/**
 * How a {@link HostDeviceTransfer} stages pageable memory, and where its uploads allocate device memory.
 *
 * <p>Immutable and thread-safe; it owns nothing.
 *
 * @param stagingBytes pinned staging memory in all, allocated once (rounded down to whole chunks)
 * @param chunkBytes the size of one staging chunk: the largest unit of one staged copy and of one host wait (a
 *     batch smaller than the ring uses each chunk in part); a multiple of {@value HostDeviceTransfer#ALIGNMENT},
 *     at most half of {@code stagingBytes} (the ring has at least two)
 * @param threads threads that pack or unpack one chunk at most (the caller and the shared workers)
 * @param ipcShareable whether uploads allocate from the device's IPC-shareable memory pool instead of its default
 *     pool: device memory another process opens zero-copy ({@link DeviceBuffer#ipcPoolPointer()},
 *     {@link Cuda#sendIpcPool}; a {@code org.devicebridge.ipc.WorkerChannel} hands such batches to its worker
 *     without the copy it makes of the default pool's memory). The pool is made on the first such upload and kept
 *     for the process, one per device, with the default pool's release threshold. Where the driver cannot share
 *     a pool as a POSIX file descriptor ({@code CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES}) uploads use
 *     the default pool all the same, and sharing them copies as before
 */
public record TransferOptions(long stagingBytes, long chunkBytes, int threads, boolean ipcShareable) {
    /** Staging memory by default: 64 MiB. */
    public static final long DEFAULT_STAGING_BYTES = 64L << 20;
    /** Chunk size by default: 8 MiB (bench/RESULTS.md, B6, shows the sweep that chose it). */
    public static final long DEFAULT_CHUNK_BYTES = 8L << 20;

    private static final int ALIGNMENT = HostDeviceTransfer.ALIGNMENT;

    /**
     * Checks the options.
     *
     * @throws InvalidArgumentException if {@code chunkBytes} is not a positive multiple of
     *     {@value HostDeviceTransfer#ALIGNMENT}, {@code stagingBytes} holds fewer than two chunks, or {@code threads}
     *     is below 1
     */
    public TransferOptions {
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
     * Options whose uploads allocate from the device's default pool.
     *
     * @param stagingBytes see the record's parameter
     * @param chunkBytes see the record's parameter
     * @param threads see the record's parameter
     * @throws InvalidArgumentException as the canonical constructor
     */
    public TransferOptions(long stagingBytes, long chunkBytes, int threads) {
        this(stagingBytes, chunkBytes, threads, false);
    }

    /**
     * The defaults: {@value #DEFAULT_STAGING_BYTES} bytes of staging memory in chunks of
     * {@value #DEFAULT_CHUNK_BYTES} bytes, every core (up to 16) packing, uploads into the default pool.
     *
     * @return the default options
     */
    public static TransferOptions defaults() {
        return new TransferOptions(DEFAULT_STAGING_BYTES, DEFAULT_CHUNK_BYTES, StagingCopy.PARALLELISM);
    }

    /**
     * These options with {@code stagingBytes} of staging memory; the chunk shrinks to half of it if it no longer
     * fits twice.
     *
     * @param stagingBytes at least {@code 2 * ALIGNMENT}
     * @return new options
     * @throws InvalidArgumentException if {@code stagingBytes} is too small
     */
    public TransferOptions withStagingBytes(long stagingBytes) {
        if (stagingBytes < 2L * ALIGNMENT) {
            throw new InvalidArgumentException("stagingBytes", "expected at least " + 2 * ALIGNMENT
                    + " bytes of staging memory but found " + stagingBytes);
        }
        long chunk = Math.min(chunkBytes, stagingBytes / 2 / ALIGNMENT * ALIGNMENT);
        return new TransferOptions(stagingBytes, chunk, threads, ipcShareable);
    }

    /**
     * These options with chunks of {@code chunkBytes}.
     *
     * @param chunkBytes see the record's parameter
     * @return new options
     * @throws InvalidArgumentException if the chunk is invalid or does not fit twice
     */
    public TransferOptions withChunkBytes(long chunkBytes) {
        return new TransferOptions(stagingBytes, chunkBytes, threads, ipcShareable);
    }

    /**
     * These options with at most {@code threads} threads per chunk.
     *
     * @param threads at least 1
     * @return new options
     * @throws InvalidArgumentException if {@code threads} is below 1
     */
    public TransferOptions withThreads(int threads) {
        return new TransferOptions(stagingBytes, chunkBytes, threads, ipcShareable);
    }

    /**
     * These options with uploads into the device's IPC-shareable pool ({@code true}) or its default pool.
     *
     * @param ipcShareable see the record's parameter
     * @return new options
     */
    public TransferOptions withIpcShareable(boolean ipcShareable) {
        return new TransferOptions(stagingBytes, chunkBytes, threads, ipcShareable);
    }
}
