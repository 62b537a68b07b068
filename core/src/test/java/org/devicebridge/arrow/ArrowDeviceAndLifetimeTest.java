package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.Consumer;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.util.TransferPair;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.junit.jupiter.api.Test;

/** Device arrays (CPU fully, other devices by address), record batches, and release-exactly-once lifetimes. */
class ArrowDeviceAndLifetimeTest extends ArrowTestSupport {
    private static final int CUDA = 2;

    /** Moves an arrow-c-data export into a hand-made ArrowDeviceArray, as a device-aware producer would. */
    private static MemorySegment deviceArray(Arena arena, Exported e, int deviceType, long deviceId,
                                             Consumer<MemorySegment> edit) {
        MemorySegment d = arena.allocate(ArrowDeviceArray.layout());
        MemorySegment.copy(e.arrayStruct(), 0, d, ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        ArrowArray.release(e.arrayStruct(), MemorySegment.NULL);
        ArrowDeviceArray.device_type(d, deviceType);
        ArrowDeviceArray.device_id(d, deviceId);
        edit.accept(d);
        return d;
    }

    @Test
    void aCpuDeviceArrayImportsLikeAnArrayAndFeedsArrowJava() {
        try (Arena arena = Arena.ofConfined(); FieldVector original = TestVectors.all().get("utf8").apply(allocator);
             Exported e = export(original); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
            MemorySegment d = deviceArray(arena, e, DeviceKind.CPU.code(), -1, x -> { });
            ImportedArray array = ArrowC.importDeviceArray(schema.root(), d, ValidationLevel.FULL);
            assertEquals(DeviceKind.CPU, array.deviceType());
            assertEquals(MemorySegment.NULL, array.syncEvent());
            assertEquals(MemorySegment.NULL, ArrowArray.release(d.asSlice(ArrowDeviceArray.array$offset())), "moved");
            try (FieldVector imported = ArrowJava.importFieldVector(allocator, array, null)) {
                for (int i = 0; i < TestVectors.N; i++) {
                    assertEquals(String.valueOf(original.getObject(i)), String.valueOf(imported.getObject(i)));
                }
            }
        }
    }

    private ValidationException refusedDevice(int deviceType, long deviceId, ValidationLevel level,
                                              Consumer<MemorySegment> edit) {
        try (Arena arena = Arena.ofConfined(); FieldVector original = TestVectors.all().get("int32").apply(allocator);
             Exported e = export(original); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
            MemorySegment d = deviceArray(arena, e, deviceType, deviceId, edit);
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowC.importDeviceArray(schema.root(), d, level));
            assertEquals(MemorySegment.NULL, ArrowArray.release(d.asSlice(ArrowDeviceArray.array$offset())),
                    "the refused array was taken and released");
            return ex;
        }
    }

    @Test
    void aCpuArrayWithASyncEventIsADeviceError() {
        ValidationException ex = refusedDevice(DeviceKind.CPU.code(), -1, ValidationLevel.MINIMAL,
                d -> ArrowDeviceArray.sync_event(d, MemorySegment.ofAddress(0x1000)));
        assertEquals(Category.DEVICE, ex.category());
        assertEquals("sync_event: expected NULL for a CPU array but found a sync event", ex.getMessage());
    }

    @Test
    void anUnknownDeviceTypeIsADeviceError() {
        ValidationException ex = refusedDevice(5, 0, ValidationLevel.NONE, d -> { });
        assertEquals(Category.DEVICE, ex.category());
        assertEquals("device_type", ex.path());
    }

    @Test
    void nonZeroReservedFieldsAreADeviceError() {
        ValidationException ex = refusedDevice(DeviceKind.CPU.code(), -1, ValidationLevel.MINIMAL,
                d -> d.set(ValueLayout.JAVA_LONG, ArrowDeviceArray.reserved$offset() + 16, 7));
        assertEquals("reserved[2]: expected 0 but found 7", ex.getMessage());
    }

    @Test
    void cudaMemoryIsRefusedAtDefaultBecauseItsContentsCannotBeRead() {
        ValidationException ex = refusedDevice(CUDA, 0, ValidationLevel.DEFAULT, d -> { });
        assertEquals(Category.DEVICE, ex.category());
    }

