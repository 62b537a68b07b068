package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.TransferOptions;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.cuda.PointerAttributes;
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
 * B6 (GPU), the self-check's batch: five columns of 1 << 20 rows (integers with nulls, doubles, booleans,
 * strings with nulls, lists; about 36 MB), the whole call (buffers gathered, copies queued, synchronised):
 * {@code CudaArrow.upload} + synchronize and {@code CudaArrow.download} into a fresh root, from
 * and into pageable memory (the staging ring) and pinned memory (direct), vs raw pinned
 * {@code cuMemcpyHtoDAsync} / {@code cuMemcpyDtoHAsync} of the batch's bytes, one synchronisation each (target
 * >= 0.6 of raw). Also the cost of the page-locked check the transfer makes per buffer
 * ({@code PointerAttributes.isPageLocked}) for pageable memory (one driver call that fails) and for pinned
 * memory the driver knows but this library did not allocate (two driver calls). Throws in setup without CUDA.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B6BatchBenchmark {
    private static final int ROWS = 1 << 20;

    /** Staging chunk size (the sweep's parameter). */
    @Param({"8388608"})
    public long chunkBytes;

    /** Host memory of the pageable roots: netty, ffm or pooled (see GpuSupport.HostMemory). */
    @Param({"pooled"})
    public String hostMemory;

    /** Whether device 0's default pool keeps freed memory (Cuda.setMemoryPoolThreshold) during the trial. */
    @Param({"true"})
    public boolean retainDevicePool;

    private GpuSupport.HostMemory host;
    private CudaStream stream;
    private MemorySegment rawStream;
    private HostDeviceTransfer transfer;
    private BufferAllocator pageable;
    private PinnedArrowMemory pinnedMemory;
    private BufferAllocator pinned;
    private VectorSchemaRoot pageableRoot;
    private VectorSchemaRoot pinnedRoot;
    private CudaArrowBatch deviceBatch;
    private long batchBytes;
    private PinnedHostBuffer rawHost;
    private DeviceBuffer rawDevice;
    private Arena arena;
    private MemorySegment pageableProbe;
    private MemorySegment registeredProbe;
    private PinnedHostBuffer registration;

    @Setup(Level.Trial)
    public void setUp() {
        GpuSupport.requireCuda();
        GpuSupport.retainDevicePool(retainDevicePool);
        stream = CudaStream.create(Device.cuda(0));
        rawStream = GpuSupport.handle(stream.address());
        transfer = HostDeviceTransfer.create(Device.cuda(0), TransferOptions.defaults().withChunkBytes(chunkBytes));
        host = new GpuSupport.HostMemory(hostMemory);
        pageable = host.allocator;
        pinnedMemory = PinnedArrowMemory.create();
        pinned = pinnedMemory.newRootAllocator();
        pageableRoot = Batches.selfCheckSample(pageable, ROWS);
        pinnedRoot = Batches.selfCheckSample(pinned, ROWS);
        long before = CudaCounters.snapshot().deviceBytesOutstanding();
        deviceBatch = CudaArrow.upload(pageableRoot, DeviceCopies.of(transfer, stream));
        batchBytes = CudaCounters.snapshot().deviceBytesOutstanding() - before; // the packed batch's bytes
        rawHost = PinnedHostBuffer.allocate(batchBytes);
        rawDevice = DeviceBuffer.allocate(Device.cuda(0), batchBytes);
        arena = Arena.ofShared();
        pageableProbe = arena.allocate(1 << 20);
        registeredProbe = arena.allocate(1 << 20, 4096);
        registration = PinnedHostBuffer.register(registeredProbe);
        stream.synchronize();
        System.out.println("\n[B6BatchBenchmark] batch bytes " + batchBytes);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (stream == null) {
            return;
        }
        stream.synchronize();
        registration.close();
        arena.close();
        deviceBatch.close();
        rawDevice.close();
        rawHost.close();
        pinnedRoot.close();
        pageableRoot.close();
        pinned.close();
        pinnedMemory.close();
        host.close();
        transfer.close();
        stream.synchronize();
        stream.close();
        GpuSupport.retainDevicePool(false);
    }

    @Benchmark
    public long pageableBatchUpload() {
        try (CudaArrowBatch b = CudaArrow.upload(pageableRoot, DeviceCopies.of(transfer, stream))) {
            stream.synchronize();
            return b.length();
        }
    }

    @Benchmark
    public long pinnedBatchUpload() {
        try (CudaArrowBatch b = CudaArrow.upload(pinnedRoot, DeviceCopies.of(transfer, stream))) {
            stream.synchronize();
            return b.length();
        }
    }

    @Benchmark
    public void rawBatchUpload() {
        Cuda.check("cuMemcpyHtoDAsync", cuda_driver_h.cuMemcpyHtoDAsync_v2(rawDevice.address(), rawHost.segment(),
                batchBytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    @Benchmark
    public int pageableBatchDownload() {
        try (VectorSchemaRoot back = CudaArrow.download(deviceBatch, new DeviceCopies(pageable, transfer, stream))) {
            return back.getRowCount();
        }
    }

    @Benchmark
    public int pinnedBatchDownload() {
        try (VectorSchemaRoot back = CudaArrow.download(deviceBatch, new DeviceCopies(pinned, transfer, stream))) {
            return back.getRowCount();
        }
    }

    @Benchmark
    public void rawBatchDownload() {
        Cuda.check("cuMemcpyDtoHAsync", cuda_driver_h.cuMemcpyDtoHAsync_v2(rawHost.segment(), rawDevice.address(),
                batchBytes, rawStream));
        Cuda.check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(rawStream));
    }

    @Benchmark
    public boolean pageLockedCheckPageable() {
        return PointerAttributes.isPageLocked(pageableProbe);
    }

    @Benchmark
    public boolean pageLockedCheckRegistered() {
        return PointerAttributes.isPageLocked(registeredProbe);
    }
}
