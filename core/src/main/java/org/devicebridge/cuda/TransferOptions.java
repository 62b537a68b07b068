package org.devicebridge.cuda;

import java.util.Locale;
import org.devicebridge.InvalidArgumentException;

/**
 * How a {@link HostDeviceTransfer} stages pageable memory.
 *
 * <p>Immutable and thread-safe; it owns nothing.
 *
 * @param stagingBytes pinned staging memory in all, allocated once (rounded down to whole chunks)
 * @param chunkBytes the size of one staging chunk: the largest unit of one staged copy and of one host wait (a
 *     batch smaller than the ring uses each chunk in part); a multiple of {@value HostDeviceTransfer#ALIGNMENT},
 *     at most half of {@code stagingBytes} (the ring has at least two)
 * @param threads threads that pack or unpack one chunk at most (the caller and the shared workers)
 */
public record TransferOptions(long stagingBytes, long chunkBytes, int threads) {
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
     * The defaults: {@value #DEFAULT_STAGING_BYTES} bytes of staging memory in chunks of
     * {@value #DEFAULT_CHUNK_BYTES} bytes, and every core (up to 16) packing.
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
        return new TransferOptions(stagingBytes, chunk, threads);
    }

    /**
     * These options with chunks of {@code chunkBytes}.
     *
     * @param chunkBytes see the record's parameter
     * @return new options
     * @throws InvalidArgumentException if the chunk is invalid or does not fit twice
     */
    public TransferOptions withChunkBytes(long chunkBytes) {
        return new TransferOptions(stagingBytes, chunkBytes, threads);
    }

    /**
     * These options with at most {@code threads} threads per chunk.
     *
     * @param threads at least 1
     * @return new options
     * @throws InvalidArgumentException if {@code threads} is below 1
     */
    public TransferOptions withThreads(int threads) {
        return new TransferOptions(stagingBytes, chunkBytes, threads);
    }
}