    @Test
    void cudaMemoryAtMinimalExposesAddressesAndLengthsButNoSegments() {
        try (Arena arena = Arena.ofConfined(); FieldVector original = TestVectors.all().get("int32").apply(allocator);
             Exported e = export(original); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
            // Host memory labelled as CUDA: the importer must not dereference it, only describe it.
            MemorySegment event = arena.allocate(8);
            MemorySegment d = deviceArray(arena, e, CUDA, 3, x -> ArrowDeviceArray.sync_event(x, event));
            try (ImportedArray array = ArrowC.importDeviceArray(schema.root(), d, ValidationLevel.MINIMAL)) {
                assertEquals(DeviceKind.CUDA, array.deviceType());
                assertEquals(3, array.deviceId());
                assertEquals(event.address(), array.syncEvent().address());
                ArrayNode root = array.root();
                assertFalse(root.isHostAccessible());
                assertEquals(4L * TestVectors.N, root.bufferLength(1));
                assertEquals(((IntVector) original).getDataBuffer().memoryAddress(), root.bufferPointer(1).address());
                assertEquals(0, root.bufferPointer(1).byteSize(), "a device pointer is not dereferenceable");
                assertThrows(UnsupportedFeatureException.class, () -> root.buffer(1));
                assertThrows(UnsupportedFeatureException.class,
                        () -> ArrowJava.importFieldVector(allocator, array, null));
                assertFalse(array.isLive(), "refused by Arrow Java and released: the input is released on every throw");
            }
        }
    }

    @Test
    void aSlicedRecordBatchImportsIntoAVectorSchemaRoot() {
        try (StructVector batch = (StructVector) TestVectors.all().get("struct").apply(allocator)) {
            // A record batch has no top-level nulls: make every row valid.
            for (int i = 0; i < TestVectors.N; i++) {
                batch.setIndexDefined(i);
            }
            try (Exported e = export(batch)) {
                ArrowArray.offset(e.arrayStruct(), 4);
                ArrowArray.length(e.arrayStruct(), 5);
                ArrowArray.null_count(e.arrayStruct(), 0);
                try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                     VectorSchemaRoot root = ArrowJava.importVectorSchemaRoot(allocator,
                             ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL), null)) {
                    assertEquals(5, root.getRowCount());
                    IntVector x = (IntVector) root.getVector("x");
                    VarCharVector y = (VarCharVector) root.getVector("y");
                    IntVector wantX = (IntVector) batch.getChild("x");
                    VarCharVector wantY = (VarCharVector) batch.getChild("y");
                    for (int i = 0; i < 5; i++) {
                        assertEquals(wantX.getObject(4 + i), x.getObject(i));
                        assertEquals(String.valueOf(wantY.getObject(4 + i)), String.valueOf(y.getObject(i)));
                    }
                    assertEquals(2, y.getNullCount(), "rows 4 and 5 of y are null");
                }
            }
        }
    }

    @Test
    void theStructIsReleasedOnceWhenTheLastArrowBufferIs() {
        HandMade.ROOT_RELEASES.set(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment values = arena.allocate(ValueLayout.JAVA_INT, 6);
            for (int i = 0; i < 6; i++) {
                values.setAtIndex(ValueLayout.JAVA_INT, i, i * i);
            }
            MemorySegment array = HandMade.rootArray(HandMade.array(arena, 4,
                    new MemorySegment[] {MemorySegment.NULL, values}));
            ArrowArray.offset(array, 2);
            SchemaNode int32 = field("x", "i", 0);
            FieldVector imported = ArrowJava.importFieldVector(allocator,
                    ArrowC.importArray(int32, array, ValidationLevel.FULL), null);
            TransferPair pair = imported.getTransferPair(allocator);
            pair.splitAndTransfer(1, 2);
            FieldVector part = (FieldVector) pair.getTo();
            assertEquals(java.util.List.of(9, 16, 25), java.util.List.of(((IntVector) imported).get(1),
                    ((IntVector) imported).get(2), ((IntVector) imported).get(3)));
            imported.close();
            assertEquals(0, HandMade.ROOT_RELEASES.get(), "the split-off part still holds the foreign memory");
            assertEquals(16, ((IntVector) part).get(1));
            part.close();
            assertEquals(1, HandMade.ROOT_RELEASES.get(), "released exactly once, by the last buffer");
        }
    }

    @Test
    void unalignedBuffersAreReadCorrectlyByBothPaths() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment raw = arena.allocate(8 * 5 + 1, 8);
            MemorySegment values = raw.asSlice(1, 8 * 5); // deliberately misaligned by one byte
            for (int i = 0; i < 5; i++) {
                values.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, 1L << (10 * i));
            }
            SchemaNode int64 = field("x", "l", 0);
            MemorySegment a1 = HandMade.rootArray(HandMade.array(arena, 5, new MemorySegment[] {MemorySegment.NULL, values}));
            try (ImportedArray view = ArrowC.importArray(int64, a1, ValidationLevel.FULL)) {
                assertEquals(1L << 40, view.root().buffer(1).getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 4));
            }
            MemorySegment a2 = HandMade.rootArray(HandMade.array(arena, 5, new MemorySegment[] {MemorySegment.NULL, values}));
            try (FieldVector v = ArrowJava.importFieldVector(allocator,
                    ArrowC.importArray(int64, a2, ValidationLevel.FULL), null)) {
                assertEquals(1L << 30, v.getObject(3));
            }
        }
    }
}
