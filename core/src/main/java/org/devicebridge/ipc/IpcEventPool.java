package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.cuda.CudaEvent;

/**
 * The interprocess events a {@link WorkerChannel} records its calls' readiness on, kept for the channel's life so
 * that a call neither creates an event ({@code cuEventCreate} with {@code CU_EVENT_INTERPROCESS}) nor makes the
 * worker open one ({@code cuIpcOpenEventHandle}): both are costly, each backed by a shared-memory object. An event
 * goes back to the pool only once the worker acknowledged the export it was sent with: by then the worker has
 * queued its wait on it, and a later record makes only a later wait wait on later work.
 *
 * <p>At most {@code capacity} events belong to the pool ({@link Taken#persistent()}); they live until
 * {@link #closeAll()}, so the worker may keep each one's opening for the channel's life (the call header says
 * {@code persistent_event}). An event taken while all of them are out is transient: created for its export,
 * closed on release, and the worker opens it for that call only. A pooled event whose export is released without
 * the acknowledgement (the worker is gone) is closed, not reused. A pool of capacity 0 ({@link #unpooled()}) is
 * today's one event per export, for an export made without a channel.
 *
 * <p>Thread-safe: one monitor guards the lists and counts; events are created and closed outside it.
 *
 * @param <E> what an event is (a {@link SharedEvent}; a fake in tests), made and closed by {@link Ops}
 */
final class IpcEventPool<E> {
    /** The most events a channel's pool owns. */
    static final int MAX_POOLED = 8;

    /** How the pool makes and closes events. */
    interface Ops<E> {
        /** {@return a new interprocess event of {@code device}, which the caller owns} */
        E create(Device device);

        /** Destroys {@code event}. */
        void close(E event);
    }

    /** An interprocess event and its IPC handle, read once ({@code cuIpcGetEventHandle}). */
    record SharedEvent(CudaEvent event, byte[] handle) {}

    /** An event taken from the pool: {@code persistent} when it belongs to the pool, else closed on release. */
    record Taken<E>(E event, Device device, boolean persistent) {}

    private static final Ops<SharedEvent> DRIVER = new Ops<>() {
        @Override
        public SharedEvent create(Device device) {
            CudaEvent e = CudaEvent.createInterprocess(device);
            try {
                return new SharedEvent(e, e.ipcHandle());
            } catch (RuntimeException | Error t) {
                e.close();
                throw t;
            }
        }

        @Override
        public void close(SharedEvent event) {
            event.event().close();
        }
    };

    private static final System.Logger LOG = System.getLogger(WorkerChannel.class.getName());

    private final Ops<E> ops;
    private final int capacity;
    private final List<Taken<E>> free = new ArrayList<>();
    private int owned;
    private long created;
    private boolean closed;

    IpcEventPool(Ops<E> ops, int capacity) {
        this.ops = Objects.requireNonNull(ops, "ops");
        this.capacity = capacity;
    }

    /** {@return a channel's pool of driver events} */
    static IpcEventPool<SharedEvent> forChannel() {
        return new IpcEventPool<>(DRIVER, MAX_POOLED);
    }

    /** {@return a pool that keeps nothing: one event per export, closed on release} */
    static IpcEventPool<SharedEvent> unpooled() {
        return new IpcEventPool<>(DRIVER, 0);
    }

    /**
     * {@return an event of {@code device}, which the caller gives back with {@link #give}}: a free pooled one, else a
     * new one (pooled while the pool owns fewer than its capacity, transient otherwise)
     */
    Taken<E> take(Device device) {
        Objects.requireNonNull(device, "device");
        boolean persistent;
        synchronized (this) {
            for (Iterator<Taken<E>> it = free.iterator(); it.hasNext(); ) {
                Taken<E> t = it.next();
                if (t.device().equals(device)) {
                    it.remove();
                    return t;
                }
            }
            persistent = !closed && owned < capacity;
            if (persistent) {
                owned++;
            }
            created++;
        }
        try {
            return new Taken<>(ops.create(device), device, persistent);
        } catch (RuntimeException | Error e) {
            synchronized (this) {
                created--;
                if (persistent) {
                    owned--;
                }
            }
            throw e;
        }
    }

    /**
     * Takes back {@code taken}: a pooled event whose export was {@code acknowledged} is kept for a later call while
     * the pool is open; any other is closed (what closing throws goes to the caller).
     */
    void give(Taken<E> taken, boolean acknowledged) {
        synchronized (this) {
            if (taken.persistent() && acknowledged && !closed) {
                free.add(taken);
                return;
            }
            if (taken.persistent()) {
                owned--;
            }
        }
        ops.close(taken.event());
    }

    /** Closes every free event, and from now on every event given back; idempotent. */
    void closeAll() {
        List<Taken<E>> drop;
        synchronized (this) {
            closed = true;
            drop = new ArrayList<>(free);
            owned -= free.size();
            free.clear();
        }
        for (Taken<E> t : drop) {
            try {
                ops.close(t.event());
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "closing a pooled interprocess event failed", e);
            }
        }
    }

    /** {@return how many events this pool has created, pooled or transient} */
    synchronized long created() {
        return created;
    }

    /** {@return how many pooled events are out or free now} */
    synchronized int owned() {
        return owned;
    }

    /** {@return how many pooled events are free now} */
    synchronized int free() {
        return free.size();
    }

    @Override
    public synchronized String toString() {
        return owned + " events pooled (" + free.size() + " free), " + created + " created";
    }
}
