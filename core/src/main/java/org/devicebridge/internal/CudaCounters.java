package org.devicebridge.internal;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Process-wide counters of the CUDA driver calls that allocate or create something, and of the bytes the
 * library holds. Tests and benchmarks take a {@link #snapshot()} before and after a steady-state path and
 * assert that nothing was allocated or created in between. The bytes outstanding are
 * {@link Allocations}' (device and pinned allocations are counted there, with the library's other memory).
 */
public final class CudaCounters {
    private static final AtomicLong MEM_ALLOC = new AtomicLong();
    private static final AtomicLong MEM_ALLOC_ASYNC = new AtomicLong();
    private static final AtomicLong MEM_HOST_ALLOC = new AtomicLong();
    private static final AtomicLong MEM_HOST_REGISTER = new AtomicLong();
    private static final AtomicLong EVENT_CREATE = new AtomicLong();
    private static final AtomicLong STREAM_CREATE = new AtomicLong();

    private CudaCounters() {}

    /**
     * A copy of every counter at one moment.
     *
     * @param memAllocCalls successful {@code cuMemAlloc_v2} calls
     * @param memAllocAsyncCalls successful {@code cuMemAllocFromPoolAsync} calls
     * @param memHostAllocCalls successful {@code cuMemHostAlloc} calls
     * @param memHostRegisterCalls successful {@code cuMemHostRegister_v2} calls
     * @param eventCreateCalls successful {@code cuEventCreate} calls
     * @param streamCreateCalls successful {@code cuStreamCreate} calls
     * @param deviceBytesOutstanding device bytes allocated by the library and not yet freed
     * @param pinnedBytesOutstanding pinned host bytes allocated by the library and not yet freed
     */
    public record Snapshot(long memAllocCalls, long memAllocAsyncCalls, long memHostAllocCalls,
                           long memHostRegisterCalls, long eventCreateCalls, long streamCreateCalls,
                           long deviceBytesOutstanding, long pinnedBytesOutstanding) {

        /** Allocation and creation calls of any kind (not the outstanding bytes). */
        public long creations() {
            return memAllocCalls + memAllocAsyncCalls + memHostAllocCalls + memHostRegisterCalls
                    + eventCreateCalls + streamCreateCalls;
        }
    }

    public static Snapshot snapshot() {
        return new Snapshot(MEM_ALLOC.get(), MEM_ALLOC_ASYNC.get(), MEM_HOST_ALLOC.get(), MEM_HOST_REGISTER.get(),
                EVENT_CREATE.get(), STREAM_CREATE.get(), Allocations.allocatedBytes(Allocations.Kind.DEVICE),
                Allocations.allocatedBytes(Allocations.Kind.PINNED));
    }

    public static void memAlloc(long bytes) {
        MEM_ALLOC.incrementAndGet();
        Allocations.allocated(Allocations.Kind.DEVICE, bytes);
    }

    public static void memAllocAsync(long bytes) {
        MEM_ALLOC_ASYNC.incrementAndGet();
        Allocations.allocated(Allocations.Kind.DEVICE, bytes);
    }

    public static void deviceFreed(long bytes) {
        Allocations.freed(Allocations.Kind.DEVICE, bytes);
    }

    public static void memHostAlloc(long bytes) {
        MEM_HOST_ALLOC.incrementAndGet();
        Allocations.allocated(Allocations.Kind.PINNED, bytes);
    }

    public static void pinnedFreed(long bytes) {
        Allocations.freed(Allocations.Kind.PINNED, bytes);
    }

    public static void memHostRegister() {
        MEM_HOST_REGISTER.incrementAndGet();
    }

    public static void eventCreate() {
        EVENT_CREATE.incrementAndGet();
    }

    public static void streamCreate() {
        STREAM_CREATE.incrementAndGet();
    }
}
