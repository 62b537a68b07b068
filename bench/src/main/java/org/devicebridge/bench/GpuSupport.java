package org.devicebridge.bench;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.Device;
import org.devicebridge.arrow.java.ArrowMemory;
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

    /**
     * Pageable host memory for Arrow roots, by the benchmarks' {@code hostMemory} parameter: {@code netty}
     * (Arrow Java's default allocator with arrow-memory-netty), {@code ffm} ({@code ArrowMemory}: fresh memory
     * per buffer, huge pages for large ones) or {@code pooled} ({@code ArrowMemory.pooled} keeping up to 4 GiB
     * of freed blocks).
     */
    static final class HostMemory implements AutoCloseable {
        final BufferAllocator allocator;
        private final ArrowMemory pooled;

        HostMemory(String kind) {
            pooled = kind.equals("pooled") ? ArrowMemory.pooled(4L << 30) : null;
            allocator = switch (kind) {
                case "netty" -> new RootAllocator();
                case "ffm" -> ArrowMemory.newRootAllocator();
                case "pooled" -> pooled.newPooledRootAllocator();
                default -> throw new IllegalArgumentException("hostMemory: netty, ffm or pooled, not " + kind);
            };
        }

        @Override
        public void close() {
            allocator.close();
            if (pooled != null) {
                pooled.close();
            }
        }
    }

    /**
     * Sets device 0's default pool to keep freed memory ({@code retain}: everything, until the trial ends) or
     * CUDA's default (give it back at every synchronisation), the benchmarks' {@code retainDevicePool}.
     */
    static void retainDevicePool(boolean retain) {
        Cuda.setMemoryPoolThreshold(Device.cuda(0), retain ? Long.MAX_VALUE : 0);
        if (!retain) {
            Cuda.trimMemoryPool(Device.cuda(0), 0);
        }
    }
}
