package org.devicebridge.arrow.flight;

import java.util.Objects;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.CudaEvent;

/**
 * One batch received from a Flight stream into device memory: the batch, and the event recorded on the
 * receiving stream after its copies. Work on that stream may use the batch at once; work on another stream
 * waits for {@code ready} first ({@code otherStream.waitEvent(ready)}), never blocking the host. Exported
 * further with {@code CudaArrow.exportDeviceArray}, the batch gets its own sync event as every export does.
 *
 * <p>Ownership: whoever receives the record owns both parts; {@link #close()} closes the batch (its device
 * memory is freed stream-ordered on the receiving stream) and returns the event to its pool. Immutable; the
 * parts are thread-safe handles.
 *
 * @param batch the device batch
 * @param ready recorded on the receiving stream after the batch's copies were queued
 */
public record DeviceFlightBatch(CudaArrowBatch batch, CudaEvent ready) implements AutoCloseable {
    /**
     * Checks the parts.
     *
     * @throws NullPointerException if a part is null
     */
    public DeviceFlightBatch {
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(ready, "ready");
    }

    /** Closes the batch and the event (each idempotently), the event even if closing the batch fails. */
    @Override
    public void close() {
        try {
            batch.close();
        } finally {
            ready.close();
        }
    }
}
