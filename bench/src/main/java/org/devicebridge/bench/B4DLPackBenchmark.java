package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.devicebridge.Device;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
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
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B4: DLPack on the CPU, for a 4-D strided float32 tensor (shape 8x16x32x64, every other element of the
 * last dimension: strides 65536, 4096, 128, 2), beside a bare downcall (B1's) and the same work in C
 * ({@code b4_export_import_release} in {@code b2_baseline.c}) in the same run. Every state is per thread,
 * so {@code -t 16} measures 16 independent producer/consumer pairs.
 *
 * <p>Each {@code exportImportRead*} operation is what a consumer of the new lifetime API writes:
 * {@code DLPack.exportVersioned} + {@code DLPack.importTensor} + {@code segment()} + one element read +
 * the release, differing only in the scope the import lives in. ({@code importTensor} is the local hand-over:
 * the struct is validated as a foreign one and freed right after the import; the release then closes the
 * exporter's owner. A native consumer's import calls the deleter instead.)
 * <ul>
 *   <li>{@link #exportImportReadConfined}: a confined arena per tensor (its close releases; no handshake).</li>
 *   <li>{@link #exportImportReadShared}: one shared arena for {@code tensorsPerArena} tensors (1024 or 16384),
 *       closed (one handshake with every thread, every deleter) and renewed after the last of them, inside the
 *       measurement. A shared arena's close is a handshake with every thread of the JVM, whose cost grows with
 *       the threads running: with 16 busy threads the larger count is what keeps it amortised.</li>
 *   <li>{@link #exportImportReadDefault}: the default path, what a user writes first: no arena argument
 *       ({@code try (ImportedTensor t = DLPack.importTensor(e, options))}), the handle's scope made confined by
 *       {@code segment()} and closed by the handle's {@code close()}.</li>
 * </ul>
 * Targets (default, confined and shared): <= 1 us per tensor and <= 40x a bare downcall; 16 threads <= 1.5x
 * one.
 * {@link #importOnly}: {@code DLPack.importVersioned} + close of a native {@code DLManagedTensorVersioned} built
 * once in setup whose {@code deleter} is NULL (DLPack allows it): the move, the validation and the handle
 * alone. Target: <= 20x a bare downcall.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B4DLPackBenchmark {
    private static final long[] SHAPE = {8, 16, 32, 64};
    private static final long[] STRIDES = {16 * 32 * 128, 32 * 128, 128, 2};
    /** C loop iterations per {@link #cBaseline} invocation: one downcall, many operations. */
    static final int C_OPS = 1000;

    private Arena arena;
    private MemorySegment data;
    private MemorySegment nativeTensor;
    private TensorSpec spec; // made once: a user exporting many tensors of one shape reuses the spec
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
        spec = TensorSpec.of(data, DType.FLOAT32, SHAPE).withStrides(STRIDES);
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

    /** The shared arena of {@link #exportImportReadShared}, per thread, renewed every {@code tensorsPerArena} tensors. */
    @State(Scope.Thread)
    public static class SharedScope {
        @Param({"1024", "16384"})
        public int tensorsPerArena;
        Arena arena;
        int used;

        @Setup(Level.Trial)
        public void setUp() {
            arena = Arena.ofShared();
        }

        /** Counts one tensor; closes the arena (releasing its tensors) and opens a new one after the last of a batch. */
        void next() {
            if (++used == tensorsPerArena) {
                arena.close();
                arena = Arena.ofShared();
                used = 0;
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            arena.close();
        }
    }

    /** The C side's tensor (same shape, strides and seed), per thread, for {@link #cBaseline}. */
    @State(Scope.Thread)
    public static class CTensor {
        @Setup(Level.Trial)
        public void setUp() {
            CBaseline.prepareB4();
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            CBaseline.freeB4();
        }
    }

    @Benchmark
    public void bareDowncall() throws Throwable {
        Batches.BARE.invokeExact(Batches.FREE, MemorySegment.NULL);
    }

    /**
     * The same work in C ({@code b4_export_import_release}): export as a DLManagedTensorVersioned, the
     * consumer's checks, one element read and the deleter, {@value #C_OPS} times per downcall.
     */
    @Benchmark
    @OperationsPerInvocation(C_OPS)
    public long cBaseline(CTensor c) throws Throwable {
        return CBaseline.checked("b4_export_import_release", (long) CBaseline.B4_LOOP.invokeExact((long) C_OPS));
    }

    private ExportedTensor export() {
        return DLPack.exportVersioned(spec);
    }

    private static float first(ImportedTensor t) {
        return t.segment().get(ValueLayout.JAVA_FLOAT, t.originOffset());
    }

    @Benchmark
    public float exportImportReadConfined() {
        try (Arena scope = Arena.ofConfined()) {
            return first(DLPack.importTensor(export(), options, scope));
        }
    }

    @Benchmark
    public float exportImportReadShared(SharedScope s) {
        float v = first(DLPack.importTensor(export(), options, s.arena));
        s.next();
        return v;
    }

    @Benchmark
    public float exportImportReadDefault() {
        try (ImportedTensor t = DLPack.importTensor(export(), options)) {
            return first(t);
        }
    }

    @Benchmark
    public long importOnly() {
        try (ImportedTensor imported = DLPack.importVersioned(nativeTensor, options)) {
            return imported.byteExtent();
        }
    }
}
