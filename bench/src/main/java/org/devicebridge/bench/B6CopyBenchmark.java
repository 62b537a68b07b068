package org.devicebridge.bench;

import org.devicebridge.cuda.Cuda;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.cuda.StreamKind;
import org.devicebridge.generated.cuda.cuda_driver_h;
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
 * B6 (GPU): host <-> device copies of {@code bytes} (16 MiB, 256 MiB, 1 GiB) on device 0, each followed by
 * one stream synchronisation, so one operation = one complete copy (GB/s = bytes / time; bench/results.py
 * prints it for every benchmark with a {@code bytes} parameter).
 * <ul>
 *   <li>Pinned memory ({@code PinnedHostBuffer}): {@code CudaCopies.hostToDeviceAsync} /
 *       {@code deviceToHostAsync} vs raw {@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync} of the same
 *       pinned bytes (target: library >= 0.95 of raw throughput; raw near the link's ~55 GB/s on PCIe Gen5).</li>
 *   <li>Arrow Java (pageable, netty {@code ArrowBuf}) memory: {@code HostDeviceTransfer.upload} (reused
 *       pinned staging, double-buffered; the per-batch stream-ordered allocation and its free are in the
 *       figure) and {@code HostDeviceTransfer.download} into the same ArrowBuf, vs the driver's own pageable
 *       {@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync} of those bytes into a preallocated buffer
 *       (target: library >= 1.5x the driver's pageable throughput).</li>
 * </ul>
 * Throws in setup without CUDA.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B6CopyBenchmark {
    /** Pinned staging memory of the transfer object: two 32 MiB halves. */
    private static final long STAGING = 64L << 20;

    @Param({"16777216", "268435456", "1073741824"})
    public long bytes;

    private CudaStream stream;
    private MemorySegment rawStream;
    private DeviceBuffer device;
    private PinnedHostBuffer pinned;
    private BufferAllocator allocator;
    private VectorSchemaRoot arrow;
    private MemorySegment arrowBytes;
    private List<MemorySegment> arrowList;
    private HostDeviceTransfer transfer;
    private final long[] zeroOffset = {0};

    @Setup(Level.Trial)
    public void setUp() {
        GpuSupport.requireCuda();
        // Creating the stream on this (the benchmark) thread makes device 0's primary context current here.
        stream = CudaStream.create(0, StreamKind.NON_BLOCKING);
        rawStream = GpuSupport.handle(stream.address());
        device = DeviceBuffer.allocate(0, bytes);
        pinned = PinnedHostBuffer.allocate(bytes);
        allocator = new RootAllocator();
        arrow = Batches.int64Root(allocator, 1, Math.toIntExact(bytes / 8));
        ArrowBuf data = ((BigIntVector) arrow.getVector(0)).getDataBuffer();
        arrowBytes = MemorySegment.ofAddress(data.memoryAddress()).reinterpret(bytes);
        MemorySegment.copy(arrowBytes, 0, pinned.segment(), 0, bytes);
        arrowList = List.of(arrowBytes);
        transfer = HostDeviceTransfer.create(0, STAGING);
        CudaCopies.hostToDevice(pinned.segment(), device, 0);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (stream == null) {
            return;
        }
        stream.synchronize();
        transfer.close();
        device.close();
        pinned.close();
        arrow.close();
        allocator.close();
        stream.synchronize();
        stream.close();
    }

    // ---------------------------------------------------------------- pinned

    @Benchmark
    public void pinnedUpload() {
        CudaCopies.hostToDeviceAsync(pinned.segment(), device, 0, stream);
        stream.synchronize();
    }

    @Benchmark
    public void rawPinnedUpload() {
        Cuda.check("cuMemcpyHtoDAsync", cuda_driver_h.cuMemcpyHtoDAsync_v2(device.address(), pinned.segment(), bytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    @Benchmark
    public void pinnedDownload() {
        CudaCopies.deviceToHostAsync(device, 0, pinned.segment(), stream);
        stream.synchronize();
    }

    @Benchmark
    public void rawPinnedDownload() {
        Cuda.check("cuMemcpyDtoHAsync", cuda_driver_h.cuMemcpyDtoHAsync_v2(pinned.segment(), device.address(), bytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    // ---------------------------------------------------------------- Arrow Java (pageable)

    @Benchmark
    public long arrowUpload() {
        try (HostDeviceTransfer.Upload u = transfer.upload(arrowList, stream)) {
            stream.synchronize();
            return u.buffer().address();
        }
    }

    @Benchmark
    public void rawPageableUpload() {
        Cuda.check("cuMemcpyHtoDAsync", cuda_driver_h.cuMemcpyHtoDAsync_v2(device.address(), arrowBytes, bytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    @Benchmark
    public void arrowDownload() {
        transfer.download(device, zeroOffset, arrowList, stream);
    }

    @Benchmark
    public void rawPageableDownload() {
        Cuda.check("cuMemcpyDtoHAsync", cuda_driver_h.cuMemcpyDtoHAsync_v2(arrowBytes, device.address(), bytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }
}
