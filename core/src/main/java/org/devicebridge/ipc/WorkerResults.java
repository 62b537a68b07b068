package org.devicebridge.ipc;

import java.util.List;
import org.devicebridge.Device;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;

/**
 * What a {@link WorkerChannel} keeps open of its worker's results: the allocations the worker keeps alive for
 * later results (its slabs, listed in a result's {@code persistent}), mapped once and shared by every result
 * that names them, and the worker's events ({@code persistent_event}), opened once each. Each result holds a
 * reference of its own to a kept mapping ({@link DeviceBuffer#retain()}); closing the result drops only that.
 * Everything kept is dropped by {@link #clear()} (the goodbye, a forced close, the worker's exit); a slab the
 * worker retires is unmapped once no result holds it and then confirmed to the worker ({@link #retired()}).
 * Thread-safe.
 */
final class WorkerResults {
    /** The most worker allocations kept mapped per channel (the worker keeps fewer slabs). */
    static final int MAX_KEPT_ALLOCATIONS = 8;
    /** The most worker events kept open per channel. */
    static final int MAX_KEPT_EVENTS = 16;

    private static final PersistentHandles.Ops<DeviceBuffer> BUFFERS = new PersistentHandles.Ops<>() {
        @Override
        public DeviceBuffer open(int device, byte[] handle) {
            return DeviceBuffer.openIpcHandle(Device.cuda(device), handle);
        }

        @Override
        public DeviceBuffer retain(DeviceBuffer opened) {
            return opened.retain();
        }

        @Override
        public int references(DeviceBuffer opened) {
            return opened.referenceCount();
        }

        @Override
        public void close(DeviceBuffer opened) {
            opened.close();
        }
    };

    private static final PersistentHandles.Ops<CudaEvent> EVENTS = new PersistentHandles.Ops<>() {
        @Override
        public CudaEvent open(int device, byte[] handle) {
            return CudaEvent.openIpcHandle(Device.cuda(device), handle);
        }

        @Override
        public CudaEvent retain(CudaEvent opened) {
            throw new UnsupportedOperationException("an event is only used under the cache's monitor");
        }

        @Override
        public int references(CudaEvent opened) {
            return 1; // only the cache's: events are used under its monitor and never handed out
        }

        @Override
        public void close(CudaEvent opened) {
            opened.close();
        }
    };

    private final PersistentHandles<DeviceBuffer> allocations;
    private final PersistentHandles<CudaEvent> events;

    WorkerResults() {
        this(BUFFERS, EVENTS);
    }

    /** With other operations than the driver's: tests count the opens and closes on fakes. */
    WorkerResults(PersistentHandles.Ops<DeviceBuffer> buffers, PersistentHandles.Ops<CudaEvent> events) {
        this.allocations = new PersistentHandles<>(buffers, MAX_KEPT_ALLOCATIONS);
        this.events = new PersistentHandles<>(events, MAX_KEPT_EVENTS);
    }

    /**
     * {@return where the import of the result {@code header} announces takes its mappings and event}: the kept
     * ones for what the header marks persistent, fresh ones for the rest
     *
     * @param header the result's header
     * @param handleCount how many handles its descriptor names
     * @throws ValidationException {@code STRUCTURE} for a persistent index beyond the descriptor's handles
     */
    IpcMappings mappings(WorkerProtocol.Message header, int handleCount) {
        List<Integer> persistent = header.persistent();
        for (int i = 0; i < persistent.size(); i++) {
            if (persistent.get(i) >= handleCount) {
                throw new ValidationException(Category.STRUCTURE, "persistent[" + i + "]", "expected an index below "
                        + handleCount + " (the descriptor's handles) but found " + persistent.get(i));
            }
        }
        boolean persistentEvent = header.persistentEvent();
        return new IpcMappings() {
            @Override
            public DeviceBuffer map(Device device, int k, byte[] handle) {
                return allocations.acquire(device.ordinal(), handle, persistent.contains(k));
            }

            @Override
            public void waitEvent(CudaStream stream, byte[] handle) {
                events.use(stream.device().ordinal(), handle, persistentEvent, stream::waitEvent);
            }
        };
    }

    /** The worker retires the allocations {@code hexHandles} names: each is unmapped once no result holds it. */
    void retire(List<String> hexHandles) {
        allocations.retire(hexHandles);
    }

    /** Unmaps the retired allocations no result holds any more (a result just closed); confirms nothing yet. */
    void sweep() {
        allocations.drainRetired(0);
    }

    /** {@return the retired allocations unmapped since the last call, for the next call's {@code retired}} */
    List<String> retired() {
        return allocations.drainRetired(WorkerProtocol.MAX_RETIRE_LIST);
    }

    /** Drops every kept mapping and event (results still open keep theirs until they close); idempotent. */
    void clear() {
        try {
            allocations.clear();
        } finally {
            events.clear();
        }
    }

    /** {@return how many worker allocations this channel has mapped, kept or per result} */
    long allocationOpens() {
        return allocations.opens();
    }

    /** {@return how many worker allocations are kept mapped now} */
    int keptAllocations() {
        return allocations.size();
    }

    /** {@return how many worker events this channel has opened} */
    long eventOpens() {
        return events.opens();
    }

    @Override
    public String toString() {
        return "worker allocations " + allocations + ", events " + events;
    }
}
