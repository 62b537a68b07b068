package org.devicebridge.arrow.flight;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.CudaArrowUpload;
import org.devicebridge.cuda.CudaEvent;

/**
 * The uploads of one received stream, in order, on one stream of one device. Not thread-safe: one
 * receiving thread.
 */
final class Uploads implements AutoCloseable {
    private final DeviceCopies copies;

    Uploads(DeviceCopies copies) {
        this.copies = copies;
    }

    /**
     * Uploads the batch now in {@code root} and records its event. The root may be reused by Flight once
     * this returns.
     *
     * <p>Ownership: after a return the caller owns the batch; after a throw nothing new is held.
     */
    DeviceFlightBatch upload(VectorSchemaRoot root, DictionaryProvider dictionaries) {
        CudaArrowBatch batch = CudaArrowUpload.upload(root, dictionaries, copies.transfer(), copies.stream());
        CudaEvent ready = null;
        try {
            ready = CudaEvent.acquire(copies.device());
            ready.record(copies.stream());
            return new DeviceFlightBatch(batch, ready);
        } catch (RuntimeException | Error e) {
            if (ready != null) {
                ready.close();
            }
            batch.close();
            throw e;
        }
    }

    /** Nothing is left in flight once {@link #upload} returns. */
    @Override
    public void close() {}
}
