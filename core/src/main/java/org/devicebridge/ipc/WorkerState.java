package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.HandleBusyException;
import org.devicebridge.HandleClosedException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.ipc.WorkerChannel.PeerException;

/**
 * What a {@link WorkerChannel} holds for the worker, and the channel's state: the exports the worker has not
 * acknowledged yet (by id), the channel's own reference to every allocation the worker keeps mapped between
 * calls (by handle), those it was told to unmap and has not confirmed, and how many results are still mapped
 * here. The reader thread calls the {@link WorkerLink.Events} methods; callers' threads the others. Thread-safe:
 * one monitor guards the references and the state; exports sit in a concurrent map.
 */
final class WorkerState implements WorkerLink.Events {
    private static final System.Logger LOG = System.getLogger(WorkerChannel.class.getName());

    /** What {@link WorkerChannel#close()} does next. */
    enum Closing { DONE, RELEASE, BYE }

    private enum State { OPEN, CLOSING, STALLED, GONE, CLOSED }

    private final Map<String, IpcExport> exports = new ConcurrentHashMap<>();
    private final Map<String, DeviceBuffer> cached = new LinkedHashMap<>();
    private final Map<String, DeviceBuffer> unmapping = new HashMap<>();
    private final AtomicInteger mappedResults = new AtomicInteger();
    private final WorkerResults results = new WorkerResults();
    private final IpcEventPool<IpcEventPool.SharedEvent> events = IpcEventPool.forChannel();
    private State state = State.OPEN;
    private RuntimeException failure;

    /**
     * @throws HandleClosedException if the channel is closed, or ended on a stall
     * @throws ValidationException the refusal that ended the channel, if one did
     * @throws PeerException {@code EXITED} if the worker is gone
     */
    synchronized void requireOpen() {
        switch (state) {
            case OPEN -> { }
            case GONE -> throw new PeerException(PeerException.Reason.EXITED, "the worker is gone", failure);
            case STALLED -> {
                if (failure != null) {
                    throw failure; // the refusal that ended the channel, as the link gives it to every later read
                }
                throw new HandleClosedException("the worker channel ended when the worker stalled");
            }
            default -> throw new HandleClosedException("the worker channel is closed");
        }
    }

    void register(String id, IpcExport export) {
        exports.put(id, export);
    }

