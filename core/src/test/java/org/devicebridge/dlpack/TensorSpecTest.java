package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The export spec: defaults, immutability, order-independent settings and the flags it carries. */
class TensorSpecTest {
    private Arena arena;
    private int exportsBaseline;

    @BeforeEach
    void setUp() {
        arena = Arena.ofConfined();
        exportsBaseline = Exports.REGISTRY.size();
    }

    @AfterEach
    void tearDown() {
        arena.close();
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
    }

    @Test
    void defaultsAreCompactRowMajorOnTheCpuWithoutFlagsOrStream() {
        MemorySegment data = arena.allocate(24);
        TensorSpec spec = TensorSpec.of(data, DType.FLOAT32, 2, 3);
        assertArrayEquals(new long[] {2, 3}, spec.shape());
        assertArrayEquals(new long[] {3, 1}, spec.strides());
        assertEquals(0, spec.byteOffset());
        assertEquals(Device.CPU, spec.device());
        assertEquals(Set.of(), spec.flags());
        assertEquals(Optional.empty(), spec.consumerStream());
        assertEquals(data, spec.data());
        assertEquals(DType.FLOAT32, spec.dtype());
        TensorSpec scalar = TensorSpec.of(data, DType.INT64);
        assertArrayEquals(new long[0], scalar.shape());
    }

    @Test
    void withersReturnNewSpecsAndLeaveTheOriginalAndTheCallersArraysAlone() {
        MemorySegment data = arena.allocate(64);
        long[] shape = {2, 3};
        long[] strides = {1, 2};
        TensorSpec base = TensorSpec.of(data, DType.INT8, shape);
        TensorSpec strided = base.withStrides(strides);
        shape[0] = 99;
        strides[0] = 99;
        assertNotSame(base, strided);
        assertArrayEquals(new long[] {3, 1}, base.strides());
        assertArrayEquals(new long[] {2, 3}, strided.shape());
        assertArrayEquals(new long[] {1, 2}, strided.strides());
        strided.shape()[0] = 7;
        assertArrayEquals(new long[] {2, 3}, strided.shape(), "accessors hand out copies");
        TensorSpec flagged = strided.withByteOffset(8).withDevice(Device.cudaHost(0)).withFlags(TensorFlag.IS_COPIED);
        assertArrayEquals(new long[] {1, 2}, flagged.strides(), "a later wither keeps the strides");
        assertEquals(8, flagged.byteOffset());
        assertEquals(Device.cudaHost(0), flagged.device());
        assertEquals(Set.of(TensorFlag.IS_COPIED), flagged.flags());
        assertEquals(Set.of(), flagged.withFlags().flags());
        assertThrows(UnsupportedOperationException.class, () -> flagged.flags().add(TensorFlag.READ_ONLY));
        assertTrue(flagged.toString().contains("int8 [2, 3] strides [1, 2] byte_offset 8"), flagged.toString());
    }

    @Test
    void theRangeIsCheckedAgainstTheDataAtExportSoSettingsMayComeInAnyOrder() {
        MemorySegment four = arena.allocate(4);
        // compact, 1000 floats do not fit in 4 bytes; broadcast (stride 0) they do
        TensorSpec broadcast = TensorSpec.of(four, DType.FLOAT32, 1000).withStrides(0);
        try (ImportedTensor t = DLPack.importTensor(DLPack.exportVersioned(broadcast), ImportOptions.any())) {
            assertEquals(1000, t.elementCount());
            assertEquals(4, t.byteExtent());
        }
        // a negative stride before the offset that makes it fit
        MemorySegment sixteen = arena.allocate(16);
        TensorSpec reversed = TensorSpec.of(sixteen, DType.INT32, 4).withStrides(-1).withByteOffset(12);
        try (ImportedTensor t = DLPack.importTensor(DLPack.exportVersioned(reversed), ImportOptions.any())) {
            assertEquals(12, t.originOffset());
        }
        ValidationException e = assertThrows(ValidationException.class,
                () -> DLPack.exportVersioned(TensorSpec.of(four, DType.FLOAT32, 1000)));
        assertEquals(Category.LENGTH, e.category());
    }

