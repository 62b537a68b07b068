package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.RefCount;

/**
 * A CUDA stream on one device: work submitted to it runs in order. A stream made by {@link #create} is
 * owned: {@link #close()} destroys it (after the work already queued on it finishes, as
 * {@code cuStreamDestroy} does). A stream from {@link #borrow} belongs to someone else and close does
 * nothing to it.
 *
 * <p>Memory allocated on a stream ({@link DeviceBuffer#allocateAsync}) is freed on that stream, so the
 * stream's destruction waits until every such buffer is closed: the {@code CUstream} is reference counted.
 * Methods may be called from any thread; the device's primary context is made current as needed.
 *
 * <p>Each handle also holds what asynchronous calls on it handed over ({@link #closeAfterQueuedWork}): a
 * resource the queued work reads or writes, closed once an event recorded after that work completed. Later
 * calls of {@link #closeAfterQueuedWork}, {@link #query()} and {@link #synchronize()} close what is done
 * without blocking; {@link #close()} waits for the rest first.
 */
public final class CudaStream extends NativeHandle {
    private final Ref ref;
    private final EventGuards guards;

    /** The {@code CUstream} and its device; destroyed when the handle and every buffer freed on it let go. */
    static final class Ref {
        final MemorySegment raw;
        final Device identity;
        final int device;
        final RefCount refs;

        Ref(MemorySegment raw, Device identity, boolean owned) {
            this.raw = raw;
            this.identity = identity;
            this.device = identity.ordinal();
            this.refs = new RefCount(owned ? () -> destroy(raw, device) : () -> { });
        }

        private static void destroy(MemorySegment raw, int device) {
            long saved = CudaContext.enter(device);
            try {
                CudaDriver.check("cuStreamDestroy_v2", cuda_driver_h.cuStreamDestroy_v2(raw));
            } finally {
                CudaContext.exit(saved);
            }
        }
    }

    private CudaStream(Ref ref, EventGuards guards, String description) {
        super(description, () -> {
            try {
                guards.drain(); // what the queued work still uses is released after it, never under it
            } finally {
                ref.refs.release();
            }
        });
        this.ref = ref;
        this.guards = guards;
    }

    /**
     * Creates a non-blocking stream on a device ({@code CU_STREAM_NON_BLOCKING}): no implicit synchronisation
     * with the legacy default stream, what libraries that share a device usually want (order it with events).
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @return a new stream; the caller owns it and closes it. After a throw nothing was created.
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaStream create(Device device) {
        Cuda.requireCudaDevice(device);
        return create(device, cuda_driver_h.CU_STREAM_NON_BLOCKING());
    }

    /**
     * Creates a blocking stream on a device ({@code CU_STREAM_DEFAULT}): work on it waits for work on the legacy
     * default stream and the other way round, as code that mixes it with the synchronous copies of
     * {@link CudaCopies} or with legacy-stream libraries may rely on.
     *
     * @param device a CUDA device ({@link DeviceKind#CUDA})
     * @return a new stream; the caller owns it and closes it. After a throw nothing was created.
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaStream createBlocking(Device device) {
        Cuda.requireCudaDevice(device);
        return create(device, cuda_driver_h.CU_STREAM_DEFAULT());
    }

    private static CudaStream create(Device device, int flags) {
        requireNativeAccess();
        long saved = CudaContext.enter(device.ordinal());
        MemorySegment raw;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            CudaDriver.check("cuStreamCreate", cuda_driver_h.cuStreamCreate(out, flags));
            CudaCounters.streamCreate();
            raw = out.get(ADDRESS, 0);
        } finally {
            CudaContext.exit(saved);
        }
        return new CudaStream(new Ref(raw, device, true), new EventGuards(), String.format(Locale.ROOT,
                "CUDA stream 0x%x on device %d", raw.address(), device.ordinal()));
    }

    /**
     * Views a stream someone else owns, e.g. a {@code CUstream} handed over by a native library or by a
     * DLPack/Arrow consumer. {@code 0} is the legacy default stream, {@code 2} the per-thread default stream.
     * Closing the view does not destroy the stream; the owner must keep it alive while the view is used.
     *
     * @param device the CUDA device the stream belongs to ({@link DeviceKind#CUDA})
     * @param streamAddress the {@code CUstream} value
     * @return a non-owning view; the caller still owns nothing but the view
     * @throws InvalidArgumentException for a device of another kind
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if no device has this ordinal
     */
    public static CudaStream borrow(Device device, long streamAddress) {
        Cuda.requireCudaDevice(device);
        requireNativeAccess();
        CudaContext.checkDevice(device.ordinal());
        MemorySegment raw = MemorySegment.ofAddress(streamAddress);
        return new CudaStream(new Ref(raw, device, false), new EventGuards(), String.format(Locale.ROOT,
                "borrowed CUDA stream 0x%x on device %d", streamAddress, device.ordinal()));
    }

    /** {@return the CUDA device this stream belongs to} */
    public Device device() {
        return ref.identity;
    }

    /** The device ordinal, for this package's driver calls. */
    int ordinal() {
        return ref.device;
    }

    /** {@return the {@code CUstream} value, for handing to native code (e.g. an Arrow or DLPack consumer)} */
    public long address() {
        ensureLive();
        return ref.raw.address();
    }

