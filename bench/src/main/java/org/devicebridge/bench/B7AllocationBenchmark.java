package org.devicebridge.bench;

import org.devicebridge.Device;
import org.devicebridge.cuda.Cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceUpload;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B7 (GPU): device memory per batch on device 0, on one stream.
 * <ul>
 *   <li>{@link #allocateAsync} ({@code DeviceBuffer.allocateAsync} + close, i.e. {@code cuMemAllocFromPoolAsync}
 *       + {@code cuMemFreeAsync}) vs {@link #rawAllocFree} ({@code cuMemAllocAsync} + {@code cuMemFreeAsync}
 *       through the generated bindings).</li>
 *   <li>{@link #upload}: a per-batch upload of {@code bytes} of native host memory through a reused
 *       {@code HostDeviceTransfer} (stream-ordered allocation, staging copy, one synchronisation, free) vs
 *       {@link #rawUpload}: {@code cuMemAllocAsync} + {@code cuMemcpyHtoDAsync} of the same (pageable)
 *       bytes + {@code cuStreamSynchronize} + {@code cuMemFreeAsync}.</li>
 * </ul>
 * Every iteration checks through {@code CudaCounters} that no {@code cuMemAlloc}, {@code cuMemHostAlloc} or
 * {@code cuEventCreate} call happened (printing the counts) and fails otherwise; the stream is synchronised
 * at the end of each iteration. Throws in setup without CUDA.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B7AllocationBenchmark {
    @Param({"65536", "16777216"})
    public long bytes;

    private CudaStream stream;
    private MemorySegment rawStream;
    private HostDeviceTransfer transfer;
    private Arena arena;
    private MemorySegment host;
    private List<MemorySegment> hostList;
    private MemorySegment out;
    private CudaCounters.Snapshot iterationStart;

    @Setup(Level.Trial)
    public void setUp() {
        GpuSupport.requireCuda();
        // Creating the stream on this (the benchmark) thread makes device 0's primary context current here.
        stream = CudaStream.create(Device.cuda(0));
        rawStream = GpuSupport.handle(stream.address());
        transfer = HostDeviceTransfer.create(Device.cuda(0), 64L << 20);
        arena = Arena.ofShared();
        host = arena.allocate(bytes, 64);
        for (long i = 0; i < bytes / 8; i++) {
            host.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L + Batches.SEED);
        }
        hostList = List.of(host);
        out = arena.allocate(ValueLayout.JAVA_LONG);
    }

    @Setup(Level.Iteration)
    public void startIteration() {
        iterationStart = CudaCounters.snapshot();
    }

    @TearDown(Level.Iteration)
    public void endIteration() {
        if (stream == null) {
            return;
        }
        stream.synchronize();
        GpuSupport.checkSteadyState("B7", iterationStart);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (stream == null) {
            return;
        }
        stream.synchronize();
        transfer.close();
        stream.synchronize();
        stream.close();
        arena.close();
    }

    @Benchmark
    public long allocateAsync() {
        try (DeviceBuffer b = DeviceBuffer.allocateAsync(Device.cuda(0), bytes, stream)) {
            return b.address();
        }
    }

    @Benchmark
    public long rawAllocFree() {
        Cuda.check("cuMemAllocAsync", cuda_driver_h.cuMemAllocAsync(out, bytes, rawStream));
        long p = out.get(ValueLayout.JAVA_LONG, 0);
        Cuda.check("cuMemFreeAsync", cuda_driver_h.cuMemFreeAsync(p, rawStream));
        return p;
    }

    @Benchmark
    public long upload() {
        try (DeviceUpload u = transfer.upload(hostList, stream)) {
            stream.synchronize();
            return u.buffer().address();
        }
    }

    @Benchmark
    public long rawUpload() {
        Cuda.check("cuMemAllocAsync", cuda_driver_h.cuMemAllocAsync(out, bytes, rawStream));
        long p = out.get(ValueLayout.JAVA_LONG, 0);
        Cuda.check("cuMemcpyHtoDAsync", cuda_driver_h.cuMemcpyHtoDAsync_v2(p, host, bytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
        Cuda.check("cuMemFreeAsync", cuda_driver_h.cuMemFreeAsync(p, rawStream));
        return p;
    }
}
