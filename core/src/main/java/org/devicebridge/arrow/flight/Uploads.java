package org.devicebridge.arrow.flight;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.cuda.CudaEvent;

/**
 * The uploads of one received stream, in order, on one stream of one device, overlapped with the network:
 * a batch's copies are queued without a host wait ({@link CudaArrow#uploadAsync}), its host buffers
 * are kept alive by a reference of their own (Flight reuses the stream's root for the next batch), and the
 * host waits for those copies only when the next batch has arrived (or at {@link #close()}), before letting
 * the buffers go: one host wait per batch, while Flight reads the next one. Streams with dictionaries are
 * uploaded synchronously (Flight may replace a dictionary's buffers between batches). Not thread-safe: one
 * receiving thread.
 */
final class Uploads implements AutoCloseable {
    private final DeviceCopies copies;
    /** References to the host buffers the previous batch's copies read, until {@link #copied} is reached. */
    private ArrowRecordBatch held;
    private CudaEvent copied;

    Uploads(DeviceCopies copies) {
        this.copies = copies;
    }

    /**
     * Uploads the batch now in {@code root} and records its event; first waits for the previous batch's
     * copies and releases its host buffers. Flight may reuse {@code root} once this returns.
     *
     * <p>Ownership: after a return the caller owns the batch; after a throw nothing new is held (the copies
     * of this batch, if any were queued, have finished).
     */
    DeviceFlightBatch upload(VectorSchemaRoot root, DictionaryProvider dictionaries) {
        finishPrevious();
        if (hasDictionaries(root)) {
            return withEvent(CudaArrow.upload(root, dictionaries, copies));
        }
        ArrowRecordBatch hold = new VectorUnloader(root).getRecordBatch();
        CudaArrowBatch batch = null;
        CudaEvent done = null;
        try {
            batch = CudaArrow.uploadAsync(root, dictionaries, copies);
            done = CudaEvent.acquire(copies.device());
            done.record(copies.stream());
            DeviceFlightBatch out = withEvent(batch);
            held = hold;
            copied = done;
            return out;
        } catch (RuntimeException | Error e) {
            try {
                // the copy engine may still read the held buffers, and a failed uploadAsync may have left its
                // export with the stream: the wait releases it before Flight reuses or closes the memory
                copies.stream().synchronize();
                if (batch != null) {
                    batch.close();
                }
                if (done != null) {
                    done.close();
                }
            } catch (RuntimeException | Error suppressed) {
                e.addSuppressed(suppressed);
            } finally {
                hold.close();
            }
            throw e;
        }
    }

    /** The batch with an event recorded after it on the copies' stream; the batch is closed after a throw. */
    private DeviceFlightBatch withEvent(CudaArrowBatch batch) {
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

    private static boolean hasDictionaries(VectorSchemaRoot root) {
        for (Field f : root.getSchema().getFields()) {
            if (hasDictionaries(f)) {
                return true;
            }
        }
        return false;
    }

    private static boolean hasDictionaries(Field field) {
        if (field.getDictionary() != null) {
            return true;
        }
        for (Field child : field.getChildren()) {
            if (hasDictionaries(child)) {
                return true;
            }
        }
        return false;
    }

    /** Waits for the previous batch's copies and releases its host buffers (and event), even after a throw. */
    private void finishPrevious() {
        ArrowRecordBatch h = held;
        CudaEvent e = copied;
        held = null;
        copied = null;
        if (h == null) {
            return;
        }
        try {
            e.synchronize();
        } finally {
            try {
                e.close();
            } finally {
                h.close();
            }
        }
    }

    /**
     * Waits for the last batch's copies and releases its host buffers, and the export the stream holds for it
     * ({@link CudaArrow#uploadAsync}): its event was recorded before the one just waited for, so the
     * stream's non-blocking check releases it now, before Flight closes the allocator its buffers came from.
     */
    @Override
    public void close() {
        boolean any = held != null;
        finishPrevious();
        if (any) {
            copies.stream().query();
        }
    }
}
