package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicReference;
import org.devicebridge.Device;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * DLPack between Java and the real NumPy, in one process: NumPy consumes tensors exported from Java
 * ({@code numpy.from_dlpack}) and Java imports NumPy's. Runs against whatever NumPy the interpreter has:
 * 1.24 (Debian 12) speaks only legacy {@code dltensor} capsules, 2.1+ also {@code dltensor_versioned}.
 */
class NumpyDLPackTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int deletesBefore;
    private int exportsBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("numpy");
        liveBefore = HandleTracker.liveHandles();
        deletesBefore = TestTensors.DELETES.get();
        exportsBefore = PythonExport.liveObjects();
        ns = python.newNamespace();
        python.exec("import numpy as np, sys, gc", ns);
    }

    @AfterEach
    void tearDown() {
        if (ns == null) {
            return; // skipped in setUp: nothing to check
        }
        {
            python.exec("gc.collect()", ns);
            ns.close();
        }
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBefore, PythonExport.liveObjects(), "exporter objects still alive");
    }

    private boolean numpyVersioned() {
        try (PyObjectRef v = python.eval("tuple(int(x) for x in np.__version__.split('.')[:2]) >= (2, 1)", ns)) {
            return "True".equals(v.str());
        }
    }

    private PyObjectRef javaTensor(float[] values, long[] shape, boolean readOnly, AtomicReference<ConsumerStream> seen) {
        return PythonExport.builder()
                .dlpack(Device.CPU, r -> {
                    seen.set(r);
                    return TestTensors.cpuTensor(true, values, shape, readOnly);
                })
                .build();
    }

    @Test
    void numpyConsumesJavaTensorWithValuesShapeAndOneDelete() {
        AtomicReference<ConsumerStream> seen = new AtomicReference<>();
        try (PyObjectRef obj = javaTensor(new float[] {1, 2, 3, 4, 5, 6}, new long[] {2, 3}, false, seen)) {
            python.set(ns, "obj", obj);
            python.exec("a = np.from_dlpack(obj)", ns);
            try (PyObjectRef r = python.eval("(a.shape, str(a.dtype), a.tolist())", ns)) {
                assertEquals("((2, 3), 'float32', [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])", r.str());
            }
            try (PyObjectRef w = python.eval("bool(a.flags.writeable)", ns)) {
                // NumPy 1.x marks every array imported through a legacy capsule read-only
                assertEquals(numpyVersioned() ? "True" : "False", w.str());
            }
            assertFalse(seen.get().needsSync(), "a CPU consumer passes stream=None: nothing to synchronise");
            assertEquals(Device.CPU, seen.get().device());
            assertEquals(deletesBefore, TestTensors.DELETES.get(), "NumPy holds the tensor while the array lives");
            python.exec("del a, obj", ns);
        }
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "exactly one delete once the array is gone");
    }

    @Test
    void numpyAndJavaShareTheExportedMemory() {
        AtomicReference<MemorySegment> data = new AtomicReference<>();
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, r -> {
                    MemorySegment t = TestTensors.cpuTensor(true, new float[] {0, 0, 0, 0}, new long[] {4}, false);
                    data.set(DLTensor.data(TestTensors.dlTensor(t, true)).reinterpret(16));
                    return t;
                })
                .build()) {
            python.set(ns, "obj", obj);
            python.exec("a = np.from_dlpack(obj)", ns);
            data.get().setAtIndex(JAVA_FLOAT, 1, -3.5f);
            try (PyObjectRef v = python.eval("float(a[1])", ns)) {
                assertEquals(-3.5, v.toDouble(), "NumPy sees a write Java made after the export");
            }
            if (numpyVersioned()) {
                python.exec("a[2] = 42.5", ns);
                assertEquals(42.5f, data.get().getAtIndex(JAVA_FLOAT, 2), "NumPy wrote into the Java-exported buffer");
            }
            try (PyObjectRef p = python.eval("a.ctypes.data", ns)) {
                assertEquals(data.get().address(), p.toLong(), "NumPy's array starts at the exported pointer");
            }
            python.exec("del a, obj", ns);
        }
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get());
    }

    @Test
    void readOnlyJavaTensorIsReadOnlyInNumpyOrNotExportedToLegacyNumpy() {
        AtomicReference<ConsumerStream> seen = new AtomicReference<>();
        try (PyObjectRef obj = javaTensor(new float[] {7, 8}, new long[] {2}, true, seen)) {
            python.set(ns, "obj", obj);
            if (!numpyVersioned()) {
                // a legacy DLManagedTensor cannot say read-only, so a legacy consumer is refused, not given a
                // tensor it might write: NumPy 1.x asks without max_version
                PythonException e = assertThrows(PythonException.class, () -> python.exec("np.from_dlpack(obj)", ns));
                assertTrue(e.getMessage().contains("BufferError") && e.getMessage().contains("READ_ONLY"), e.getMessage());
                python.exec("del obj", ns);
            } else {
                python.exec("a = np.from_dlpack(obj)", ns);
                try (PyObjectRef w = python.eval("(bool(a.flags.writeable), a.tolist())", ns)) {
                    assertEquals("(False, [7.0, 8.0])", w.str()); // DLPACK_FLAG_BITMASK_READ_ONLY honoured
                }
                python.exec("del a, obj", ns);
            }
        }
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get());
    }

    @Test
    void droppedCapsuleFromJavaExporterDeletesOnceAndConsumedOneNever() {
        try (PyObjectRef obj = javaTensor(new float[] {1}, new long[] {1}, false, new AtomicReference<>())) {
            python.set(ns, "obj", obj);
            python.exec("c = obj.__dlpack__(max_version=(1, 0))\ndel c", ns);
            assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "an unconsumed capsule deletes in its destructor");
            python.exec("a = np.from_dlpack(obj)\ndel a, obj", ns);
        }
        assertEquals(deletesBefore + 2, TestTensors.DELETES.get(), "a consumed capsule is deleted by NumPy only");
        TestTensors.DELETES_BY_ADDRESS.values().forEach(n -> assertEquals(1, n, "a tensor deleted twice"));
    }

    @Test
    void javaImportsNumpyArrayZeroCopyAndDeleterDropsNumpysReference() {
        python.exec("src = np.arange(12, dtype=np.float32).reshape(3, 4)[1:, ::2]\nrc0 = sys.getrefcount(src)", ns);
        try (PyObjectRef src = python.eval("src", ns); PyObjectRef capsule = PythonImport.dlpack(src, OptionalLong.empty())) {
            CapsuleKind kind = Capsules.kindOf(capsule);
            assertEquals(numpyVersioned() ? CapsuleKind.DLTENSOR_VERSIONED : CapsuleKind.DLTENSOR, kind);
            boolean versioned = kind == CapsuleKind.DLTENSOR_VERSIONED;
            MemorySegment managed = Capsules.take(capsule, kind, p -> p);
            assertEquals("used_" + kind.capsuleName(), Capsules.nameOf(capsule));
            MemorySegment t = TestTensors.dlTensor(managed, versioned);
            assertEquals(1, DLDevice.device_type(DLTensor.device(t)), "kDLCPU");
            assertEquals(2, DLTensor.ndim(t));
            MemorySegment dt = DLTensor.dtype(t);
            assertEquals(2, DLDataType.code(dt));
            assertEquals(32, DLDataType.bits(dt) & 0xff);
            long[] shape = DLTensor.shape(t).reinterpret(16).toArray(JAVA_LONG);
            long[] strides = DLTensor.strides(t).reinterpret(16).toArray(JAVA_LONG);
            assertArrayEquals(new long[] {2, 2}, shape);
            assertArrayEquals(new long[] {4, 2}, strides, "strides in elements: a strided view, not a copy");
            MemorySegment base = DLTensor.data(t).reinterpret(48 + DLTensor.byte_offset(t));
            long off = DLTensor.byte_offset(t);
            float[] got = new float[4];
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < 2; j++) {
                    got[i * 2 + j] = base.get(JAVA_FLOAT, off + 4 * (i * strides[0] + j * strides[1]));
                }
            }
            assertArrayEquals(new float[] {4, 6, 8, 10}, got);
            try (PyObjectRef addr = python.eval("src.ctypes.data", ns)) {
                assertEquals(addr.toLong(), DLTensor.data(t).address() + off, "Java sees NumPy's own memory");
            }
            if (versioned) {
                assertEquals(0L, DLManagedTensorVersioned.flags(managed.reinterpret(DLManagedTensorVersioned.sizeof())) & 1L,
                        "a writeable array is not flagged read-only");
            }
            try (PyObjectRef grew = python.eval("sys.getrefcount(src) > rc0 + 1", ns)) {
                assertEquals("True", grew.str(), "the export keeps NumPy's array alive");
            }
            TestTensors.callDeleter(managed, versioned);
        }
        try (PyObjectRef back = python.eval("sys.getrefcount(src) == rc0", ns)) {
            assertEquals("True", back.str(), "the deleter dropped NumPy's reference exactly once");
        }
    }

    @Test
    void readOnlyNumpyArrayIsFlaggedOrRefusedForLegacyConsumers() {
        python.exec("ro = np.ones(3, dtype=np.float32)\nro.flags.writeable = False", ns);
        try (PyObjectRef ro = python.eval("ro", ns)) {
            if (numpyVersioned()) {
                try (PyObjectRef capsule = PythonImport.dlpack(ro, OptionalLong.empty())) {
                    MemorySegment managed = Capsules.take(capsule, CapsuleKind.DLTENSOR_VERSIONED, p -> p);
                    long flags = DLManagedTensorVersioned.flags(managed.reinterpret(DLManagedTensorVersioned.sizeof()));
                    TestTensors.callDeleter(managed, true);
                    assertEquals(1L, flags & 1L, "DLPACK_FLAG_BITMASK_READ_ONLY");
                }
            } else {
                PythonException e = assertThrows(PythonException.class, () -> PythonImport.dlpack(ro, OptionalLong.empty()));
                assertEquals("BufferError", e.pythonType(), "NumPy 1.x refuses to export a read-only array");
            }
        }
    }

    @Test
    void javaRoundTripsATensorThroughNumpy() {
        // Java -> NumPy -> Java: the tensor Java gets back points at the memory Java exported.
        AtomicReference<MemorySegment> exported = new AtomicReference<>();
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, r -> {
                    MemorySegment t = TestTensors.cpuTensor(true, new float[] {3, 1, 4}, new long[] {3}, false);
                    exported.set(DLTensor.data(TestTensors.dlTensor(t, true)));
                    return t;
                })
                .build()) {
            python.set(ns, "obj", obj);
            python.exec("a = np.from_dlpack(obj)\ndel obj", ns);
            if (!numpyVersioned()) {
                // NumPy 1.x imports read-only and refuses to re-export read-only arrays through DLPack
                try (PyObjectRef a = python.eval("a", ns)) {
                    PythonException e = assertThrows(PythonException.class, () -> PythonImport.dlpack(a, OptionalLong.empty()));
                    assertEquals("BufferError", e.pythonType());
                }
                python.exec("del a", ns);
                assertEquals(deletesBefore + 1, TestTensors.DELETES.get());
                return;
            }
            try (PyObjectRef a = python.eval("a", ns); PyObjectRef capsule = PythonImport.dlpack(a, OptionalLong.empty())) {
                CapsuleKind kind = Capsules.kindOf(capsule);
                MemorySegment managed = Capsules.take(capsule, kind, p -> p);
                boolean versioned = kind == CapsuleKind.DLTENSOR_VERSIONED;
                assertEquals(exported.get().address(),
                        DLTensor.data(TestTensors.dlTensor(managed, versioned)).address());
                TestTensors.callDeleter(managed, versioned);
            }
            python.exec("del a", ns);
        }
        // NumPy's export was deleted by Java above (NumPy's own deleter); Java's tensor is deleted by NumPy here
        assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "Java's tensor deleted once, when NumPy let go");
        assertFalse(TestTensors.DELETES_BY_ADDRESS.values().stream().anyMatch(n -> n != 1));
    }
}
