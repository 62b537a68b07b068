package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float2Vector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.UInt1Vector;
import org.apache.arrow.vector.UInt2Vector;
import org.apache.arrow.vector.UInt4Vector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.java.DLPackArrow;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Arrow vector <-> DLPack 1-D tensor without copying, both directions; the allocator returns to 0. */
class DLPackArrowTest {
    private BufferAllocator allocator;
    private long liveBaseline;
    private int exportsBaseline;

    @BeforeEach
    void setUp() {
        allocator = new RootAllocator();
        NativeTensor.reset();
        liveBaseline = HandleTracker.liveHandles();
        exportsBaseline = Exports.REGISTRY.size();
    }

    @AfterEach
    void tearDown() {
        assertEquals(0, allocator.getAllocatedMemory(), "allocator back to 0");
        allocator.close();
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
    }

    record VectorCase(String name, DType dtype, Function<BufferAllocator, FieldVector> make) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static <V extends FieldVector> VectorCase vc(String name, DType dtype, Function<BufferAllocator, V> f) {
        return new VectorCase(name, dtype, a -> f.apply(a));
    }

    static Stream<VectorCase> vectors() {
        int n = 37;
        return Stream.of(
                vc("int8", DType.INT8, a -> fill(new TinyIntVector("v", a), n, (v, i) -> v.set(i, (byte) (i * 3 - 50)))),
                vc("int16", DType.INT16, a -> fill(new SmallIntVector("v", a), n, (v, i) -> v.set(i, (short) (i * 1000 - 7)))),
                vc("int32", DType.INT32, a -> fill(new IntVector("v", a), n, (v, i) -> v.set(i, i * 100_003 - 9))),
                vc("int64", DType.INT64, a -> fill(new BigIntVector("v", a), n, (v, i) -> v.set(i, i * 10_000_000_019L))),
                vc("uint8", DType.UINT8, a -> fill(new UInt1Vector("v", a), n, (v, i) -> v.set(i, i * 7))),
                vc("uint16", DType.UINT16, a -> fill(new UInt2Vector("v", a), n, (v, i) -> v.set(i, (char) (i * 1777)))),
                vc("uint32", DType.UINT32, a -> fill(new UInt4Vector("v", a), n, (v, i) -> v.set(i, i * -99_991))),
                vc("uint64", DType.UINT64, a -> fill(new UInt8Vector("v", a), n, (v, i) -> v.set(i, i * -1_000_000_007L))),
                vc("float16", DType.FLOAT16, a -> fill(new Float2Vector("v", a), n, (v, i) -> v.setWithPossibleTruncate(i, i * 0.5f))),
                vc("float32", DType.FLOAT32, a -> fill(new Float4Vector("v", a), n, (v, i) -> v.set(i, i * 1.25f))),
                vc("float64", DType.FLOAT64, a -> fill(new Float8Vector("v", a), n, (v, i) -> v.set(i, i / 3.0))));
    }

    interface Setter<V> {
        void set(V v, int i);
    }

    private static <V extends FieldVector> V fill(V v, int n, Setter<V> s) {
        v.allocateNew();
        for (int i = 0; i < n; i++) {
            s.set(v, i);
        }
        v.setValueCount(n);
        return v;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void arrowToDLPackToArrowSharesTheBytesAndFreesEverything(VectorCase c) {
        FieldVector original = c.make().apply(allocator);
        long dataAddress = original.getDataBuffer().memoryAddress();
        ExportedTensor exported = DLPackArrow.exportVector(original);
        ImportedTensor tensor = DLPack.importTensor(exported, ImportOptions.expecting(Device.CPU));
        assertEquals(c.dtype(), tensor.dtype());
        assertEquals(1, tensor.ndim());
        assertEquals(original.getValueCount(), tensor.shape()[0]);
        assertEquals(dataAddress, tensor.segment().address(), "export is zero-copy");
        List<Object> expected = Stream.iterate(0, i -> i + 1).limit(original.getValueCount())
                .map(i -> original.getObject(i)).toList();
        original.close(); // the export retained the data buffer: the tensor stays valid
        FieldVector back = DLPackArrow.importVector(tensor, allocator, "back");
        assertEquals(NativeHandle.State.CONSUMED, tensor.state());
        assertEquals(dataAddress, back.getDataBuffer().memoryAddress(), "import is zero-copy");
        assertEquals(expected.size(), back.getValueCount());
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(expected.get(i), back.getObject(i), "value " + i);
        }
        assertEquals(0, back.getNullCount());
        back.close(); // releases the wrapped buffer -> deleter -> the retained Arrow buffer
    }