    /** Takes back an export whose call was never queued: the worker never saw it. */
    void forget(String id, Throwable failure) {
        IpcExport s = exports.remove(id);
        if (s != null) {
            try {
                s.forceClose();
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
    }

    /**
     * Decides what the worker keeps mapped after a call that names {@code handles}: each allocation not yet kept
     * gets a reference of the channel's own (so that it outlives the worker's mapping); a null allocation (the
     * export's own copy, never sent again) or one the worker is unmapping goes into {@code transientOut}.
     *
     * @return the handles the worker must unmap first: kept allocations that nothing but the channel holds now
     */
    synchronized List<String> keepMapped(List<byte[]> handles, List<DeviceBuffer> allocations,
                                         List<Integer> transientOut) {
        List<String> unmap = new ArrayList<>();
        for (Iterator<Map.Entry<String, DeviceBuffer>> it = cached.entrySet().iterator(); it.hasNext()
                && unmap.size() < WorkerProtocol.MAX_HANDLE_LIST; ) {
            Map.Entry<String, DeviceBuffer> e = it.next();
            if (e.getValue().referenceCount() == 1) { // only ours: the caller's batches and the exports let go
                it.remove();
                unmapping.put(e.getKey(), e.getValue());
                unmap.add(e.getKey());
            }
        }
        for (int k = 0; k < handles.size(); k++) {
            String hex = WorkerProtocol.hex(handles.get(k));
            DeviceBuffer allocation = allocations.get(k);
            if (allocation == null || unmapping.containsKey(hex)) {
                transientOut.add(k);
            } else if (!cached.containsKey(hex)) {
                cached.put(hex, allocation.retain());
            }
        }
        return unmap;
    }

    @Override
    public void closed(String exportId) {
        IpcExport s = exports.remove(exportId);
        if (s == null) {
            throw new ValidationException(Category.CONTENT, "devicebridge_ipc_closed", "expected the id of an"
                    + " export sent to the worker and not yet closed but found " + JsonFields.describe(exportId));
        }
        try {
            s.acknowledge(Acknowledgement.closeMessage(exportId));
            s.close();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "releasing export " + exportId + " after the worker's close message"
                    + " failed", e);
        }
    }

    @Override
    public void unmapped(List<String> handles) {
        List<DeviceBuffer> drop = new ArrayList<>();
        synchronized (this) {
            for (String h : handles) {
                DeviceBuffer b = unmapping.remove(h);
                if (b == null) {
                    b = cached.remove(h); // the worker let go of its own accord
                }
                if (b != null) {
                    drop.add(b);
                }
            }
        }
        closeQuietly(drop);
    }

    @Override
    public void gone(Throwable cause) {
        synchronized (this) {
            if (state != State.CLOSED) {
                state = State.GONE;
                failure = cause instanceof RuntimeException r ? r : null;
            }
        }
        releaseAll(); // its process is gone, which unmapped everything: nothing here needs to wait
    }

    @Override
    public synchronized void refused(ValidationException cause) {
        if (state == State.OPEN || state == State.CLOSING) {
            state = State.STALLED;
            failure = cause;
        }
    }

    synchronized void stalled() {
        if (state == State.OPEN || state == State.CLOSING) {
            state = State.STALLED;
        }
    }

    /** {@return what the channel keeps open of the worker's results} */
    WorkerResults results() {
        return results;
    }

    /** {@return the interprocess events the channel's calls are recorded on, reused after each acknowledgement} */
    IpcEventPool<IpcEventPool.SharedEvent> events() {
        return events;
    }

    /** Counts a result mapped; {@return what tells the worker, once, that it is unmapped} */
    Runnable teller(WorkerLink link, String closeMessage) {
        mappedResults.incrementAndGet();
        AtomicBoolean told = new AtomicBoolean();
        return () -> {
            if (told.compareAndSet(false, true)) {
                results.sweep(); // a retired slab this result held is unmapped now, confirmed with the next call
                resultUnmapped(link, closeMessage);
            }
        };
    }

    /** A received result is unmapped: tells the worker (unless it is gone), without waiting. */
    void resultUnmapped(WorkerLink link, String closeMessage) {
        mappedResults.decrementAndGet();
        boolean tell;
        synchronized (this) {
            tell = state == State.OPEN || state == State.CLOSING || state == State.STALLED;
        }
        if (tell && closeMessage != null) {
            link.post(closeMessage);
        }
    }

    /**
     * @throws HandleBusyException if a result is still mapped while the worker is there, or the channel stalled
     *         while memory is still shared with the worker
     */
    synchronized Closing beginClose() {
        switch (state) {
            case CLOSED, CLOSING -> {
                return Closing.DONE;
            }
            case GONE -> {
                return Closing.RELEASE;
            }
            case STALLED -> {
                if (!exports.isEmpty() || !cached.isEmpty() || !unmapping.isEmpty()) {
                    throw new HandleBusyException("the worker stalled or broke the protocol while it may still map "
                            + "this process's memory: end its process, then forceClose() the channel", failure);
                }
                return Closing.RELEASE;
            }
            default -> {
                if (mappedResults.get() > 0) {
                    throw new HandleBusyException(mappedResults.get() + " result(s) received from the worker are"
                            + " still open: close them before the channel", null);
                }
                state = State.CLOSING;
                return Closing.BYE;
            }
        }
    }

    /**
     * Force-closes every export, closes the channel's pooled events, and drops every reference the channel holds,
     * and every mapping and event it kept of the worker's results; idempotent.
     */
    void releaseAll() {
        results.clear();
        List<DeviceBuffer> drop;
        synchronized (this) {
            if (state != State.GONE) {
                state = State.CLOSED;
            }
            drop = new ArrayList<>(cached.values());
            drop.addAll(unmapping.values());
            cached.clear();
            unmapping.clear();
        }
        for (Iterator<IpcExport> it = exports.values().iterator(); it.hasNext(); ) {
            IpcExport s = it.next();
            it.remove();
            try {
                s.forceClose();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "force-closing an export sent to the worker failed", e);
            }
        }
        events.closeAll(); // after the exports: an unacknowledged export closes its own event
        closeQuietly(drop);
    }

    private static void closeQuietly(List<DeviceBuffer> refs) {
        for (DeviceBuffer b : refs) {
            try {
                b.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "dropping a reference to memory the worker mapped failed", e);
            }
        }
    }

    @Override
    public synchronized String toString() {
        return state.name().toLowerCase(java.util.Locale.ROOT) + ", " + exports.size() + " exports unacknowledged, "
                + cached.size() + " allocations mapped by the worker, " + mappedResults.get() + " results mapped, "
                + results + ", " + events;
    }
}
