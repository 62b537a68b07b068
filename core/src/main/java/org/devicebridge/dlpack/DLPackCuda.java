package org.devicebridge.internal;

import java.lang.foreign.MemorySegment;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;

/**
 * The CUDA driver calls DLPack's stream protocol needs: make a consumer stream wait for the work submitted
 * so far to a producer stream (record an event on the producer stream, {@code cuStreamWaitEvent} on the
 * consumer's), in the device's primary context, restoring the caller's current context afterwards.
 * The host never blocks.
 */
public final class DLPackCuda {
    private DLPackCuda() {}

    /** Throws {@link CudaUnavailableException} unless the driver is loaded (before any generated CUDA call). */
    public static void require() {
        if (!Cuda.isAvailable()) {
            throw new CudaUnavailableException(Cuda.unavailableReason(), null);
        }
    }

    /**
     * Orders {@code consumerStream} after everything submitted so far to {@code producerStream} on device
     * {@code deviceId}. Stream handles are {@code CUstream} values (0x1 and 0x2 are the legacy and per-thread
     * default streams). The event comes from the device's pool (timing disabled) and goes back at once: a
     * wait already enqueued is not affected by the event's later reuse, so no event is created or destroyed
     * on this per-tensor path.
     */
    public static void makeReady(int deviceId, MemorySegment producerStream, MemorySegment consumerStream) {
        require();
        try (CudaStream producer = CudaStream.borrow(deviceId, producerStream.address());
             CudaStream consumer = CudaStream.borrow(deviceId, consumerStream.address());
             CudaEvent event = CudaEvent.acquire(deviceId)) {
            event.record(producer);
            consumer.waitEvent(event);
        }
    }
}
