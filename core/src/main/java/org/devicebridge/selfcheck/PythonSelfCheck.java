package org.devicebridge.selfcheck;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.Native;
import org.devicebridge.python.PyObjectRef;
import org.devicebridge.python.PythonException;
import org.devicebridge.python.PythonExport;
import org.devicebridge.python.PythonImport;
import org.devicebridge.python.PythonRuntime;

/**
 * The self-check's Python section: where libpython came from, which consumers (NumPy, pyarrow, PyTorch,
 * CuPy) the interpreter can import, and a round trip with each one found. A missing interpreter or library
 * is reported, not failed; an exchange that runs and goes wrong is a failure.
 */
final class PythonSelfCheck implements SelfCheckSection {
    private static final AtomicInteger DELETES = new AtomicInteger();
    private static final float[] VALUES = {1.5f, -2f, 3.25f};

    @Override
    public String name() {
        return "Python (CPython capsules)";
    }

    @Override
    public void run(Report report) {
        if (!PythonRuntime.isAvailable()) {
            report.line("CPython", "not available: " + PythonRuntime.unavailableReason());
            return;
        }
        PythonRuntime python = PythonRuntime.get();
        report.line("CPython", python.version() + " (" + python.libraryPath() + ")");
        try (PyObjectRef ns = python.newNamespace()) {
            for (String module : List.of("numpy", "pyarrow", "torch", "cupy")) {
                if (!python.canImport(module)) {
                    report.line(module, "not found");
                    continue;
                }
                python.exec("import " + module, ns);
                try (PyObjectRef v = python.eval(module + ".__version__", ns)) {
                    report.line(module, "found " + v.str());
                }
                try {
                    switch (module) {
                        case "numpy" -> {
                            report.check("numpy <- Java", javaToConsumer(python, ns, "numpy.from_dlpack(obj).tolist()"),
                                    "numpy.from_dlpack of a Java DLPack tensor, deleter called once");
                            report.check("numpy -> Java", consumerToJava(python, ns,
                                    "numpy.array([1.5, -2, 3.25], dtype=numpy.float32)", DeviceKind.CPU), "Java imports NumPy's tensor");
                        }
                        case "torch" -> {
                            report.check("torch <- Java", javaToConsumer(python, ns, "torch.from_dlpack(obj).tolist()"),
                                    "torch.from_dlpack of a Java CPU tensor, deleter called once");
                            report.check("torch -> Java", consumerToJava(python, ns,
                                    "torch.tensor([1.5, -2, 3.25], dtype=torch.float32)", DeviceKind.CPU), "Java imports a torch CPU tensor");
                        }
                        case "cupy" -> {
                            if (!hasCudaDevice(python, ns)) {
                                report.line("cupy -> Java", "not run: CuPy sees no CUDA device");
                            } else {
                                report.check("cupy -> Java", consumerToJava(python, ns,
                                        "cupy.array([1.5, -2, 3.25], dtype=cupy.float32)", DeviceKind.CUDA),
                                        "Java imports a CuPy CUDA tensor (device and pointer checked)");
                            }
                        }
                        case "pyarrow" -> report.check("pyarrow <-> Java", pyarrow(python, ns),
                                "Java imports a sliced pyarrow array and hands it back through __arrow_c_array__");
                        default -> throw new DeviceBridgeException("no self-check for Python module " + module);
                    }
                } catch (RuntimeException e) {
                    report.check(module, false, e.toString());
                }
            }
        }
    }

    private static boolean hasCudaDevice(PythonRuntime python, PyObjectRef ns) {
        try (PyObjectRef n = python.eval("cupy.cuda.runtime.getDeviceCount()", ns)) {
            return n.toLong() > 0;
        } catch (PythonException e) {
            return false;
        }
    }

