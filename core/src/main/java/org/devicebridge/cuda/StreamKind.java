package org.devicebridge.cuda;

/**
 * How a new {@link CudaStream} orders itself with the legacy default stream ({@code cuStreamCreate} flags).
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
public enum StreamKind {
    /**
     * {@code CU_STREAM_DEFAULT}: a blocking stream. Work on it waits for work on the legacy default stream
     * and the other way round, as the synchronous copies of {@link CudaCopies} rely on.
     */
    BLOCKING,
    /**
     * {@code CU_STREAM_NON_BLOCKING}: no implicit synchronisation with the legacy default stream (what
     * libraries that share a device usually want; order it with events).
     */
    NON_BLOCKING
}
