package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code __array_interface__} and {@code __cuda_array_interface__} between Java and the real NumPy, in one
 * process: Java imports NumPy's arrays (and hand-written dictionaries that break each rule) zero-copy, NumPy
 * views Java memory through the exporter objects. {@code __cuda_array_interface__} is exercised here without a
 * GPU through its dictionary only (a host pointer labelled as device memory, never dereferenced); the GPU
 * tests with CuPy and Numba are in {@link GpuArrayInterfacesTest}.
 */
class ArrayInterfacesTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("numpy");
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        ns = python.newNamespace();
        python.exec("""
                import numpy as np, gc
                class Fake:
                    def __init__(self, d, name='__array_interface__'):
                        self.d = d
                        setattr(type(self), name, property(lambda s: s.d))
                class FakeCuda:
                    def __init__(self, d):
                        self.d = d
                    @property
                    def __cuda_array_interface__(self):
                        return self.d
                def iface(a, **changes):
                    d = dict(a.__array_interface__)
                    d.update(changes)
                    return Fake(d)
                """, ns);
    }

    @AfterEach
    void tearDown() {
        if (ns == null) {
            return; // skipped in setUp
        }
        python.exec("gc.collect()", ns);
        ns.close();
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBefore, PythonExport.liveObjects(), "exporter objects still alive");
    }

    private PyObjectRef eval(String expression) {
        return python.eval(expression, ns);
    }

    private InterfaceArray importHost(String expression) {
        try (PyObjectRef producer = eval(expression)) {
            return ArrayInterfaces.importArrayInterface(producer, ImportOptions.any());
        }
    }

    private static float floatAt(ImportedTensor t, long... index) {
        long[] strides = t.strides();
        long off = t.originOffset();
        for (int i = 0; i < index.length; i++) {
            off += index[i] * strides[i] * 4;
        }
        return t.segment().get(JAVA_FLOAT, off);
    }

    // ------------------------------------------------------------------------------------------ import

    @Test
    void importsNumpyArrayZeroCopyWithShapeValuesAndOneReferenceHeld() {
        python.exec("a = np.arange(6, dtype=np.float32).reshape(2, 3); rc = __import__('sys').getrefcount(a)", ns);
        try (InterfaceArray arr = importHost("a")) {
            ImportedTensor t = arr.tensor();
            assertEquals(3, arr.version());
            assertEquals(DType.FLOAT32, t.dtype());
            assertEquals(Device.CPU, t.device());
            assertArrayEquals(new long[] {2, 3}, t.shape());
            assertTrue(t.isCompact());
            assertFalse(arr.isReadOnly());
            assertTrue(arr.mask().isEmpty());
            assertTrue(arr.producerStream().isEmpty());
            assertEquals(5f, floatAt(t, 1, 2));
            try (PyObjectRef held = eval("__import__('sys').getrefcount(a) - rc")) {
                assertEquals(1, held.toLong(), "the import holds one reference to the producer");
            }
            python.exec("a[1, 2] = 42", ns); // zero copy: NumPy's write is seen by Java
            assertEquals(42f, floatAt(t, 1, 2));
            arr.writableSegment().set(JAVA_FLOAT, 0, -1f); // and Java's by NumPy
            try (PyObjectRef v = eval("float(a[0, 0])")) {
                assertEquals(-1.0, v.toDouble());
            }
        }
        try (PyObjectRef held = eval("__import__('sys').getrefcount(a) - rc")) {
            assertEquals(0, held.toLong(), "close drops the reference");
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = ';', value = {
        "a[:, ::2]; 3, 2",
        "a.T; 4, 3",
        "a[::-1, ::-1]; 3, 4",
        "a[1:, 1:3]; 2, 2",
        "np.broadcast_to(a[0], (5, 4)); 5, 4",
    })
    void importsStridedViewsWithTheirValues(String view, String shape) {
        python.exec("a = np.arange(12, dtype=np.float32).reshape(3, 4); v = " + view, ns);
        try (InterfaceArray arr = importHost("v")) {
            ImportedTensor t = arr.tensor();
            long[] s = t.shape();
            assertEquals(shape.replace(" ", ""), s[0] + "," + s[1]);
            for (long i = 0; i < s[0]; i++) {
                for (long j = 0; j < s[1]; j++) {
                    try (PyObjectRef expected = eval("float(v[" + i + ", " + j + "])")) {
                        assertEquals((float) expected.toDouble(), floatAt(t, i, j), view + "[" + i + "," + j + "]");
                    }
                }
            }
        }
    }

    @Test
    void scalarAndEmptyArraysImport() {
        try (InterfaceArray scalar = importHost("np.array(7, dtype=np.int32)");
             InterfaceArray empty = importHost("np.zeros((0, 3), dtype=np.int64)")) {
            assertEquals(0, scalar.tensor().ndim());
            assertEquals(7, scalar.tensor().segment().get(JAVA_INT, 0));
            assertEquals(0, empty.tensor().elementCount());
            assertEquals(0, empty.tensor().byteExtent());
        }
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "bool_, BOOL", "int8, INT8", "int16, INT16", "int32, INT32", "int64, INT64", "uint8, UINT8",
        "uint16, UINT16", "uint32, UINT32", "uint64, UINT64", "float16, FLOAT16", "float32, FLOAT32",
        "float64, FLOAT64", "complex64, COMPLEX64", "complex128, COMPLEX128",
    })
    // np.bool_ rather than np.bool: Debian 12's NumPy 1.24 (what CI installs) has no np.bool
    void mapsEveryNumpyTypeToItsDLPackType(String numpy, String dlpack) throws ReflectiveOperationException {
        try (InterfaceArray arr = importHost("np.zeros(3, dtype=np." + numpy + ")")) {
            assertEquals(DType.class.getField(dlpack).get(null), arr.tensor().dtype());
        }
    }

    @Test
    void readOnlyArrayIsAReadOnlyViewAndRefusesTheWritePath() {
        python.exec("a = np.arange(4, dtype=np.float32); a.setflags(write=False)", ns);
        try (InterfaceArray arr = importHost("a")) {
            assertTrue(arr.isReadOnly());
            assertTrue(arr.tensor().isReadOnly());
            assertTrue(arr.tensor().segment().isReadOnly());
            UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class, arr::writableSegment);
            assertEquals("data[1]", e.path());
            assertThrows(UnsupportedFeatureException.class, arr::writableDevicePointer);
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = ';', value = {
        "np.arange(4, dtype='>i4'); __array_interface__.typestr",
        "np.zeros(2, dtype='datetime64[s]'); __array_interface__.typestr",
        "np.zeros(2, dtype=object); __array_interface__.typestr",
        "np.zeros(2, dtype='S3'); __array_interface__.typestr",
        "np.zeros(2, dtype=np.longdouble); __array_interface__.typestr",
        "np.zeros(2, dtype=[('a', '<i4'), ('b', '<f8')]); __array_interface__.descr",
        "np.zeros(3, dtype=[('a', '<i4'), ('b', 'u1')])['a']; __array_interface__.strides[0]",
        "iface(np.zeros(2), data=b'abcdefghabcdefgh'); __array_interface__.data",
        "iface(np.zeros(2), data=None); __array_interface__.data",
    })
    void refusesWhatItCannotViewByName(String producer, String path) {
        UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class, () -> importHost(producer));
        assertEquals(path, e.path(), e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = ';', value = {
        "[1, 2]; SCHEMA; __array_interface__; 3",
        "Fake([1, 2]); FORMAT; __array_interface__; []",
        "iface(np.zeros(2), version=2); VERSION; __array_interface__.version; {}",
        "iface(np.zeros(2), version='3'); FORMAT; __array_interface__.version; {}",
        "iface(np.zeros(2), shape=(2, -1)); SIZE; __array_interface__.shape[1]; {}",
        "iface(np.zeros(2), shape=[2.0]); FORMAT; __array_interface__.shape[0]; {}",
        "iface(np.zeros(2), typestr='<q8'); FORMAT; __array_interface__.typestr; {}",
        "iface(np.zeros(2), typestr='f8'); FORMAT; __array_interface__.typestr; {}",
        "iface(np.zeros(2), typestr=8); FORMAT; __array_interface__.typestr; {}",
        "iface(np.zeros(2), strides=(8, 8)); STRUCTURE; __array_interface__.strides; {}",
        "iface(np.zeros(2), data=(0, False)); NULL_POINTER; __array_interface__.data[0]; {}",
        "iface(np.zeros(2), data=(1, 2, 3)); STRUCTURE; __array_interface__.data; {}",
        "iface(np.zeros(2), data=(8, 'no')); FORMAT; __array_interface__.data[1]; {}",
        "iface(np.zeros(2), offset=-8); SIZE; __array_interface__.offset; {}",
        "iface(np.zeros(2), shape=(2 ** 62, 4), strides=None); SIZE; __array_interface__.strides; {}",
        "iface(np.zeros(2), shape=tuple([1] * 65)); SIZE; __array_interface__.shape; {}",
        "iface(np.zeros(2), data=(2 ** 64, False)); SIZE; __array_interface__.data[0]; {}",
        "Fake({'shape': (2,), 'typestr': '<f8', 'data': (8, False)}); STRUCTURE; __array_interface__.version; {}",
        "iface(np.zeros(4), mask=np.zeros(3, dtype=bool)); LENGTH; __array_interface__.mask.shape; {}",
    })
    void rejectsBrokenDictionariesWithCategoryAndPath(String producer, Category category, String path, String ignored) {
        ValidationException e = assertThrows(ValidationException.class, () -> importHost(producer));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
    }

    @Test
    void maskImportsAsASecondTensorBroadcastToTheData() {
        python.exec("a = np.arange(6, dtype=np.float32).reshape(2, 3); m = np.array([True, False, True]);"
                + " f = iface(a, mask=m)", ns);
        try (InterfaceArray arr = importHost("f")) {
            ImportedTensor mask = arr.mask().orElseThrow();
            assertEquals(DType.BOOL, mask.dtype());
            assertArrayEquals(new long[] {3}, mask.shape());
            assertEquals(1, mask.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
            assertEquals(0, mask.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 1));
        }
        UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class,
                () -> importHost("iface(a, mask=np.zeros(3, dtype=np.float32))"));
        assertEquals("__array_interface__.mask.typestr", e.path());
    }

    @Test
    void offsetIsHonoured() {
        python.exec("a = np.arange(4, dtype=np.float32); f = iface(a[:2], offset=8)", ns);
        try (InterfaceArray arr = importHost("f")) {
            assertEquals(2f, floatAt(arr.tensor(), 0));
            assertEquals(3f, floatAt(arr.tensor(), 1));
        }
    }

    @Test
    void expectedDeviceIsCheckedAndHostInterfaceRefusesDeviceMemory() {
        try (PyObjectRef a = eval("np.zeros(2)")) {
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrayInterfaces.importArrayInterface(a, ImportOptions.expecting(Device.cuda(0))));
            assertEquals(Category.DEVICE, e.category());
            try (InterfaceArray pinned = ArrayInterfaces.importArrayInterface(a,
                    ImportOptions.expecting(Device.cudaHost(0)))) {
                assertEquals(DeviceKind.CUDA_HOST, pinned.tensor().device().kind());
            }
        }
    }

    // ------------------------------------------------------ __cuda_array_interface__ without a GPU

    private InterfaceArray importCuda(String expression, Long consumerStream) {
        try (PyObjectRef producer = eval(expression)) {
            return ArrayInterfaces.importCudaArrayInterface(producer, ConsumerStream.of(Device.cuda(0), consumerStream),
                    ImportOptions.expecting(Device.cuda(0)));
        }
    }

    @Test
    void cudaInterfaceDictionaryIsReadWithTheLabelTrusted() {
        python.exec("""
                a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:]
                d = dict(a.__array_interface__); d['stream'] = None
                f = FakeCuda(d)
                """, ns);
        try (InterfaceArray arr = importCuda("f", -1L);
             PyObjectRef ptr = eval("a.__array_interface__['data'][0]")) {
            ImportedTensor t = arr.tensor();
            assertEquals(Device.cuda(0), t.device());
            assertArrayEquals(new long[] {3, 3}, t.shape());
            assertArrayEquals(new long[] {4, 1}, t.strides());
            assertEquals(ptr.toLong(), t.devicePointer().address());
            assertThrows(UnsupportedFeatureException.class, t::segment); // device memory: no host view
        }
    }

    @ParameterizedTest(name = "stream={0}")
    @CsvSource({"0, STREAM", "-5, STREAM"})
    void cudaInterfaceRefusesForbiddenStreams(long stream, Category category) {
        python.exec("d = dict(np.zeros(2).__array_interface__); d['stream'] = " + stream + "; f = FakeCuda(d)", ns);
        ValidationException e = assertThrows(ValidationException.class, () -> importCuda("f", -1L));
        assertEquals(category, e.category());
        assertEquals("__cuda_array_interface__.stream", e.path());
    }

    @Test
    void cudaInterfaceWithAStreamAndANoSyncConsumerKeepsTheStreamWithoutTouchingTheDriver() {
        python.exec("d = dict(np.zeros(2).__array_interface__); d['stream'] = 1234567; d['version'] = 3; f = FakeCuda(d)", ns);
        try (InterfaceArray arr = importCuda("f", -1L)) {
            assertEquals(1234567L, arr.producerStream().orElseThrow().address());
        }
    }

    @Test
    void cudaInterfaceRequiresData() {
        python.exec("f = FakeCuda({'version': 3, 'shape': (2,), 'typestr': '<f4'})", ns);
        ValidationException e = assertThrows(ValidationException.class, () -> importCuda("f", -1L));
        assertEquals("__cuda_array_interface__.data", e.path());
        assertEquals(Category.STRUCTURE, e.category());
    }

    // ------------------------------------------------------------------------------------------ export

    @Test
    void numpyViewsJavaMemoryZeroCopyAndTheOwnerClosesWhenCollected() {
        Arena arena = Arena.ofShared();
        MemorySegment data = arena.allocate(JAVA_FLOAT, 6);
        for (int i = 0; i < 6; i++) {
            data.setAtIndex(JAVA_FLOAT, i, i * 1.5f);
        }
        AtomicInteger closes = new AtomicInteger();
        AutoCloseable owner = () -> {
            closes.incrementAndGet();
            arena.close();
        };
        try (PyObjectRef obj = PythonExport.builder()
                .arrayInterface(TensorSpec.of(data, DType.FLOAT32, 2, 3))
                .keepAlive(owner)
                .build()) {
            python.set(ns, "obj", obj);
        }
        python.exec("a = np.asarray(obj); del obj", ns);
        try (PyObjectRef r = eval("(a.shape, str(a.dtype), a.tolist(), a.flags.writeable, a.__array_interface__['strides'])")) {
            assertEquals("((2, 3), 'float32', [[0.0, 1.5, 3.0], [4.5, 6.0, 7.5]], True, None)", r.str());
        }
        data.setAtIndex(JAVA_FLOAT, 4, 99f); // zero copy: Java's write is seen by NumPy
        try (PyObjectRef v = eval("float(a[1, 1])")) {
            assertEquals(99.0, v.toDouble());
        }
        assertEquals(0, closes.get(), "NumPy's array keeps the exporter object (and the memory) alive");
        python.exec("del a; gc.collect()", ns);
        assertEquals(1, closes.get(), "the owner is closed once the object is collected");
    }

    @Test
    void exportedStridesReadOnlyAndOffsetReachNumpy() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(JAVA_INT, 12);
            for (int i = 0; i < 12; i++) {
                data.setAtIndex(JAVA_INT, i, i);
            }
            // the 3x4 matrix's transpose, starting one row in: rows 1..2 of the original, read column-major
            TensorSpec spec = TensorSpec.of(data, DType.INT32, 4, 2).withStrides(1, 4).withByteOffset(16)
                    .withFlags(TensorFlag.READ_ONLY);
            try (PyObjectRef obj = PythonExport.builder().arrayInterface(spec).build()) {
                python.set(ns, "obj", obj);
                python.exec("a = np.asarray(obj)", ns);
                try (PyObjectRef r = eval("(a.tolist(), a.flags.writeable, a.strides, obj.__array_interface__['typestr'])")) {
                    assertEquals("([[4, 8], [5, 9], [6, 10], [7, 11]], False, (4, 16), '<i4')", r.str());
                }
                python.exec("del a, obj; gc.collect()", ns);
            }
        }
    }

    @Test
    void roundTripThroughPythonImportsTheSameMemory() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(JAVA_FLOAT, 4);
            data.setAtIndex(JAVA_FLOAT, 3, 8f);
            try (PyObjectRef obj = PythonExport.builder().arrayInterface(TensorSpec.of(data, DType.FLOAT32, 4)).build();
                 InterfaceArray back = ArrayInterfaces.importArrayInterface(obj, ImportOptions.any())) {
                assertEquals(data.address(), back.tensor().devicePointer().address());
                assertEquals(8f, floatAt(back.tensor(), 3));
            }
            python.exec("gc.collect()", ns);
        }
    }

    @Test
    void exportedMaskIsAnObjectExposingTheSameInterface() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(JAVA_FLOAT, 3);
            MemorySegment valid = arena.allocate(3);
            valid.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 1, (byte) 1);
            try (PyObjectRef obj = PythonExport.builder()
                    .interfaceMask(TensorSpec.of(valid, DType.BOOL, 3))
                    .arrayInterface(TensorSpec.of(data, DType.FLOAT32, 3))
                    .build()) {
                python.set(ns, "obj", obj);
                try (PyObjectRef r = eval("np.asarray(obj.__array_interface__['mask']).tolist()")) {
                    assertEquals("[False, True, False]", r.str());
                }
                try (InterfaceArray back = ArrayInterfaces.importArrayInterface(obj, ImportOptions.any())) {
                    assertEquals(DType.BOOL, back.mask().orElseThrow().dtype());
                }
                python.exec("del obj; gc.collect()", ns);
            }
        }
    }

    @Test
    void cudaInterfaceExportsVersion3WithTheProducerStream() {
        try (Arena arena = Arena.ofConfined()) {
            // a host segment labelled as device memory: only the dictionary is read, never the bytes
            MemorySegment data = arena.allocate(JAVA_FLOAT, 8);
            TensorSpec spec = TensorSpec.of(data, DType.FLOAT32, 2, 4).withDevice(Device.cuda(0));
            try (PyObjectRef legacy = PythonExport.builder().cudaArrayInterface(spec, MemorySegment.NULL).build();
                 PyObjectRef ready = PythonExport.builder().cudaArrayInterface(spec).build();
                 PyObjectRef own = PythonExport.builder().cudaArrayInterface(spec, MemorySegment.ofAddress(0x5000)).build()) {
                python.set(ns, "legacy", legacy);
                python.set(ns, "ready", ready);
                python.set(ns, "own", own);
                try (PyObjectRef r = eval("(legacy.__cuda_array_interface__['version'], legacy.__cuda_array_interface__['stream'],"
                        + " ready.__cuda_array_interface__['stream'], own.__cuda_array_interface__['stream'],"
                        + " own.__cuda_array_interface__['shape'], own.__cuda_array_interface__['data'][0] == "
                        + data.address() + ", 'mask' in own.__cuda_array_interface__, hasattr(own, '__array_interface__'))")) {
                    assertEquals("(3, 1, None, 20480, (2, 4), True, False, False)", r.str());
                }
                try (InterfaceArray back = ArrayInterfaces.importCudaArrayInterface(own,
                        ConsumerStream.of(Device.cuda(0), -1L), ImportOptions.expecting(Device.cuda(0)))) {
                    assertEquals(0x5000, back.producerStream().orElseThrow().address());
                    assertArrayEquals(new long[] {2, 4}, back.tensor().shape());
                }
                python.exec("del legacy, ready, own; gc.collect()", ns);
            }
        }
    }

    @Test
    void exportRefusesWhatTheInterfacesCannotName() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(16);
            PythonExport b = PythonExport.builder();
            assertEquals("spec.dtype", assertThrows(UnsupportedFeatureException.class,
                    () -> b.arrayInterface(TensorSpec.of(data, DType.BFLOAT16, 4))).path());
            assertEquals("spec.device", assertThrows(UnsupportedFeatureException.class,
                    () -> b.arrayInterface(TensorSpec.of(data, DType.FLOAT32, 4).withDevice(Device.cuda(0)))).path());
            assertEquals("spec.device", assertThrows(UnsupportedFeatureException.class,
                    () -> b.cudaArrayInterface(TensorSpec.of(data, DType.FLOAT32, 4))).path());
            assertThrows(DeviceBridgeException.class, b::build, "no protocol was chosen");
        }
    }
}
