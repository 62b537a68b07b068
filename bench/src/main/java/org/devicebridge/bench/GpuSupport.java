package org.devicebridge.bench;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.internal.CudaCounters;

/** Setup guard of the GPU benchmarks: a clear failure where no CUDA driver or device is present. */
final class GpuSupport {
    private GpuSupport() {}

    static void requireCuda() {
        if (!Cuda.isAvailable()) {
            throw new IllegalStateException("GPU benchmark skipped: CUDA is not available here ("
                    + Cuda.unavailableReason() + "); run bench/run-gpu.sh on a machine with an NVIDIA GPU");
        }
        if (Cuda.deviceCount() < 1) {
            throw new IllegalStateException("GPU benchmark skipped: the CUDA driver reports no device");
        }
    }

    /** A raw {@code CUstream}/{@code CUevent} handle for the generated bindings. */
    static MemorySegment handle(long address) {
        return MemorySegment.ofAddress(address);
    }

    /**
     * Fails the iteration if the steady state created events, device memory with {@code cuMemAlloc} or pinned
     * memory with {@code cuMemHostAlloc} (DESIGN.md section 4): {@code before} is the snapshot taken when
     * the iteration started.
     */
    static CudaCounters.Snapshot checkSteadyState(String benchmark, CudaCounters.Snapshot before) {
        CudaCounters.Snapshot after = CudaCounters.snapshot();
        long events = after.eventCreateCalls() - before.eventCreateCalls();
        long allocs = after.memAllocCalls() - before.memAllocCalls();
        long hostAllocs = after.memHostAllocCalls() - before.memHostAllocCalls();
        System.out.printf(Locale.ROOT, "%n[%s] this iteration: cuEventCreate %d, cuMemAlloc %d, cuMemHostAlloc %d,"
                + " cuMemAllocFromPoolAsync %d%n", benchmark, events, allocs, hostAllocs,
                after.memAllocAsyncCalls() - before.memAllocAsyncCalls());
        if (events != 0 || allocs != 0 || hostAllocs != 0) {
            throw new IllegalStateException(String.format(Locale.ROOT, "%s: the steady state made %d cuEventCreate,"
                    + " %d cuMemAlloc and %d cuMemHostAlloc calls in one iteration (expected none)",
                    benchmark, events, allocs, hostAllocs));
        }
        return after;
    }
}
