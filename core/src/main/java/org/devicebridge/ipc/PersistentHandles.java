package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The worker's allocations (or events) that a {@link WorkerChannel} keeps open between results, by handle: the
 * worker marks a handle persistent when it keeps what it names alive for later results, so that this process
 * opens it once ({@code cuIpcOpenMemHandle}, {@code cuIpcOpenEventHandle}) and each result takes a reference of
 * the cached opening instead of opening its own. At most {@code capacity} handles are kept; a persistent handle
 * beyond that is opened per result as a transient one is. A handle the worker retires is closed once nothing but
 * this cache holds it, and its hex is then handed out once by {@link #drainRetired} for the worker's
 * confirmation. Thread-safe: one monitor.
 *
 * @param <B> what an opened handle is (a {@link org.devicebridge.cuda.DeviceBuffer}, a
 *            {@link org.devicebridge.cuda.CudaEvent}); the operations come from {@link Ops}, so that the bounds
 *            and the lifecycle are tested without a driver
 */
final class PersistentHandles<B> {
    /** How this cache opens, shares and closes what it keeps. */
    interface Ops<B> {
        /** {@return the opened handle, which the caller owns} */
        B open(int device, byte[] handle);

        /** {@return another reference to {@code opened}, which the caller owns} */
        B retain(B opened);

        /** {@return how many references to {@code opened} are live (1 when only this cache's is)} */
        int references(B opened);

        /** Drops one reference; never throws for a reference this cache holds. */
        void close(B opened);
    }

    private static final System.Logger LOG = System.getLogger(WorkerChannel.class.getName());

    private final Ops<B> ops;
    private final int capacity;
    private final Map<String, B> open = new LinkedHashMap<>();
    private final Map<String, B> retiring = new LinkedHashMap<>();
    private final List<String> retired = new ArrayList<>();
    private long opens;
    private boolean cleared;

    PersistentHandles(Ops<B> ops, int capacity) {
        this.ops = ops;
        this.capacity = capacity;
    }

    /**
     * {@return a reference to what {@code handle} names on {@code device}, which the caller owns and closes}: the
     * cached opening, retained, when there is one or when {@code persistent} and there is room (opened first);
     * else a fresh opening of the caller's own.
     */
    B acquire(int device, byte[] handle, boolean persistent) {
        String hex = WorkerProtocol.hex(handle);
        synchronized (this) {
            B cached = cached(device, handle, hex, persistent);
            if (cached != null) {
                return ops.retain(cached);
            }
            opens++;
            return ops.open(device, handle);
        }
    }

    /**
     * Runs {@code action} on what {@code handle} names on {@code device}, under this cache's monitor (so that a
     * concurrent {@link #clear()} waits for it): the cached opening when there is one or when {@code persistent}
     * and there is room (opened first), else one opened for the action and closed after it.
     */
    synchronized void use(int device, byte[] handle, boolean persistent, Consumer<B> action) {
        B cached = cached(device, handle, WorkerProtocol.hex(handle), persistent);
        if (cached != null) {
            action.accept(cached);
            return;
        }
        opens++;
        B once = ops.open(device, handle);
        try {
            action.accept(once);
        } finally {
            ops.close(once);
        }
    }

    /**
     * The cached opening of {@code hex} (a retiring one too: the driver need not open a handle twice), opened and
     * kept now if {@code persistent} and there is room; or null.
     */
    private B cached(int device, byte[] handle, String hex, boolean persistent) {
        B cached = open.get(hex);
        if (cached == null) {
            cached = retiring.get(hex);
        }
        if (cached == null && persistent && !cleared && open.size() + retiring.size() < capacity) {
            opens++;
            cached = ops.open(device, handle);
            open.put(hex, cached);
        }
        return cached;
    }

    /** The worker retires {@code hexHandles}: each is closed once only this cache holds it (see {@link #drainRetired}). */
    synchronized void retire(List<String> hexHandles) {
        for (String hex : hexHandles) {
            B b = open.remove(hex);
            if (b != null) {
                retiring.put(hex, b);
            } else if (!retiring.containsKey(hex) && !retired.contains(hex)) {
                retired.add(hex); // never mapped here (or no more): confirmed as it is
            }
        }
    }

    /**
     * Closes the retiring handles that nothing but this cache holds any more, and {@return at most {@code max}
     * retired handles (hex) not yet handed out}: unmapped here, for the worker to free.
     */
    List<String> drainRetired(int max) {
        List<B> drop = new ArrayList<>();
        List<String> out;
        synchronized (this) {
            for (Iterator<Map.Entry<String, B>> it = retiring.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, B> e = it.next();
                if (ops.references(e.getValue()) == 1) {
                    it.remove();
                    drop.add(e.getValue());
                    retired.add(e.getKey());
                }
            }
            int n = Math.min(max, retired.size());
            out = new ArrayList<>(retired.subList(0, n));
            retired.subList(0, n).clear();
        }
        closeQuietly(drop);
        return out;
    }

    /**
     * Drops this cache's reference to everything it holds (a result still open keeps its own reference, and with
     * it the mapping, until it closes) and keeps nothing from now on; idempotent.
     */
    void clear() {
        List<B> drop;
        synchronized (this) {
            cleared = true;
            drop = new ArrayList<>(open.values());
            drop.addAll(retiring.values());
            open.clear();
            retiring.clear();
            retired.clear();
        }
        closeQuietly(drop);
    }

    /** {@return how many handles this cache has opened, kept or not} */
    synchronized long opens() {
        return opens;
    }

    /** {@return how many handles are kept open now (retiring ones included)} */
    synchronized int size() {
        return open.size() + retiring.size();
    }

    private void closeQuietly(List<B> drop) {
        for (B b : drop) {
            try {
                ops.close(b);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "closing a cached opening of the worker's memory failed", e);
            }
        }
    }

    @Override
    public synchronized String toString() {
        return open.size() + " kept, " + retiring.size() + " retiring, " + opens + " opened";
    }
}
