package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import org.devicebridge.Device;

/**
 * The events of one {@link HostDeviceTransfer}, by their {@link TransferOps} numbers: one per staging chunk
 * ({@code 0 .. chunks - 1}), {@link TransferOps#BATCH} and {@link TransferOps#LEADING}. Taken from the
 * device's pool at once and returned at once.
 *
 * <p>Owns its events until {@link #close()}; used under the transfer's lock only.
 */
final class TransferEvents implements AutoCloseable {
    private static final int FIRST = -TransferOps.LEADING; // TransferOps numbers start at LEADING = -2

    private final CudaEvent[] events; // event e at e + FIRST
    private final MemorySegment[] raw; // their driver handles, at the same places

    private TransferEvents(CudaEvent[] events) {
        this.events = events;
        this.raw = new MemorySegment[events.length];
        for (int i = 0; i < events.length; i++) {
            raw[i] = events[i].raw();
        }
    }

    /**
     * {@code chunks} chunk events and the batch's two, from the pool of {@code device}; after a throw every event
     * taken so far is back in the pool.
     */
    static TransferEvents acquire(int device, int chunks) {
        CudaEvent[] events = new CudaEvent[chunks + FIRST];
        Device identity = Device.cuda(device);
        try {
            for (int i = 0; i < events.length; i++) {
                events[i] = CudaEvent.acquire(identity);
            }
            return new TransferEvents(events);
        } catch (RuntimeException | Error e) {
            close(events);
            throw e;
        }
    }

    /** The event of chunk {@code chunk}. */
    CudaEvent chunk(int chunk) {
        return events[chunk + FIRST];
    }

    /** The driver handle of event {@code e} (a chunk, {@link TransferOps#BATCH} or {@link TransferOps#LEADING}). */
    MemorySegment raw(int e) {
        return raw[e + FIRST];
    }

    /** Returns every event to its pool. */
    @Override
    public void close() {
        close(events);
    }

    private static void close(CudaEvent[] events) {
        for (CudaEvent e : events) {
            if (e != null) {
                e.close();
            }
        }
    }
}
