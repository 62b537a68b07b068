package org.devicebridge.access;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.Locale;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.flight.DeviceFlight;
import org.devicebridge.arrow.flight.DeviceFlightClient;
import org.devicebridge.arrow.flight.PutOptions;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.arrow.java.DLPackArrow;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.python.PythonRuntime;

/**
 * The program {@link NativeAccessForkedTest} runs in a JVM of its own (class path or module path, native access
 * denied or granted, Arrow Java present or not). Each argument names a scenario; each scenario calls its entry
 * point twice and prints one line per call: {@code name #i: OK detail} or {@code name #i: ExceptionClass: message}
 * (the class's simple name), so that the test can check what the first and the second call threw.
 *
 * <p>Arrow Java types appear only as {@code null} arguments: verifying this class loads none of them, so it runs
 * where Arrow Java is absent. Only {@code cudaArrowImport} touches the generated bindings (to hand-make structs),
 * and the test runs it on the class path only, where they are visible.
 */
public final class AccessChild {
    private AccessChild() {}

    public static void main(String[] args) {
        for (String scenario : args) {
            for (int i = 0; i < 2; i++) {
                String line;
                try {
                    line = "OK " + run(scenario);
                } catch (Throwable t) {
                    line = t.getClass().getSimpleName() + ": " + t.getMessage();
                }
                System.out.println(scenario + " #" + i + ": " + line.replace('\n', ' '));
            }
        }
        System.out.flush();
    }

    private static String run(String scenario) throws Exception {
        return switch (scenario) {
            case "values" -> values();
            case "arrowStructs" -> {
                ArrowC.allocateSchema(Arena.ofAuto());
                yield "";
            }
            case "arrowImport" -> {
                try (Arena arena = Arena.ofConfined()) {
                    // a released (zeroed) struct: a typed refusal where native access works
                    ArrowC.importSchema(arena.allocate(ValueLayout.ADDRESS, 9)).close();
                }
                yield "";
            }
            case "dlpack" -> dlpack();
            case "cudaAvailable" -> Boolean.toString(Cuda.isAvailable()) + " " + Cuda.unavailableReason();
            case "cuda" -> Integer.toString(Cuda.deviceCount());
            case "pinned" -> {
                PinnedHostBuffer.allocate(64).close();
                yield "";
            }
            case "pythonAvailable" -> Boolean.toString(PythonRuntime.isAvailable());
            case "python" -> PythonRuntime.get().toString();
            case "arrowExport" -> {
                ArrowJava.exportRoot((org.apache.arrow.vector.VectorSchemaRoot) null, null, null, null);
                yield "";
            }
            case "arrowJavaImport" -> ArrowJava.toField(null).toString();
            case "dlpackArrow" -> DLPackArrow.importVector(null, null, null).toString();
            case "cudaArrowDownload" -> CudaArrow.download(null, null).toString();
            case "cudaArrowImport" -> cudaArrowImport();
            case "arrowMemory" -> {
                ArrowMemory.installAsDefault();
                yield "";
            }
            case "arrowMemoryRoot" -> ArrowMemory.newRootAllocator(1024).toString();
            case "arrowMemoryFactory" -> ArrowMemory.factory().toString();
            case "arrowMemoryLive" -> ArrowMemory.liveBytes() + " " + ArrowMemory.liveAllocations();
            case "pooledArrowMemory" -> ArrowMemory.pooled(1 << 20).toString();
            case "pinnedArrowMemory" -> PinnedArrowMemory.create().toString();
            case "pinnedIsPinned" -> Boolean.toString(PinnedArrowMemory.isPinned(null));
            case "deviceFlightServe" -> Long.toString(DeviceFlight.serve(null, null, null, null));
            case "deviceFlightServeRoots" -> Long.toString(DeviceFlight.serveRoots(null, null, null, null));
            case "deviceFlightSend" -> Long.toString(DeviceFlight.send(null, null, null, null));
            case "deviceFlightSendRoots" -> Long.toString(DeviceFlight.sendRoots(null, null, null));
            case "deviceFlightReceive" -> Long.toString(DeviceFlight.receive(null, null, null));
            case "deviceFlightReceiveRoots" -> Long.toString(DeviceFlight.receiveRoots(null, null, null));
            case "deviceFlightClient" -> DeviceFlightClient.of(null).toString();
            case "flightValues" -> flightValues();
            case "flightProducer" -> flightProducer();
            default -> throw new IllegalArgumentException("no scenario " + scenario);
        };
    }

