package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.testing.HostMemoryCopier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Device arrays validated at DEFAULT and FULL through host copies (the path the CUDA import takes), with
 * host memory standing in for device memory and a copier that really copies: the same checks as host
 * arrays, at most one batch of copies for DEFAULT and two for FULL, and only offsets-like buffers at DEFAULT.
 */
class DeviceContentsTest extends ArrowTestSupport {
    private static final int CUDA = 2;


    private static MemorySegment asCudaArray(Arena arena, Exported e) {
        MemorySegment d = arena.allocate(ArrowDeviceArray.layout());
        MemorySegment.copy(e.arrayStruct(), 0, d, ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        ArrowArray.release(e.arrayStruct(), MemorySegment.NULL);
        ArrowDeviceArray.device_type(d, CUDA);
        ArrowDeviceArray.device_id(d, 0);
        return d;
    }

    static Stream<Arguments> families() {
        return TestVectors.all().entrySet().stream().map(en -> Arguments.of(en.getKey(), en.getValue()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("families")
    void everyFamilyValidatesAtFullFromHostCopiesWithTheSameSizesAsOnTheHost(String name,
                                                                            Function<BufferAllocator, FieldVector> make) {
        try (Arena arena = Arena.ofConfined(); FieldVector v = make.apply(allocator); Exported onHost = export(v);
             Exported onDevice = export(v); ImportedSchema schema = ArrowC.importSchema(onHost.schemaPtr());
             HostMemoryCopier copier = new HostMemoryCopier()) {
            try (ImportedArray host = ArrowC.importArray(schema.root(), onHost.arrayPtr(), ValidationLevel.FULL);
                 ImportedArray device = ArrowC.importDeviceArray(schema.root(), asCudaArray(arena, onDevice),
                         ValidationLevel.FULL, null, copier)) {
                assertFalse(device.root().isHostAccessible());
                assertSameSizes(host.root(), device.root());
                assertTrue(copier.batches.size() <= 2, "at most two batches of copies, found " + copier.batches.size());
            }
        }
    }

    private static void assertSameSizes(ArrayNode host, ArrayNode device) {
        assertEquals(host.bufferCount(), device.bufferCount(), host.path());
        for (int i = 0; i < host.bufferCount(); i++) {
            assertEquals(host.bufferLength(i), device.bufferLength(i), host.path() + ".buffers[" + i + "]");
        }
        for (int c = 0; c < host.children().size(); c++) {
            assertSameSizes(host.children().get(c), device.children().get(c));
        }
        if (host.dictionary() != null) {
            assertSameSizes(host.dictionary(), device.dictionary());
        }
    }

    @Test
    void defaultCopiesOnlyTheOffsetsOfAStringColumnOnce() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             HostMemoryCopier copier = new HostMemoryCopier();
             ImportedArray device = ArrowC.importDeviceArray(schema.root(), asCudaArray(arena, e),
                     ValidationLevel.DEFAULT, null, copier)) {
            assertEquals(1, copier.batches.size());
            assertEquals(1, copier.batches.get(0).length, "the offsets buffer alone");
            assertEquals(4L * (TestVectors.N + 1), copier.bytes);
            assertTrue(device.root().bufferLength(2) >= 0, "the data buffer is sized from the copied last offset");
        }
    }

    @Test
    void theCopierIsAskedForBuffersAsNodesOfADeviceViewInWhichTheOthersAreNull() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("list_int32").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             HostMemoryCopier copier = new HostMemoryCopier();
             ImportedArray device = ArrowC.importDeviceArray(schema.root(), asCudaArray(arena, e),
                     ValidationLevel.FULL, null, copier)) {
            assertEquals(2, copier.asked.size());
            List<ArrayNode> first = copier.asked.get(0);
            assertEquals(List.of(""), first.stream().map(ArrayNode::path).toList(), "the child has nothing to copy");
            ArrayNode offsets = first.get(0);
            assertFalse(offsets.isHostAccessible());
            assertTrue(offsets.isBufferNull(0), "the validity bitmap is not asked for at DEFAULT");
            assertEquals(device.root().bufferPointer(1), offsets.bufferPointer(1));
            assertEquals(4L * (TestVectors.N + 1), offsets.bufferLength(1));
            assertEquals(0, offsets.bufferPointer(1).byteSize(), "a pointer, not a readable segment");
            assertThrows(UnsupportedFeatureException.class, () -> offsets.buffer(1));

            List<ArrayNode> rest = copier.asked.get(1);
            assertEquals(List.of("", "children[0]"), rest.stream().map(ArrayNode::path).toList());
            ArrayNode values = rest.get(1);
            assertEquals(device.root().children().get(0).bufferPointer(1), values.bufferPointer(1));
            assertEquals(device.root().children().get(0).bufferLength(1), values.bufferLength(1));
        }
    }