    /** Exports a CPU float32 tensor to {@code consumerExpression} (which sees it as {@code obj}). */
    private static boolean javaToConsumer(PythonRuntime python, PyObjectRef ns, String consumerExpression) {
        int before = DELETES.get();
        String values;
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, consumer -> tensor(true)) // a legacy consumer gets a struct made around it
                .build()) {
            python.set(ns, "obj", obj);
            try (PyObjectRef r = python.eval(consumerExpression, ns)) {
                values = r.str();
            }
            python.exec("del obj\nimport gc\ngc.collect()", ns);
        }
        return values.equals("[1.5, -2.0, 3.25]") && DELETES.get() == before + 1;
    }

    /** Imports {@code producerExpression}'s tensor; checks device type, and values where it is on the CPU. */
    private static boolean consumerToJava(PythonRuntime python, PyObjectRef ns, String producerExpression,
                                          DeviceKind deviceType) {
        try (PyObjectRef x = python.eval(producerExpression, ns)) {
            Device device = PythonImport.device(x);
            ConsumerStream consumer = ConsumerStream.of(device, deviceType == DeviceKind.CUDA ? 1L : null);
            try (ImportedTensor t = PythonImport.tensor(x, consumer, ImportOptions.any())) {
                if (t.device().kind() != deviceType || t.shape().length != 1 || t.shape()[0] != 3) {
                    return false;
                }
                if (deviceType != DeviceKind.CPU) {
                    return !t.devicePointer().equals(MemorySegment.NULL);
                }
                MemorySegment data = t.segment();
                for (int i = 0; i < 3; i++) {
                    if (data.getAtIndex(JAVA_FLOAT, i) != VALUES[i]) {
                        return false;
                    }
                }
                return true;
            }
        }
    }

    /** pyarrow -> Java (a sliced array, offset read) -> pyarrow again through a Java exporter. */
    private static boolean pyarrow(PythonRuntime python, PyObjectRef ns) {
        try (PyObjectRef src = python.eval("pyarrow.array([1, 2, 3, 4, 5], type=pyarrow.int32()).slice(1, 3)", ns)) {
            try (ImportedArray array = PythonImport.array(src, ValidationLevel.FULL)) {
                if (array.root().length() != 3 || array.root().offset() != 1) {
                    return false;
                }
            }
            // pyarrow's own export fills the structs the Java exporter hands back to pyarrow
            try (PyObjectRef obj = PythonExport.builder()
                    .arrowArray((requested, schemaOut, arrayOut) -> src.callMethod("_export_to_c",
                            arrayOut.address(), schemaOut.address()).close())
                    .build()) {
                python.set(ns, "obj", obj);
                try (PyObjectRef r = python.eval("pyarrow.array(obj).to_pylist()", ns)) {
                    boolean ok = r.str().equals("[2, 3, 4]");
                    python.exec("del obj", ns);
                    return ok;
                }
            }
        }
    }

    // ---- a minimal CPU tensor for the checks: struct, shape and data in one calloc'd block ----

    private static final class Deleters {
        static final MemorySegment LEGACY = Native.upcallStub(MethodHandles.lookup(), PythonSelfCheck.class,
                "delete", FunctionDescriptor.ofVoid(ADDRESS));
    }

    private static MemorySegment tensor(boolean versioned) {
        long structSize = versioned ? DLManagedTensorVersioned.sizeof() : DLManagedTensor.sizeof();
        MemorySegment block = Native.calloc(structSize + 8 + 4L * VALUES.length);
        MemorySegment shape = block.asSlice(structSize, 8);
        shape.set(JAVA_LONG, 0, VALUES.length);
        MemorySegment data = block.asSlice(structSize + 8);
        MemorySegment.copy(VALUES, 0, data, JAVA_FLOAT, 0, VALUES.length);
        MemorySegment t;
        if (versioned) {
            DLPackVersion.major(DLManagedTensorVersioned.version(block), 1);
            DLManagedTensorVersioned.deleter(block, Deleters.LEGACY); // frees the block: same for both layouts
            t = DLManagedTensorVersioned.dl_tensor(block);
        } else {
            DLManagedTensor.deleter(block, Deleters.LEGACY);
            t = DLManagedTensor.dl_tensor(block);
        }
        DLTensor.data(t, data);
        DLDevice.device_type(DLTensor.device(t), DeviceKind.CPU.code());
        DLTensor.ndim(t, 1);
        MemorySegment dt = DLTensor.dtype(t);
        DLDataType.code(dt, (byte) DType.KDL_FLOAT);
        DLDataType.bits(dt, (byte) 32);
        DLDataType.lanes(dt, (short) 1);
        DLTensor.shape(t, shape);
        return block;
    }

    @SuppressWarnings("unused")
    private static void delete(MemorySegment self) {
        try {
            DELETES.incrementAndGet();
            Native.free(self);
        } catch (Throwable t) {
            System.getLogger("org.devicebridge.python").log(System.Logger.Level.ERROR,
                    String.format(Locale.ROOT, "self-check tensor deleter failed: %s", t));
        }
    }
}