    @Test
    void aTableExportsOneTensorPerColumn() {
        try (IntVector a = fill(new IntVector("a", allocator), 5, (v, i) -> v.set(i, i));
             Float8Vector b = fill(new Float8Vector("b", allocator), 5, (v, i) -> v.set(i, i * 2.0));
             VectorSchemaRoot root = VectorSchemaRoot.of(a, b)) {
            List<ExportedTensor> tensors = DLPackArrow.exportTable(root);
            assertEquals(2, tensors.size());
            List<ImportedTensor> imported = tensors.stream()
                    .map(t -> DLPack.importTensor(t, ImportOptions.any())).toList();
            assertEquals(DType.INT32, imported.get(0).dtype());
            assertEquals(DType.FLOAT64, imported.get(1).dtype());
            assertEquals(a.getDataBuffer().memoryAddress(), imported.get(0).segment().address());
            assertEquals(b.getDataBuffer().memoryAddress(), imported.get(1).segment().address());
            assertEquals(4.0, imported.get(1).segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 2));
            imported.forEach(ImportedTensor::close);
        }
    }

    @Test
    void aTableWithAnUnsupportedColumnExportsNothing() {
        try (IntVector a = fill(new IntVector("a", allocator), 5, (v, i) -> v.set(i, i));
             VarCharVector s = new VarCharVector("s", allocator)) {
            s.allocateNew();
            s.setValueCount(0);
            try (VectorSchemaRoot root = VectorSchemaRoot.of(a, s)) {
                assertThrows(UnsupportedFeatureException.class, () -> DLPackArrow.exportTable(root));
            }
        }
    }

    @Test
    void nullsAndBitPackedBooleansAreRefusedByName() {
        try (IntVector withNull = new IntVector("n", allocator); BitVector bits = new BitVector("b", allocator)) {
            withNull.allocateNew(3);
            withNull.set(0, 1);
            withNull.setNull(1);
            withNull.set(2, 3);
            withNull.setValueCount(3);
            UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class,
                    () -> DLPackArrow.exportVector(withNull));
            assertTrue(e.getMessage().contains("null"), e.getMessage());
            bits.allocateNew(2);
            bits.setValueCount(2);
            e = assertThrows(UnsupportedFeatureException.class, () -> DLPackArrow.exportVector(bits));
            assertTrue(e.getMessage().contains("bit-packed"), e.getMessage());
        }
    }

    @Test
    void aNativeTensorBecomesAVectorAndItsDeleterRunsWhenTheVectorCloses() {
        try (Arena arena = Arena.ofConfined()) {
            NativeTensor spec = NativeTensor.cpu();
            spec.code = DType.KDL_INT;
            spec.bits = 64;
            spec.shape = new long[] {6};
            spec.strides = new long[] {1};
            spec.byteOffset = 16;
            MemorySegment p = spec.build(arena);
            MemorySegment data = org.devicebridge.generated.dlpack.DLTensor.data(
                    org.devicebridge.generated.dlpack.DLManagedTensorVersioned.dl_tensor(p)).reinterpret(4096);
            for (int i = 0; i < 8; i++) {
                data.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, i, i * 11L);
            }
            ImportedTensor t = DLPack.importVersioned(p, ImportOptions.any());
            FieldVector v = DLPackArrow.importVector(t, allocator, "x");
            assertEquals(6, v.getValueCount());
            assertEquals(22L, v.getObject(0), "byte_offset honoured");
            assertEquals(0, NativeTensor.DELETES.get());
            v.close();
            assertEquals(1, NativeTensor.DELETES.get());
        }
    }

    @Test
    void tensorsThatDoNotFitAVectorAreRefusedAndReleased() {
        try (Arena arena = Arena.ofConfined()) {
            NativeTensor twoD = NativeTensor.cpu();
            NativeTensor strided = NativeTensor.cpu();
            strided.shape = new long[] {4};
            strided.strides = new long[] {2};
            NativeTensor readOnly = NativeTensor.cpu();
            readOnly.shape = new long[] {4};
            readOnly.strides = new long[] {1};
            readOnly.flags = DLPack.FLAG_READ_ONLY;
            NativeTensor complex = NativeTensor.cpu();
            complex.code = DType.KDL_COMPLEX;
            complex.bits = 64;
            complex.shape = new long[] {4};
            complex.strides = new long[] {1};
            for (NativeTensor spec : List.of(twoD, strided, readOnly, complex)) {
                try (ImportedTensor t = DLPack.importVersioned(spec.build(arena), ImportOptions.any())) {
                    assertThrows(UnsupportedFeatureException.class, () -> DLPackArrow.importVector(t, allocator, "x"));
                    assertFalse(t.isLive(), "released on the throw, as every import releases its input");
                }
            }
            assertEquals(4, NativeTensor.DELETES.get());
        }
    }

    @Test
    void anEmptyTensorBecomesAnEmptyVector() {
        try (Arena arena = Arena.ofConfined()) {
            NativeTensor spec = NativeTensor.cpu();
            spec.shape = new long[] {0};
            spec.strides = new long[] {1};
            spec.data = 0;
            try (FieldVector v = DLPackArrow.importVector(DLPack.importVersioned(spec.build(arena), ImportOptions.any()),
                    allocator, "e")) {
                assertEquals(0, v.getValueCount());
            }
            assertEquals(1, NativeTensor.DELETES.get());
        }
    }
}
