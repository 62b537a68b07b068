package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * {@link TransferOps} on one CUDA stream of one device: every call is the driver call named there, its
 * result checked. Events {@code 0 .. n - 1} are the staging chunks', {@link TransferOps#BATCH} the batch's,
 * {@link TransferOps#LEADING} its leading copies'.
 * Used by one batch on one thread: the stream's device context is current on that thread from construction
 * to {@link #close()}, which makes the caller's context current again.
 */
final class StreamTransferOps implements TransferOps, AutoCloseable {
    private final int device;
    private final MemorySegment stream;
    private final TransferEvents events;
    private final TransferStatistics stats;
    private long savedContext;

    /** Ops on {@code stream} (live) with the transfer's events (live); borrows all of them. */
    StreamTransferOps(CudaStream stream, TransferEvents events, TransferStatistics stats) {
        this.device = stream.ordinal();
        this.stream = stream.raw();
        this.events = events;
        this.stats = stats;
        this.savedContext = CudaContext.enter(device); // every call below runs on this thread, in this context
    }

    /** Makes the stream's device context current again after {@link #close()}, until the next close. */
    StreamTransferOps reenter() {
        savedContext = CudaContext.enter(device);
        return this;
    }

    /** Makes the caller's context current again. */
    @Override
    public void close() {
        CudaContext.exit(savedContext);
    }

    private MemorySegment event(int e) {
        return events.raw(e);
    }

    @Override
    public void toDevice(long deviceAddress, MemorySegment from, long bytes) {
        CudaDriver.check("cuMemcpyHtoDAsync_v2", cuda_driver_h.cuMemcpyHtoDAsync_v2(deviceAddress, from, bytes, stream));
    }

    @Override
    public void toHost(MemorySegment to, long deviceAddress, long bytes) {
        CudaDriver.check("cuMemcpyDtoHAsync_v2", cuda_driver_h.cuMemcpyDtoHAsync_v2(to, deviceAddress, bytes, stream));
    }

    @Override
    public void zero(long deviceAddress, long bytes) {
        CudaDriver.check("cuMemsetD8Async", cuda_driver_h.cuMemsetD8Async(deviceAddress, (byte) 0, bytes, stream));
    }

    @Override
    public void record(int e) {
        CudaDriver.check("cuEventRecord", cuda_driver_h.cuEventRecord(event(e), stream));
    }

    @Override
    public void await(int e) {
        stats.hostWait();
        CudaDriver.check("cuEventSynchronize", cuda_driver_h.cuEventSynchronize(event(e)));
    }

    @Override
    public boolean query(int e) {
        int r = cuda_driver_h.cuEventQuery(event(e));
        if (r == cuda_driver_h.CUDA_ERROR_NOT_READY()) {
            return false;
        }
        CudaDriver.check("cuEventQuery", r);
        return true;
    }
}
