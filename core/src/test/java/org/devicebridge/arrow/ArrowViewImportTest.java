package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.devicebridge.HandleClosedException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The low-level view: validated, exactly sized, zero-copy segments that honour the producer's offset. */
class ArrowViewImportTest extends ArrowTestSupport {

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        TestVectors.all().forEach((name, f) -> {
            out.add(Arguments.of(name, f, 0, TestVectors.N));
            out.add(Arguments.of(name, f, 3, 4));
        });
        return out.stream();
    }

    @ParameterizedTest(name = "{0} offset {2} length {3}")
    @MethodSource("cases")
    void everyTypeImportsWithBuffersSizedIncludingTheOffset(String name, Function<BufferAllocator, FieldVector> make,
                                                            int offset, int length) {
        try (FieldVector original = make.apply(allocator); Exported e = export(original)) {
            ArrowArray.offset(e.arrayStruct(), offset);
            ArrowArray.length(e.arrayStruct(), length);
            ArrowArray.null_count(e.arrayStruct(), -1);
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                 ImportedArray array = ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL)) {
                ArrayNode root = array.root();
                assertEquals(length, root.length());
                assertEquals(offset, root.offset());
                assertEquals(-1, root.nullCount());
                long end = offset + length;
                ArrowDataType type = root.type();
                if (type.layout() != ArrowDataType.Layout.NULL && type.layout() != ArrowDataType.Layout.SPARSE_UNION
                        && type.layout() != ArrowDataType.Layout.DENSE_UNION
                        && type.layout() != ArrowDataType.Layout.RUN_END_ENCODED && !root.isBufferNull(0)) {
                    assertEquals((end + 7) / 8, root.buffer(0).byteSize(), "validity bytes");
                }
                if (original instanceof BaseFixedWidthVector fixed && type.id() != ArrowDataType.TypeId.BOOL) {
                    MemorySegment data = root.buffer(1);
                    assertEquals(end * type.elementByteWidth(), data.byteSize(), "data bytes");
                    assertEquals(fixed.getDataBuffer().memoryAddress(), data.address(), "zero-copy");
                    MemorySegment want = MemorySegment.ofAddress(fixed.getDataBuffer().memoryAddress())
                            .reinterpret(end * type.elementByteWidth());
                    assertEquals(-1, want.mismatch(data));
                }
                readAll(root);
            }
        }
    }

    /** Touches the last byte of every sized host buffer in the tree: each segment is within its bounds. */
    private static void readAll(ArrayNode n) {
        for (int i = 0; i < n.bufferCount(); i++) {
            if (!n.isBufferNull(i) && n.bufferLength(i) > 0) {
                MemorySegment s = n.buffer(i);
                assertEquals(n.bufferLength(i), s.byteSize());
                s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1);
                assertTrue(s.isReadOnly());
            }
        }
        n.children().forEach(ArrowViewImportTest::readAll);
        if (n.dictionary() != null) {
            readAll(n.dictionary());
        }
    }

    @Test
    void int32ValuesAreReadAtTheProducersOffset() {
        try (FieldVector original = TestVectors.all().get("int32").apply(allocator); Exported e = export(original)) {
            ArrowArray.offset(e.arrayStruct(), 3);
            ArrowArray.length(e.arrayStruct(), 5);
            ArrowArray.null_count(e.arrayStruct(), -1);
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                 ImportedArray array = ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.DEFAULT)) {
                ArrayNode root = array.root();
                MemorySegment validity = root.buffer(0);
                MemorySegment data = root.buffer(1);
                for (int j = 0; j < 5; j++) {
                    long i = root.offset() + j;
                    boolean valid = (validity.get(ValueLayout.JAVA_BYTE, i / 8) & (1 << (i % 8))) != 0;
                    assertEquals(!original.isNull(3 + j), valid);
                    if (valid) {
                        assertEquals(((IntVector) original).get(3 + j), data.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i));
                    }
                }
            }
        }
    }

    @Test
    void utf8DataLengthIsKnownFromDefault() {
        try (FieldVector original = TestVectors.all().get("utf8").apply(allocator); Exported e = export(original)) {
            VarCharVector v = (VarCharVector) original;
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                 ImportedArray array = ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.DEFAULT)) {
                assertEquals(v.getOffsetBuffer().getInt(4L * TestVectors.N), array.root().bufferLength(2));
                assertEquals("v8-xxxxxxxxxxxxxxxx", new String(array.root().buffer(2).asSlice(
                        v.getOffsetBuffer().getInt(32), v.getValueLength(8)).toArray(ValueLayout.JAVA_BYTE),
                        java.nio.charset.StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void utf8DataLengthIsUnknownBelowDefaultAndItsSegmentIsRefused() {
        try (FieldVector original = TestVectors.all().get("utf8").apply(allocator); Exported e = export(original)) {
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                 ImportedArray minimal = ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.MINIMAL)) {
                assertEquals(-1, minimal.root().bufferLength(2));
                UnsupportedFeatureException ex = assertThrows(UnsupportedFeatureException.class, () -> minimal.root().buffer(2));
                assertTrue(ex.getMessage().startsWith("buffers[2]: expected a known buffer length"), ex.getMessage());
            }
        }
    }

    @Test
    void segmentsAndNodesAreUnusableAfterClose() {
        try (FieldVector original = TestVectors.all().get("int64").apply(allocator); Exported e = export(original)) {
            ImportedArray array;
            MemorySegment data;
            ArrayNode root;
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
                array = ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL);
                root = array.root();
                data = root.buffer(1);
                assertEquals(((org.apache.arrow.vector.BigIntVector) original).get(1),
                        data.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 1));
            }
            array.close();
            array.close();
            assertThrows(IllegalStateException.class, () -> data.get(ValueLayout.JAVA_BYTE, 0),
                    "FFM refuses access to a closed scope");
            assertThrows(HandleClosedException.class, () -> root.buffer(1));
            assertThrows(HandleClosedException.class, array::root);
        }
    }

    @Test
    void aStructArrayWithAChildThatIsItsOwnAncestorIsACycleAndIsReleasedOnce() {
        HandMade.ROOT_RELEASES.set(0);
        try (Arena arena = Arena.ofConfined();
             ImportedSchema schema = ArrowC.importSchema(HandMade.root(
                     HandMade.schema(arena, "+s", HandMade.schema(arena, "+s"))))) {
            assertEquals(0, HandMade.ROOT_RELEASES.get());
            MemorySegment root = arena.allocate(ArrowArray.layout());
            MemorySegment validity = MemorySegment.NULL;
            MemorySegment built = HandMade.array(arena, 1, new MemorySegment[] {validity}, root);
            MemorySegment.copy(built, 0, root, 0, ArrowArray.sizeof());
            HandMade.rootArray(root);
            org.devicebridge.ValidationException ex = assertThrows(org.devicebridge.ValidationException.class,
                    () -> ArrowC.importArray(schema.root(), root, ValidationLevel.MINIMAL));
            assertEquals(org.devicebridge.ValidationException.Category.DEPTH, ex.category());
            assertEquals("children[0]", ex.path());
            assertEquals(1, HandMade.ROOT_RELEASES.get());
        }
        assertEquals(2, HandMade.ROOT_RELEASES.get(), "the schema's release ran once on close");
    }
}