    /**
     * Blocks the calling thread until all work queued on this stream finished, then closes everything
     * {@link #closeAfterQueuedWork} was handed before this call.
     */
    public void synchronize() {
        ensureLive();
        long saved = CudaContext.enter(ref.device);
        try {
            CudaDriver.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(ref.raw));
        } finally {
            CudaContext.exit(saved);
        }
        if (!guards.isEmpty()) {
            // every event recorded before the wait completed; a poll, not a drain, so that entries other threads
            // hand over meanwhile are not waited for under the release lock (a concurrent query would wait too)
            guards.poll();
        }
    }

    /**
     * Whether all work queued on this stream finished; never blocks. Either way, what
     * {@link #closeAfterQueuedWork} was handed and whose work finished is closed.
     *
     * @return {@code true} if all work queued on this stream finished
     */
    public boolean query() {
        boolean done = queryDriver();
        if (!guards.isEmpty()) {
            guards.poll();
        }
        return done;
    }

    /**
     * Keeps {@code resource} open until the work queued on this stream so far has completed, then closes it:
     * an event from the device's pool is recorded now, and the resource is closed by the first later call of
     * this method, {@link #query()} or {@link #synchronize()} (on any thread) that finds the event completed,
     * or by this handle's {@link #close()}, which waits for it. Resources are closed in the order they were
     * handed over. This is how an asynchronous call keeps what its queued copies read or write (an export, a
     * reference to device memory, a pool's block) out of every pool and release until the copies ran; a
     * caller of a lower-level {@code ...Async} copy may hand over the owner of its host buffers the same way.
     *
     * <p>Ownership: after a return the stream handle owns {@code resource}. After a throw the resource has
     * been closed, after a wait for this stream (or, if that wait failed too, at once).
     *
     * @param resource closed once, on the thread of the call that finds its work completed; its failure is
     *     thrown to that call
     * @throws org.devicebridge.HandleClosedException if this stream is closed ({@code resource} is closed at
     *     once: no work can have been queued on a closed handle since)
     * @throws CudaException if recording the event fails
     */
    public void closeAfterQueuedWork(AutoCloseable resource) {
        Objects.requireNonNull(resource, "resource");
        CudaEvent event = null;
        boolean live = false;
        try {
            ensureLive();
            live = true;
            event = CudaEvent.acquire(ref.identity);
            event.record(this);
        } catch (RuntimeException | Error e) {
            if (event != null) {
                event.close();
            }
            if (live) {
                try {
                    synchronize(); // the queued work may still use the resource
                } catch (RuntimeException | Error more) {
                    e.addSuppressed(more);
                }
            }
            try {
                resource.close();
            } catch (Exception more) {
                e.addSuppressed(more);
            }
            throw e;
        }
        guards.add(new EventFence(event), resource);
    }

    /** A pooled event as the fence of {@link EventGuards}. */
    private record EventFence(CudaEvent event) implements EventGuards.Fence {
        @Override
        public boolean isDone() {
            return event.query();
        }

        @Override
        public void await() {
            event.synchronize();
        }

        @Override
        public void close() {
            event.close();
        }
    }

    private boolean queryDriver() {
        ensureLive();
        long saved = CudaContext.enter(ref.device);
        int r;
        try {
            r = cuda_driver_h.cuStreamQuery(ref.raw);
        } finally {
            CudaContext.exit(saved);
        }
        if (r == cuda_driver_h.CUDA_ERROR_NOT_READY()) {
            return false;
        }
        CudaDriver.check("cuStreamQuery", r);
        return true;
    }

    /**
     * Makes work queued on this stream from now on wait until {@code event}'s last recorded work finished,
     * without blocking the host ({@code cuStreamWaitEvent}). The event may belong to another device. The
     * caller keeps ownership of both; the event may be closed (returned to its pool) right after this call.
     *
     * @param event the event to wait for; the caller keeps owning it
     */
    public void waitEvent(CudaEvent event) {
        Objects.requireNonNull(event, "event");
        ensureLive();
        MemorySegment e = event.raw();
        long saved = CudaContext.enter(ref.device);
        try {
            CudaDriver.check("cuStreamWaitEvent", cuda_driver_h.cuStreamWaitEvent(ref.raw, e, 0));
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Makes work queued on this stream from now on wait for a {@code CUevent} someone else owns (for
     * instance the {@code sync_event} of an imported Arrow device array), without blocking the host
     * ({@code cuStreamWaitEvent}). The owner must keep the event alive during this call only.
     *
     * @param cuEvent the {@code CUevent} value; must not be 0
     * @throws InvalidArgumentException if {@code cuEvent} is 0
     * @throws CudaException if the driver rejects the event
     */
    public void waitEvent(long cuEvent) {
        if (cuEvent == 0) {
            throw new InvalidArgumentException("cuEvent", "expected a CUevent but found NULL");
        }
        ensureLive();
        long saved = CudaContext.enter(ref.device);
        try {
            CudaDriver.check("cuStreamWaitEvent",
                    cuda_driver_h.cuStreamWaitEvent(ref.raw, MemorySegment.ofAddress(cuEvent), 0));
        } finally {
            CudaContext.exit(saved);
        }
    }

    /** The {@code CUstream}, checked live. */
    MemorySegment raw() {
        ensureLive();
        return ref.raw;
    }

    /**
     * Takes a reference to the {@code CUstream} for memory that will be freed on it; the caller releases it
     * through {@link Ref#refs} after that free was queued.
     */
    Ref retainRef() {
        ensureLive();
        if (!ref.refs.retain()) {
            throw new HandleClosedException(description() + " is closed");
        }
        return ref;
    }
}