    @Test
    void nonMonotonicOffsetsOnTheDeviceAreRejectedAtFullAcceptedAtDefaultAndReleasedOnce() {
        for (ValidationLevel level : new ValidationLevel[] {ValidationLevel.DEFAULT, ValidationLevel.FULL}) {
            try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
                 Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                 HostMemoryCopier copier = new HostMemoryCopier()) {
                MemorySegment offsets = MemorySegment.ofAddress(v.getOffsetBuffer().memoryAddress())
                        .reinterpret(4L * (TestVectors.N + 1));
                int last = offsets.getAtIndex(ValueLayout.JAVA_INT, TestVectors.N);
                offsets.setAtIndex(ValueLayout.JAVA_INT, 2, last + 1); // beyond its successor, within the data
                offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 0);
                MemorySegment d = asCudaArray(arena, e);
                if (level == ValidationLevel.FULL) {
                    ValidationException ex = assertThrows(ValidationException.class,
                            () -> ArrowC.importDeviceArray(schema.root(), d, level, null, copier));
                    assertEquals(Category.CONTENT, ex.category());
                    assertEquals("buffers[1]", ex.path());
                } else {
                    ArrowC.importDeviceArray(schema.root(), d, level, null, copier).close();
                }
                assertEquals(MemorySegment.NULL, ArrowArray.release(d.asSlice(ArrowDeviceArray.array$offset())),
                        "moved, and released by the import (exactly once: the producer's allocator must balance)");
            }
        }
    }

    @Test
    void aLastOffsetBeyondTheChildIsRejectedAtDefault() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("list_int32").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             HostMemoryCopier copier = new HostMemoryCopier()) {
            MemorySegment offsets = MemorySegment.ofAddress(v.getOffsetBuffer().memoryAddress())
                    .reinterpret(4L * (TestVectors.N + 1));
            offsets.setAtIndex(ValueLayout.JAVA_INT, TestVectors.N, 1_000_000);
            MemorySegment d = asCudaArray(arena, e);
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowC.importDeviceArray(schema.root(), d, ValidationLevel.DEFAULT, null, copier));
            assertEquals(Category.LENGTH, ex.category());
            assertEquals(MemorySegment.NULL, ArrowArray.release(d.asSlice(ArrowDeviceArray.array$offset())));
        }
    }

    @Test
    void aCpuArrayIsRefusedByTheDeviceImport() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("int32").apply(allocator);
             Exported e = export(v); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             HostMemoryCopier copier = new HostMemoryCopier()) {
            MemorySegment d = asCudaArray(arena, e);
            ArrowDeviceArray.device_type(d, DeviceKind.CPU.code());
            ArrowDeviceArray.device_id(d, -1);
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowC.importDeviceArray(schema.root(), d, ValidationLevel.FULL, null, copier));
            assertEquals(Category.DEVICE, ex.category());
            assertTrue(copier.batches.isEmpty());
        }
    }
}