    @Test
    void theSpecsFlagsReachTheConsumerAndSubByteTypesAreMarkedPadded() {
        MemorySegment data = arena.allocate(16);
        TensorSpec spec = TensorSpec.of(data, DType.UINT8, 16).withFlags(TensorFlag.READ_ONLY, TensorFlag.IS_COPIED);
        try (ExportedTensor e = DLPack.exportVersioned(spec)) {
            MemorySegment s = e.address().reinterpret(DLManagedTensorVersioned.sizeof());
            assertEquals(DLPack.FLAG_READ_ONLY | DLPack.FLAG_IS_COPIED, DLManagedTensorVersioned.flags(s));
        }
        try (ImportedTensor t = DLPack.importTensor(DLPack.exportVersioned(spec), ImportOptions.any())) {
            assertTrue(t.isReadOnly());
            assertTrue(t.isCopied());
            assertFalse(t.isSubBytePadded());
        }
        try (ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT4_E2M1FN, 16))) {
            MemorySegment s = e.address().reinterpret(DLManagedTensorVersioned.sizeof());
            assertEquals(DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED, DLManagedTensorVersioned.flags(s));
        }
        assertEquals(Set.of(TensorFlag.READ_ONLY), TensorSpec.of(data.asReadOnly(), DType.UINT8, 16).flags(),
                "a read-only segment is exported READ_ONLY");
    }

    @Test
    void oneSpecExportsManyIndependentTensorsAndEachClosesItsOwnOwner() {
        MemorySegment data = arena.allocate(ValueLayout.JAVA_INT, 4);
        TensorSpec spec = TensorSpec.of(data, DType.INT32, 4);
        AtomicInteger closes = new AtomicInteger();
        List<ExportedTensor> exports = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            exports.add(DLPack.exportVersioned(spec, closes::incrementAndGet));
        }
        assertEquals(3, exports.stream().map(e -> e.address().address()).distinct().count());
        exports.forEach(ExportedTensor::close);
        assertEquals(3, closes.get());
    }

    @Test
    void theConsumerStreamMustBelongToTheSpecsDeviceWhicheverIsSetFirst() {
        MemorySegment data = arena.allocate(64);
        List<ConsumerStream> seen = new ArrayList<>();
        ConsumerStream onGpu0 = ConsumerStream.of(Device.cuda(0), 2L);
        TensorSpec streamFirst = TensorSpec.of(data, DType.UINT8, 64).withConsumerStream(onGpu0, seen::add)
                .withDevice(Device.cuda(0));
        try (ExportedTensor e = DLPack.exportVersioned(streamFirst)) {
            assertEquals(List.of(onGpu0), seen);
        }
        assertEquals(Optional.of(onGpu0), streamFirst.consumerStream());
        ValidationException e = assertThrows(ValidationException.class,
                () -> DLPack.exportVersioned(streamFirst.withDevice(Device.cuda(1))));
        assertEquals(Category.DEVICE, e.category());
        assertEquals("stream", e.path());
        assertEquals(1, seen.size(), "no synchronisation for a refused export");
    }

    @Test
    void theByteRangeIsWhatTheElementsSpanNegativeStridesStartBelowAndSubByteElementsPackWhenAsked() {
        MemorySegment data = arena.allocate(64);
        TensorSpec compact = TensorSpec.of(data, DType.FLOAT32, 2, 3);
        assertEquals(24, compact.byteExtent());
        assertEquals(0, compact.byteStart());
        assertEquals(24, compact.packedByteExtent(), "packing changes nothing above a byte");
        TensorSpec reversed = TensorSpec.of(data, DType.INT16, 4).withStrides(-1).withByteOffset(6);
        assertEquals(8, reversed.byteExtent());
        assertEquals(-6, reversed.byteStart(), "element [0] is the last of the range");
        TensorSpec fp4 = TensorSpec.of(data, DType.FLOAT4_E2M1FN, 3, 5);
        assertEquals(15, fp4.byteExtent(), "exported padded: a byte per element");
        assertEquals(8, fp4.packedByteExtent(), "packed: 60 bits in 8 bytes");
        assertEquals(Category.SCHEMA, assertThrows(ValidationException.class,
                () -> fp4.withStrides(1, 3).packedByteExtent()).category(), "packing needs compact row-major");
        assertEquals(TensorSpec.MAX_NDIM, 64);
    }
}
