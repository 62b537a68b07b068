package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.Device;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.generated.dlpack.dlpack_h;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B4: DLPack on the CPU, for a 4-D strided float32 tensor (shape 8x16x32x64, every other element of the
 * last dimension: strides 65536, 4096, 128, 2), beside a bare downcall (B1's) in the same run.
 *
 * <ul>
 *   <li>{@link #exportImportDelete}: {@code DLPack.exportVersioned} + {@code DLPack.importTensor} + close (which
 *       calls the exporter's deleter, a Java upcall). Target: <= 40x a bare downcall.</li>
 *   <li>{@link #importOnly}: {@code DLPack.importVersioned} + close of a native {@code DLManagedTensorVersioned}
 *       built once in setup, whose {@code deleter} is NULL (DLPack allows it), so no export and no deleter
 *       is in the figure: the move, the validation of every field (exact arithmetic over shape and strides)
 *       and the handle. Target: <= 20x a bare downcall.</li>
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B4DLPackBenchmark {
    private static final long[] SHAPE = {8, 16, 32, 64};
    private static final long[] STRIDES = {16 * 32 * 128, 32 * 128, 128, 2};

    private Arena arena;
    private MemorySegment data;
    private MemorySegment nativeTensor;
    private final ImportOptions options = ImportOptions.expecting(Device.CPU);

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        long elements = SHAPE[0] * STRIDES[0];
        data = arena.allocate(elements * 4, 64);
        SplittableRandom random = new SplittableRandom(Batches.SEED);
        for (long i = 0; i < elements; i++) {
            data.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) random.nextDouble());
        }
        nativeTensor = DLManagedTensorVersioned.allocate(arena);
        MemorySegment version = DLManagedTensorVersioned.version(nativeTensor);
        DLPackVersion.major(version, DLPack.MAJOR_VERSION);
        DLPackVersion.minor(version, DLPack.MINOR_VERSION);
        DLManagedTensorVersioned.manager_ctx(nativeTensor, MemorySegment.NULL);
        DLManagedTensorVersioned.deleter(nativeTensor, MemorySegment.NULL);
        DLManagedTensorVersioned.flags(nativeTensor, 0);
        MemorySegment t = DLManagedTensorVersioned.dl_tensor(nativeTensor);
        DLTensor.data(t, data);
        DLDevice.device_type(DLTensor.device(t), dlpack_h.kDLCPU());
        DLDevice.device_id(DLTensor.device(t), 0);
        DLTensor.ndim(t, SHAPE.length);
        MemorySegment dtype = DLTensor.dtype(t);
        DLDataType.code(dtype, (byte) dlpack_h.kDLFloat());
        DLDataType.bits(dtype, (byte) 32);
        DLDataType.lanes(dtype, (short) 1);
        DLTensor.shape(t, arena.allocateFrom(ValueLayout.JAVA_LONG, SHAPE));
        DLTensor.strides(t, arena.allocateFrom(ValueLayout.JAVA_LONG, STRIDES));
        DLTensor.byte_offset(t, 0);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public void bareDowncall() throws Throwable {
        Batches.BARE.invokeExact(Batches.FREE, MemorySegment.NULL);
    }

    @Benchmark
    public long exportImportDelete() {
        ExportedTensor exported = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, SHAPE).withStrides(STRIDES));
        try (ImportedTensor imported = DLPack.importTensor(exported, options)) {
            return imported.byteExtent();
        }
    }

    @Benchmark
    public long importOnly() {
        try (ImportedTensor imported = DLPack.importVersioned(nativeTensor, options)) {
            return imported.byteExtent();
        }
    }
}
