package org.devicebridge.bench;

import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.cuda.Cuda;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceUpload;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.cuda.TransferOptions;
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
 * B6 (GPU): host <-> device copies of {@code bytes} (16 MiB, 256 MiB, 1 GiB) on device 0, each followed by
 * one stream synchronisation, so one operation = one complete copy (GB/s = bytes / time; bench/results.py
 * prints it for every benchmark with a {@code bytes} parameter).
 * <ul>
 *   <li>Pinned memory ({@code PinnedHostBuffer}): {@code CudaCopies.hostToDeviceAsync} /
 *       {@code deviceToHostAsync} vs raw {@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync} of the same
 *       pinned bytes (target: library >= 0.95 of raw throughput; raw near the link's ~55 GB/s on PCIe Gen5).</li>
 *   <li>Arrow Java roots of one int64 column ({@code bytes} of data and its validity bitmap), the whole call
 *       (buffers gathered, copies queued, synchronised; the per-batch stream-ordered allocation and free
 *       included): {@code CudaArrow.upload} + synchronize and {@code CudaArrow.download} into a
 *       fresh root, from and into a root in pinned memory ({@code pinnedRoot*}: direct DMA, target >= 0.9 of
 *       raw) and in pageable memory ({@code pageableRoot*}: the staging ring, target >= 0.6 of raw), vs raw
 *       pinned {@code cuMemcpy*Async} of the root's bytes ({@code rawRoot*}). The staging chunk size is the
 *       {@code chunkBytes} parameter (the sweep: {@code -p chunkBytes=1048576,2097152,4194304,8388608,16777216});
 *       {@code threads} 0 means the default (every core up to 16).</li>
 *   <li>The transfer object on a bare pageable Arrow buffer ({@code arrowUpload} / {@code arrowDownload}) vs
 *       the driver's own pageable {@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync} of those bytes
 *       (target: library >= 1.5x the driver's pageable throughput).</li>
 * </ul>
 * The self-check's five-column batch is {@link B6BatchBenchmark}. Throws in setup without CUDA.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B6CopyBenchmark {
    /** Pinned staging memory of the transfer object. */
    private static final long STAGING = 64L << 20;

    @Param({"16777216", "268435456", "1073741824"})
    public long bytes;

    /** Staging chunk size (the sweep's parameter). */
    @Param({"8388608"})
    public long chunkBytes;

    /** Threads per staging chunk; 0: the default. */
    @Param({"0"})
    public int threads;

    /** Host memory of the pageable roots: netty, ffm or pooled (see GpuSupport.HostMemory). */
    @Param({"pooled"})
    public String hostMemory;

    /** Whether device 0's default pool keeps freed memory (Cuda.setMemoryPoolThreshold) during the trial. */
    @Param({"true"})
    public boolean retainDevicePool;

    private GpuSupport.HostMemory host;
    private CudaStream stream;
    private MemorySegment rawStream;
    private DeviceBuffer device;
    private PinnedHostBuffer pinned;
    private BufferAllocator allocator;
    private VectorSchemaRoot arrow;
    private MemorySegment arrowBytes;
    private List<MemorySegment> arrowList;
    private HostDeviceTransfer transfer;
    private PinnedArrowMemory pinnedMemory;
    private BufferAllocator pinnedAllocator;
    private VectorSchemaRoot pinnedRoot;
    private CudaArrowBatch deviceRoot;
    private long rootBytes;
    private PinnedHostBuffer rawRootHost;
    private DeviceBuffer rawRootDevice;

    @Setup(Level.Trial)
    public void setUp() {
        GpuSupport.requireCuda();
        GpuSupport.retainDevicePool(retainDevicePool);
        // Creating the stream on this (the benchmark) thread makes device 0's primary context current here.
        stream = CudaStream.create(Device.cuda(0));
        rawStream = GpuSupport.handle(stream.address());
        device = DeviceBuffer.allocate(Device.cuda(0), bytes);
        pinned = PinnedHostBuffer.allocate(bytes);
        host = new GpuSupport.HostMemory(hostMemory);
        allocator = host.allocator;
        arrow = Batches.int64Root(allocator, 1, Math.toIntExact(bytes / 8));
        ArrowBuf data = ((BigIntVector) arrow.getVector(0)).getDataBuffer();
        arrowBytes = MemorySegment.ofAddress(data.memoryAddress()).reinterpret(bytes);
        MemorySegment.copy(arrowBytes, 0, pinned.segment(), 0, bytes);
        arrowList = List.of(arrowBytes);
        TransferOptions options = TransferOptions.defaults().withStagingBytes(STAGING)
                .withChunkBytes(chunkBytes);
        transfer = HostDeviceTransfer.create(Device.cuda(0), threads > 0 ? options.withThreads(threads) : options);
        CudaCopies.hostToDevice(pinned.segment(), device, 0);
        pinnedMemory = PinnedArrowMemory.create();
        pinnedAllocator = pinnedMemory.newRootAllocator();
        pinnedRoot = Batches.int64Root(pinnedAllocator, 1, Math.toIntExact(bytes / 8));
        long before = CudaCounters.snapshot().deviceBytesOutstanding();
        deviceRoot = CudaArrow.upload(arrow, DeviceCopies.of(transfer, stream));
        rootBytes = CudaCounters.snapshot().deviceBytesOutstanding() - before; // the packed batch's bytes
        rawRootHost = PinnedHostBuffer.allocate(rootBytes);
        rawRootDevice = DeviceBuffer.allocate(Device.cuda(0), rootBytes);
        stream.synchronize();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (stream == null) {
            return;
        }
        stream.synchronize();
        deviceRoot.close();
        rawRootDevice.close();
        rawRootHost.close();
        pinnedRoot.close();
        pinnedAllocator.close();
        pinnedMemory.close();
        transfer.close();
        device.close();
        pinned.close();
        arrow.close();
        host.close();
        stream.synchronize();
        stream.close();
        GpuSupport.retainDevicePool(false);
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
        try (DeviceUpload u = transfer.upload(arrowList, stream)) {
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
        transfer.download(List.of(device.range(0, bytes)), arrowList, stream);
    }

    @Benchmark
    public void rawPageableDownload() {
        Cuda.check("cuMemcpyDtoHAsync", cuda_driver_h.cuMemcpyDtoHAsync_v2(arrowBytes, device.address(), bytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    // ---------------------------------------------------------------- Arrow Java roots (the whole call)

    @Benchmark
    public long pinnedRootUpload() {
        try (CudaArrowBatch b = CudaArrow.upload(pinnedRoot, DeviceCopies.of(transfer, stream))) {
            stream.synchronize();
            return b.length();
        }
    }

    @Benchmark
    public long pageableRootUpload() {
        try (CudaArrowBatch b = CudaArrow.upload(arrow, DeviceCopies.of(transfer, stream))) {
            stream.synchronize();
            return b.length();
        }
    }

    @Benchmark
    public void rawRootUpload() {
        Cuda.check("cuMemcpyHtoDAsync", cuda_driver_h.cuMemcpyHtoDAsync_v2(rawRootDevice.address(), rawRootHost.segment(),
                rootBytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    @Benchmark
    public int pinnedRootDownload() {
        try (VectorSchemaRoot back = CudaArrow.download(deviceRoot, new DeviceCopies(pinnedAllocator, transfer, stream))) {
            return back.getRowCount();
        }
    }

    @Benchmark
    public int pageableRootDownload() {
        try (VectorSchemaRoot back = CudaArrow.download(deviceRoot, new DeviceCopies(allocator, transfer, stream))) {
            return back.getRowCount();
        }
    }

    @Benchmark
    public void rawRootDownload() {
        Cuda.check("cuMemcpyDtoHAsync", cuda_driver_h.cuMemcpyDtoHAsync_v2(rawRootHost.segment(), rawRootDevice.address(),
                rootBytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }
}
