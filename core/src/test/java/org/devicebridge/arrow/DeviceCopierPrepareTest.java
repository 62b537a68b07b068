package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.testing.HostMemoryCopier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The device layer's hook into a device import ({@link DeviceCopier#prepare}): called once, at every
 * level, after the structure is read and before any copy, with the array's device, sync event and
 * structure; a throw from it rejects the import and releases the struct once. And the re-read of a device
 * array imported below DEFAULT ({@link ImportedArray#view}), through the same copier path.
 */
class DeviceCopierPrepareTest extends ArrowTestSupport {
    private static final int CUDA = 2;

    /** A copier (host memory standing in for device memory) that records its calls in order. */
    static final class RecordingCopier implements DeviceCopier, AutoCloseable {
        final HostMemoryCopier copies = new HostMemoryCopier();
        final List<String> calls = new ArrayList<>();
        DeviceKind deviceType;
        long deviceId;
        long syncEvent;
        long offsetsAddress;
        long offsetsLength;
        long dataLength;
        RuntimeException failure;

        @Override
        public void prepare(DeviceKind type, long id, MemorySegment sync, ArrayNode structure) {
            calls.add("prepare");
            deviceType = type;
            deviceId = id;
            syncEvent = sync.address();
            offsetsAddress = structure.bufferPointer(1).address();
            offsetsLength = structure.bufferLength(1);
            dataLength = structure.bufferLength(2);
            if (failure != null) {
                throw failure;
            }
        }

        @Override
        public HostCopies copyToHost(List<ArrayNode> nodes) {
            calls.add("copy");
            return copies.copyToHost(nodes);
        }

        @Override
        public void close() {
            copies.close();
        }
    }

    private static MemorySegment asCudaArray(Arena arena, Exported e, MemorySegment sync) {
        MemorySegment d = arena.allocate(ArrowDeviceArray.layout());
        MemorySegment.copy(e.arrayStruct(), 0, d, ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        ArrowArray.release(e.arrayStruct(), MemorySegment.NULL);
        ArrowDeviceArray.device_type(d, CUDA);
        ArrowDeviceArray.device_id(d, 3);
        ArrowDeviceArray.sync_event(d, sync);
        return d;
    }

    private static long offsetsOf(FieldVector v) {
        return v.getOffsetBuffer().memoryAddress();
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(ValidationLevel.class)
    void prepareSeesTheDeviceTheSyncEventAndTheStructureOnceBeforeAnyCopy(ValidationLevel level) {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             RecordingCopier copier = new RecordingCopier()) {
            MemorySegment event = arena.allocate(ValueLayout.JAVA_LONG);
            try (ImportedArray device = ArrowC.importDeviceArray(schema.root(), asCudaArray(arena, e, event),
                    level, null, copier)) {
                List<String> expected = switch (level) {
                    case NONE, MINIMAL -> List.of("prepare");
                    case DEFAULT -> List.of("prepare", "copy");
                    case FULL -> List.of("prepare", "copy", "copy");
                };
                assertEquals(expected, copier.calls);
                assertSame(DeviceKind.CUDA, copier.deviceType);
                assertEquals(3, copier.deviceId);
                assertEquals(event.address(), copier.syncEvent, "the producer's sync_event pointer, not what it points to");
                assertEquals(offsetsOf(v), copier.offsetsAddress);
                assertEquals(4L * (TestVectors.N + 1), copier.offsetsLength, "sized by the structure alone");
                assertEquals(-1, copier.dataLength, "the data buffer is sized by contents, which prepare comes before");
                assertEquals(level, device.validationLevel());
            }
        }
    }

    @Test
    void aThrowFromPrepareRejectsTheImportBeforeAnyCopyAndReleasesTheStruct() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             RecordingCopier copier = new RecordingCopier()) {
            copier.failure = new ValidationException(Category.DEVICE, "buffers[1]", "expected device memory but found none");
            MemorySegment d = asCudaArray(arena, e, MemorySegment.NULL);
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowC.importDeviceArray(schema.root(), d, ValidationLevel.FULL, null, copier));
            assertSame(copier.failure, ex);
            assertEquals(List.of("prepare"), copier.calls);
            assertEquals(MemorySegment.NULL, ArrowArray.release(d.asSlice(ArrowDeviceArray.array$offset())),
                    "moved, and released by the import (exactly once: the producer's allocator must balance)");
        }
    }

    @Test
    void aMinimalImportReadAgainAtDefaultKnowsItsDataSizesAndTheImportKeepsOwningTheStruct() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
             Exported onHost = export(v); Exported onDevice = export(v);
             ImportedSchema schema = ArrowC.importSchema(onHost.schemaPtr());
             ImportedArray host = ArrowC.importArray(schema.root(), onHost.arrayPtr(), ValidationLevel.DEFAULT);
             RecordingCopier copier = new RecordingCopier();
             ImportedArray device = ArrowC.importDeviceArray(schema.root(),
                     asCudaArray(arena, onDevice, MemorySegment.NULL), ValidationLevel.MINIMAL, null, copier)) {
            assertEquals(-1, device.root().bufferLength(2));
            ArrayNode sized = device.view(ValidationLevel.DEFAULT, copier);
            assertEquals(List.of("prepare", "prepare", "copy"), copier.calls, "one more prepare, one batch of copies");
            assertEquals(host.root().bufferLength(2), sized.bufferLength(2));
            assertEquals(host.root().bufferLength(1), sized.bufferLength(1));
            assertEquals(device.root().bufferPointer(2).address(), sized.bufferPointer(2).address());
            assertEquals(-1, device.root().bufferLength(2), "the import's own view is unchanged");
            assertTrue(device.isLive());
        }
    }

    @Test
    void corruptOffsetsAreCaughtWhenAMinimalImportIsReadAgainAtDefault() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             RecordingCopier copier = new RecordingCopier();
             ImportedArray device = ArrowC.importDeviceArray(schema.root(),
                     asCudaArray(arena, e, MemorySegment.NULL), ValidationLevel.MINIMAL, null, copier)) {
            MemorySegment offsets = MemorySegment.ofAddress(offsetsOf(v)).reinterpret(4L * (TestVectors.N + 1));
            offsets.setAtIndex(ValueLayout.JAVA_INT, 0, 1000); // above the last offset
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> device.view(ValidationLevel.DEFAULT, copier));
            assertEquals(Category.CONTENT, ex.category(), ex.getMessage());
            assertTrue(ex.path().startsWith("buffers[1]"), ex.getMessage());
            assertTrue(device.isLive(), "a failed re-read leaves the import to its owner");
        }
    }
}
