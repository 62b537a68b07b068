package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;
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
 * B3: the zero-copy proof. One int64 column whose data buffer is 1 KiB or 1 GiB is imported (schema
 * reused, validation DEFAULT on the CPU, MINIMAL on the GPU) and released; the 1 GiB case must cost what the
 * 1 KiB case costs (target: ratio <= 1.10), which it can only if no byte of the buffers is copied or read.
 *
 * <p>{@link #cpu}: {@code ArrowC.importArray} + close of an {@code ArrowArray} that points at the Arrow
 * Java vector's buffers, built once in setup with a no-op {@code release} (a Java upcall, the same for both
 * sizes); each operation re-arms {@code release} (the import marks the source released) and imports it.
 * {@link #cpuExportImport}: {@code ArrowJava.exportVector} + import + release, for the record: the export
 * computes {@code null_count} exactly ({@code getNullCount()}, a popcount of the validity bitmap, as
 * arrow-c-data does), which is O(rows / 8) though no data byte is copied. {@link #cuda}: a batch
 * uploaded once in setup, {@code CudaArrow.exportDeviceArray} (records a pooled event) +
 * {@code CudaArrow.importDeviceArray} (stream waits on it; pointer attributes checked) + close. The CUDA
 * state throws in setup where no CUDA driver is available (JMH reports that benchmark as failed).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B3ZeroCopyBenchmark {

    /** A one-column batch of {@code bytes} bytes of data, seeded. */
    @State(Scope.Benchmark)
    public static class Host {
        @Param({"1024", "1073741824"})
        public long bytes;

        BufferAllocator allocator;
        VectorSchemaRoot root;
        Arena arena;
        MemorySegment array;
        ImportedSchema schema;
        MemorySegment nativeArray;
        MemorySegment noopRelease;

        @Setup(Level.Trial)
        public void setUp() {
            allocator = new RootAllocator();
            root = Batches.int64Root(allocator, 1, Math.toIntExact(bytes / 8));
            arena = Arena.ofShared();
            array = ArrowArray.allocate(arena);
            MemorySegment schemaStruct = ArrowSchema.allocate(arena);
            ArrowJava.exportField(root.getVector(0).getField(), null, schemaStruct);
            schema = ArrowC.importSchema(schemaStruct);
            BigIntVector v = (BigIntVector) root.getVector(0);
            noopRelease = Linker.nativeLinker().upcallStub(NOOP, FunctionDescriptor.ofVoid(ValueLayout.ADDRESS), arena);
            MemorySegment buffers = arena.allocate(ValueLayout.ADDRESS, 2);
            buffers.setAtIndex(ValueLayout.ADDRESS, 0, MemorySegment.ofAddress(v.getValidityBuffer().memoryAddress()));
            buffers.setAtIndex(ValueLayout.ADDRESS, 1, MemorySegment.ofAddress(v.getDataBuffer().memoryAddress()));
            nativeArray = ArrowArray.allocate(arena);
            ArrowArray.length(nativeArray, v.getValueCount());
            ArrowArray.null_count(nativeArray, 0);
            ArrowArray.offset(nativeArray, 0);
            ArrowArray.n_buffers(nativeArray, 2);
            ArrowArray.n_children(nativeArray, 0);
            ArrowArray.buffers(nativeArray, buffers);
            ArrowArray.children(nativeArray, MemorySegment.NULL);
            ArrowArray.dictionary(nativeArray, MemorySegment.NULL);
            ArrowArray.private_data(nativeArray, MemorySegment.NULL);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            schema.close();
            root.close();
            arena.close();
            Batches.closeCheckingLeaks(allocator);
        }
    }

    /** The same batch uploaded to device 0 once; throws in setup without CUDA. */
    @State(Scope.Benchmark)
    public static class Device {
        @Param({"1024", "1073741824"})
        public long bytes;

        BufferAllocator allocator;
        CudaStream stream;
        HostDeviceTransfer transfer;
        CudaArrowBatch batch;
        ImportedSchema schema;
        Arena arena;
        MemorySegment deviceArray;

        @Setup(Level.Trial)
        public void setUp() {
            GpuSupport.requireCuda();
            // Creating the stream here makes device 0's primary context current on the benchmark thread.
            stream = CudaStream.create(org.devicebridge.Device.cuda(0));
            transfer = HostDeviceTransfer.create(org.devicebridge.Device.cuda(0), 64L << 20);
            allocator = new RootAllocator();
            arena = Arena.ofShared();
            try (VectorSchemaRoot root = Batches.int64Root(allocator, 1, Math.toIntExact(bytes / 8))) {
                batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
                MemorySegment schemaStruct = ArrowSchema.allocate(arena);
                ArrowJava.exportSchema(root.getSchema(), null, schemaStruct);
                schema = ArrowC.importSchema(schemaStruct);
            }
            stream.synchronize();
            deviceArray = ArrowDeviceArray.allocate(arena);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            if (stream == null) {
                return;
            }
            stream.synchronize();
            batch.close();
            schema.close();
            transfer.close();
            stream.synchronize();
            stream.close();
            arena.close();
            allocator.close();
        }
    }

    private static final MethodHandle NOOP;

    static {
        try {
            NOOP = MethodHandles.lookup().findStatic(B3ZeroCopyBenchmark.class, "noopRelease",
                    MethodType.methodType(void.class, MemorySegment.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The release callback of the hand-built array: the buffers belong to the Arrow vector. */
    private static void noopRelease(MemorySegment array) {
        // nothing to free
    }

    @Benchmark
    public long cpu(Host h) {
        ArrowArray.release(h.nativeArray, h.noopRelease);
        try (ImportedArray imported = ArrowC.importArray(h.schema.root(), h.nativeArray, ValidationLevel.DEFAULT)) {
            return imported.root().length();
        }
    }

    @Benchmark
    public long cpuExportImport(Host h) {
        ArrowJava.exportVector((BigIntVector) h.root.getVector(0), null, h.array, null);
        try (ImportedArray imported = ArrowC.importArray(h.schema.root(), h.array, ValidationLevel.DEFAULT)) {
            return imported.root().length();
        }
    }

    @Benchmark
    public long cuda(Device d) {
        CudaArrow.exportDeviceArray(d.batch, DeviceCopies.of(d.stream), d.deviceArray);
        try (CudaArrowBatch imported = CudaArrow.importDeviceArray(d.schema.root(), d.deviceArray, ValidationLevel.MINIMAL,
                DeviceCopies.of(d.stream))) {
            return imported.length();
        }
    }
}
