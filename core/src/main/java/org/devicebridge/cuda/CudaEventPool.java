package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;

/**
 * Idle {@code CUevent}s of one device, created with {@code CU_EVENT_DISABLE_TIMING}, so that recording an
 * event per batch creates none on the steady-state path. Returning an event that still has pending work
 * is safe: a later {@code cuEventRecord} only replaces what the event tracks, and waits already queued
 * ({@code cuStreamWaitEvent}) keep the state they captured.
 */
final class CudaEventPool {
    /** Idle events kept per device; more are destroyed on return. */
    static final int MAX_IDLE = 256;

    private static volatile AtomicReferenceArray<CudaEventPool> pools;

    private final int device;
    private final ConcurrentLinkedDeque<MemorySegment> idle = new ConcurrentLinkedDeque<>();
    private final AtomicInteger idleCount = new AtomicInteger();

    private CudaEventPool(int device) {
        this.device = device;
    }

    static CudaEventPool of(int device) {
        CudaContext.checkDevice(device);
        AtomicReferenceArray<CudaEventPool> all = pools;
        if (all == null) {
            synchronized (CudaEventPool.class) {
                all = pools;
                if (all == null) {
                    all = new AtomicReferenceArray<>(CudaContext.deviceCount());
                    pools = all;
                }
            }
        }
        CudaEventPool p = all.get(device);
        if (p == null) {
            all.compareAndSet(device, null, new CudaEventPool(device));
            p = all.get(device);
        }
        return p;
    }

    /** An idle event, or a new one if none is idle. */
    MemorySegment take() {
        MemorySegment e = idle.pollFirst();
        if (e != null) {
            idleCount.decrementAndGet();
            return e;
        }
        return create(device, cuda_driver_h.CU_EVENT_DISABLE_TIMING());
    }

    /** Gives an event back; never throws (it runs in release paths). */
    void give(MemorySegment event) {
        if (idleCount.incrementAndGet() <= MAX_IDLE) {
            idle.addFirst(event);
            return;
        }
        idleCount.decrementAndGet();
        destroy(event, device);
    }

    int idleCount() {
        return idleCount.get();
    }

    static MemorySegment create(int device, int flags) {
        long saved = CudaContext.enter(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            CudaDriver.check("cuEventCreate", cuda_driver_h.cuEventCreate(out, flags));
            CudaCounters.eventCreate();
            return out.get(ADDRESS, 0);
        } finally {
            CudaContext.exit(saved);
        }
    }

    static void destroy(MemorySegment event, int device) {
        long saved = CudaContext.enter(device);
        try {
            CudaDriver.check("cuEventDestroy_v2", cuda_driver_h.cuEventDestroy_v2(event));
        } finally {
            CudaContext.exit(saved);
        }
    }
}