    /** The value types load and work without native access. */
    private static String values() {
        TensorSpec spec = TensorSpec.of(Arena.ofAuto().allocate(24), DType.FLOAT32, 2, 3); // allocating is not restricted
        return String.join(",", DType.FLOAT32.toString(), Device.CPU.toString(), String.valueOf(DeviceKind.fromCode(2).orElse(null)),
                Long.toString(TensorFlag.READ_ONLY.bit()), String.valueOf(DeviceKind.fromCode(2).orElseThrow()),
                DeviceKind.CUDA_HOST.dlpackName(), ValidationLevel.FULL.toString(),
                Integer.toString(spec.shape().length));
    }

    /**
     * The Flight package's value types name no Flight type, so they load and work without {@code flight-core}
     * (what the put options hold, the record classes of the copies and of a received batch).
     */
    private static String flightValues() throws ClassNotFoundException {
        PutOptions options = PutOptions.defaults().withPolicy((peer, name) -> true, (peer, name) -> true)
                .withMaxBatches(7);
        ClassLoader loader = AccessChild.class.getClassLoader();
        Class.forName("org.devicebridge.arrow.cuda.DeviceCopies", true, loader);
        Class.forName("org.devicebridge.arrow.flight.DeviceFlightBatch", true, loader);
        return options.maxBatches() + " " + options.mayReplace().test("", "d") + " "
                + PutOptions.defaults().mayReplace().test("", "d");
    }

    /** {@code DeviceFlightProducer} extends Flight's {@code NoOpFlightProducer}: without Flight it cannot load. */
    private static String flightProducer() {
        try {
            return "loaded " + Class.forName("org.devicebridge.arrow.flight.DeviceFlightProducer", true,
                    AccessChild.class.getClassLoader()).getSimpleName();
        } catch (ClassNotFoundException | LinkageError e) {
            return "not linked: " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static String dlpack() {
        try (Arena memory = Arena.ofConfined()) {
            MemorySegment data = memory.allocate(ValueLayout.JAVA_FLOAT, 4);
            data.setAtIndex(ValueLayout.JAVA_FLOAT, 3, 7f);
            ExportedTensor exported = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 4));
            try (ImportedTensor t = DLPack.importTensor(exported, ImportOptions.any())) {
                return Float.toString(t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 3));
            }
        }
    }

    // ---------------------------------------------------------------- a CUDA import without Arrow Java

    /** Made on first use: this class itself must load where native access is denied. */
    private static final class Callbacks {
        static final MemorySegment RELEASE_SCHEMA = upcall("releaseSchema");
        static final MemorySegment RELEASE_ARRAY = upcall("releaseArray");
    }

    private static int arrayReleases;

    private static MemorySegment upcall(String method) {
        try {
            return Linker.nativeLinker().upcallStub(MethodHandles.lookup().findStatic(AccessChild.class, method,
                            java.lang.invoke.MethodType.methodType(void.class, MemorySegment.class)),
                    FunctionDescriptor.ofVoid(ValueLayout.ADDRESS), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void releaseSchema(MemorySegment s) {
        ArrowSchema.release(s.reinterpret(ArrowSchema.sizeof()), MemorySegment.NULL);
    }

    private static void releaseArray(MemorySegment a) {
        arrayReleases++;
        ArrowArray.release(a.reinterpret(ArrowArray.sizeof()), MemorySegment.NULL);
    }

    /**
     * {@code CudaArrow.importDeviceArray} of a hand-made CUDA int64 array: it needs no Arrow Java. Without a
     * CUDA driver it throws {@code CudaUnavailableException}; with one, the missing copies are refused. Either way
     * the struct is released exactly once, and nothing links against Arrow Java.
     */
    private static String cudaArrowImport() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment schema = ArrowC.allocateSchema(arena);
            ArrowSchema.format(schema, arena.allocateFrom("l"));
            ArrowSchema.name(schema, arena.allocateFrom("x"));
            ArrowSchema.release(schema, Callbacks.RELEASE_SCHEMA);
            MemorySegment device = ArrowC.allocateDeviceArray(arena);
            MemorySegment array = ArrowDeviceArray.array(device);
            ArrowArray.n_buffers(array, 2);
            ArrowArray.buffers(array, arena.allocate(ValueLayout.ADDRESS, 2));
            ArrowArray.release(array, Callbacks.RELEASE_ARRAY);
            ArrowDeviceArray.device_type(device, DeviceKind.CUDA.code());
            int before = arrayReleases;
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                CudaArrow.importDeviceArray(s.root(), device, ValidationLevel.MINIMAL, null).close();
                return "imported";
            } catch (RuntimeException e) {
                return String.format(Locale.ROOT, "%s, released %d time(s)", e.getClass().getSimpleName(),
                        arrayReleases - before);
            }
        }
    }
}
