package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;

/**
 * The CUDA driver calls DLPack's stream protocol needs: make a consumer stream wait for the work submitted
 * so far to a producer stream (record an event on the producer stream, {@code cuStreamWaitEvent} on the
 * consumer's), in the device's primary context, restoring the caller's current context afterwards.
 * The host never blocks.
 */
final class DLPackCuda {
    private DLPackCuda() {}

    /**
     * Orders {@code consumerStream} after everything submitted so far to {@code producerStream} on device
     * {@code deviceId}. Stream handles are {@code CUstream} values (0x1 and 0x2 are the legacy and per-thread
     * default streams). The event comes from the device's pool (timing disabled) and goes back at once: a
     * wait already enqueued is not affected by the event's later reuse, so no event is created or destroyed
     * on this per-tensor path.
     *
     * @throws org.devicebridge.cuda.CudaUnavailableException without a CUDA driver
     */
    static void makeReady(int deviceId, MemorySegment producerStream, MemorySegment consumerStream) {
        Cuda.require();
        try (CudaStream producer = CudaStream.borrow(deviceId, producerStream.address());
             CudaStream consumer = CudaStream.borrow(deviceId, consumerStream.address());
             CudaEvent event = CudaEvent.acquire(deviceId)) {
            event.record(producer);
            consumer.waitEvent(event);
        }
    }
}
