package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;

/**
 * The driver calls a {@link StagingRing} makes for one batch, on one stream: asynchronous copies and
 * fills, and the events that say when they finished. Events are numbered: {@code 0 .. chunks - 1} guard
 * the ring's chunks, {@link #BATCH} marks the end of a batch, {@link #LEADING} the end of a download's
 * leading copies. A fake stands in for the driver in tests.
 */
interface TransferOps {
    /** The event recorded after the last copy of a batch. */
    int BATCH = -1;

    /** The event recorded after the leading copies of a download (see {@link DownloadRun}). */
    int LEADING = -2;

    /** Queues a copy of {@code bytes} bytes of host memory to a device address ({@code cuMemcpyHtoDAsync}). */
    void toDevice(long deviceAddress, MemorySegment from, long bytes);

    /** Queues a copy of {@code bytes} bytes from a device address into host memory ({@code cuMemcpyDtoHAsync}). */
    void toHost(MemorySegment to, long deviceAddress, long bytes);

    /** Queues zeroing {@code bytes} bytes of device memory ({@code cuMemsetD8Async}). */
    void zero(long deviceAddress, long bytes);

    /** Marks the work queued so far with {@code event} ({@code cuEventRecord}); a later record replaces it. */
    void record(int event);

    /** Blocks until the work last marked with {@code event} finished ({@code cuEventSynchronize}). */
    void await(int event);

    /** {@code true} if the work last marked with {@code event} finished; never blocks ({@code cuEventQuery}). */
    boolean query(int event);
}
