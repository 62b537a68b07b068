package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.Consumer;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Corruptions of arrow-c-data exports, each caught at the lowest level that can see it and accepted
 * below; every refused struct is released (the allocator returns to 0 only if the export's release ran).
 */
class ArrowValidationTest extends ArrowTestSupport {

    /** Imports {@code type} after {@code corrupt} at {@code level}; returns the exception, or null if accepted. */
    private ValidationException importCorrupted(String type, Consumer<Exported> corrupt, ValidationLevel level) {
        try (FieldVector original = TestVectors.all().get(type).apply(allocator); Exported e = export(original)) {
            corrupt.accept(e);
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
                try (ImportedArray ignored = ArrowC.importArray(schema.root(), e.arrayPtr(), level)) {
                    return null;
                } catch (ValidationException ex) {
                    assertEquals(MemorySegment.NULL, ArrowArray.release(e.arrayStruct()), "the struct was moved");
                    return ex;
                }
            }
        }
    }

    private static MemorySegment buffer(Exported e, int path, int i) {
        MemorySegment a = e.arrayStruct();
        if (path >= 0) {
            a = ArrowArray.children(a).reinterpret(8L * (path + 1)).getAtIndex(ValueLayout.ADDRESS, path)
                    .reinterpret(ArrowArray.sizeof());
        }
        return ArrowArray.buffers(a).reinterpret(8L * (i + 1)).getAtIndex(ValueLayout.ADDRESS, i);
    }

    @Test
    void negativeLengthIsASizeErrorEvenAtNone() {
        ValidationException ex = importCorrupted("int32", e -> ArrowArray.length(e.arrayStruct(), -3), ValidationLevel.NONE);
        assertEquals(Category.SIZE, ex.category());
        assertEquals("length: expected a non-negative length but found -3", ex.getMessage());
    }

    @Test
    void nullCountAboveLengthIsCaughtAtMinimalAndIgnoredAtNone() {
        Consumer<Exported> c = e -> ArrowArray.null_count(e.arrayStruct(), 100);
        ValidationException ex = importCorrupted("int32", c, ValidationLevel.MINIMAL);
        assertEquals(Category.SIZE, ex.category());
        assertEquals("null_count", ex.path());
        assertEquals(null, importCorrupted("int32", c, ValidationLevel.NONE));
    }

    @Test
    void wrongBufferCountIsAStructureError() {
        ValidationException ex = importCorrupted("utf8", e -> ArrowArray.n_buffers(e.arrayStruct(), 2), ValidationLevel.NONE);
        assertEquals(Category.STRUCTURE, ex.category());
        assertEquals("n_buffers: expected 3 buffers for format 'u' but found 2", ex.getMessage());
    }

    @Test
    void offsetBeyondAStructChildsLengthIsALengthError() {
        ValidationException ex = importCorrupted("struct", e -> ArrowArray.offset(e.arrayStruct(), 2), ValidationLevel.MINIMAL);
        assertEquals(Category.LENGTH, ex.category());
        assertEquals("children[0].length: expected at least 11 (parent offset + length) but found 9", ex.getMessage());
    }

    @Test
    void aListWhoseLastOffsetPassesItsChildIsCaughtFromDefault() {
        Consumer<Exported> c = e -> buffer(e, -1, 1).reinterpret(4L * (TestVectors.N + 1))
                .setAtIndex(ValueLayout.JAVA_INT, TestVectors.N, 1000);
        assertEquals(null, importCorrupted("list_int32", c, ValidationLevel.MINIMAL));
        ValidationException ex = importCorrupted("list_int32", c, ValidationLevel.DEFAULT);
        assertEquals(Category.LENGTH, ex.category());
        assertEquals("children[0].length", ex.path());
    }

    @Test
    void nonMonotonicOffsetsAreCaughtOnlyAtFull() {
        // offsets[4] goes below offsets[3]; first and last offsets stay valid.
        Consumer<Exported> c = e -> buffer(e, -1, 1).reinterpret(4L * (TestVectors.N + 1))
                .setAtIndex(ValueLayout.JAVA_INT, 4, 1);
        assertEquals(null, importCorrupted("utf8", c, ValidationLevel.DEFAULT));
        ValidationException ex = importCorrupted("utf8", c, ValidationLevel.FULL);
        assertEquals(Category.CONTENT, ex.category());
        assertEquals("buffers[1]", ex.path());
        assertEquals("buffers[1]: offsets not monotonic at index 4: expected at least 8 but found 1", ex.getMessage());
    }

    @Test
    void anUndeclaredDenseUnionTypeIdIsCaughtAtFull() {
        Consumer<Exported> c = e -> buffer(e, -1, 0).reinterpret(TestVectors.N).set(ValueLayout.JAVA_BYTE, 6, (byte) 99);
        assertEquals(null, importCorrupted("dense_union", c, ValidationLevel.DEFAULT));
        ValidationException ex = importCorrupted("dense_union", c, ValidationLevel.FULL);
        assertEquals(Category.CONTENT, ex.category());
        assertEquals("buffers[0]: type id at index 6: expected one of [0, 1] but found 99", ex.getMessage());
    }

    @Test
    void aDenseUnionOffsetPastItsChildIsCaughtAtFull() {
        Consumer<Exported> c = e -> buffer(e, -1, 1).reinterpret(4L * TestVectors.N).setAtIndex(ValueLayout.JAVA_INT, 3, 50);
        ValidationException ex = importCorrupted("dense_union", c, ValidationLevel.FULL);
        assertEquals(Category.CONTENT, ex.category());
        assertEquals("buffers[1]", ex.path());
    }

    @Test
    void decreasingRunEndsAreCaughtAtFullAndAShortLastRunFromDefault() {
        Consumer<Exported> decreasing = e -> buffer(e, 0, 1).reinterpret(16).setAtIndex(ValueLayout.JAVA_INT, 1, 1);
        assertEquals(null, importCorrupted("run_end_encoded", decreasing, ValidationLevel.DEFAULT));
        ValidationException ex = importCorrupted("run_end_encoded", decreasing, ValidationLevel.FULL);
        assertEquals("children[0].buffers[1]: run ends not strictly increasing at index 1: expected more than 2 but found 1",
                ex.getMessage());
        Consumer<Exported> shortLast = e -> buffer(e, 0, 1).reinterpret(16).setAtIndex(ValueLayout.JAVA_INT, 3, 8);
        assertEquals(null, importCorrupted("run_end_encoded", shortLast, ValidationLevel.MINIMAL));
        ValidationException ex2 = importCorrupted("run_end_encoded", shortLast, ValidationLevel.DEFAULT);
        assertEquals(Category.CONTENT, ex2.category());
    }

    @Test
    void aMissingValidityBufferWithNullsIsANullPointerError() {
        ValidationException ex = importCorrupted("int32", e -> ArrowArray.buffers(e.arrayStruct())
                .reinterpret(16).setAtIndex(ValueLayout.ADDRESS, 0, MemorySegment.NULL), ValidationLevel.MINIMAL);
        assertEquals(Category.NULL_POINTER, ex.category());
        assertEquals("buffers[0]: expected a validity buffer for null count 2 but found NULL", ex.getMessage());
    }

    @Test
    void aMissingDataBufferIsANullPointerError() {
        ValidationException ex = importCorrupted("int64", e -> ArrowArray.buffers(e.arrayStruct())
                .reinterpret(16).setAtIndex(ValueLayout.ADDRESS, 1, MemorySegment.NULL), ValidationLevel.NONE);
        assertEquals(Category.NULL_POINTER, ex.category());
        assertEquals("buffers[1]: expected a buffer of 72 bytes but found NULL", ex.getMessage());
    }

    @Test
    void offsetPlusLengthOverflowIsASizeError() {
        ValidationException ex = importCorrupted("int64", e -> {
            ArrowArray.offset(e.arrayStruct(), Long.MAX_VALUE - 2);
            ArrowArray.null_count(e.arrayStruct(), 0);
        }, ValidationLevel.NONE);
        assertEquals(Category.SIZE, ex.category());
    }

    @Test
    void aReleasedArrayIsRefusedWithoutBeingReleasedAgain() {
        try (FieldVector original = TestVectors.all().get("int32").apply(allocator); Exported e = export(original);
             ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
            ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL).close();
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL));
            assertEquals(Category.RELEASED, ex.category());
        }
    }

    @ParameterizedTest(name = "[{index}] format {0}")
    @CsvSource(delimiter = '|', value = {
            "''|format: expected a format string but found an empty one",
            "q|format: expected a known format string but found 'q'",
            "d:0,2|format: expected a decimal128 precision in [1, 38] but found 0",
            "d:10,2,32|format: expected a decimal32 precision in [1, 9] but found 10",
            "d:5,2,48|format: expected a decimal bit width of 32, 64, 128 or 256 but found 48",
            "d:5|format: expected 'd:precision,scale[,bitWidth]' but found 'd:5'",
            "w:x|format: expected a fixed-size binary byte width but found 'x'",
            "+w:|format: expected a fixed-size list size but found ''",
            "tsx:UTC|format: expected a time unit (s, m, u, n) but found 'x'",
            "w:99999999999|format: expected a fixed-size binary byte width but found '99999999999'",
    })
    void malformedFormatStringsAreFormatErrors(String format, String message) {
        ValidationException ex = assertThrows(ValidationException.class, () -> ArrowFormat.parse(format, ""));
        assertEquals(Category.FORMAT, ex.category());
        assertEquals(message, ex.getMessage());
    }

    @Test
    void unionTypeIdsMustBeDistinctAndAtMost127() {
        assertEquals("children[1].format: expected distinct union type ids but found 1 twice",
                assertThrows(ValidationException.class, () -> ArrowFormat.parse("+ud:1,1", "children[1]")).getMessage());
        assertEquals(Category.FORMAT,
                assertThrows(ValidationException.class, () -> ArrowFormat.parse("+us:128", "")).category());
    }

    @Test
    void everyDocumentedFormatParses() {
        String[] formats = {"n", "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "z", "Z", "vz", "u", "U",
            "vu", "d:38,10", "d:9,2,32", "d:18,-2,64", "d:76,5,256", "w:16", "tdD", "tdm", "tts", "ttm", "ttu", "ttn",
            "tss:", "tsm:UTC", "tsu:Europe/Paris", "tsn:+07:30", "tDs", "tDm", "tDu", "tDn", "tiM", "tiD", "tin",
            "+l", "+L", "+vl", "+vL", "+w:4", "+s", "+m", "+ud:0,5", "+us:", "+r"};
        for (String f : formats) {
            assertEquals(f, ArrowFormat.parse(f, "").format());
        }
        ArrowDataType ts = ArrowFormat.parse("tsn:+07:30", "");
        assertEquals(java.time.temporal.ChronoUnit.NANOS, ts.unit());
        assertEquals("+07:30", ts.timezone());
        ArrowDataType dec = ArrowFormat.parse("d:18,-2,64", "");
        assertEquals(ArrowDataType.TypeId.DECIMAL64, dec.id());
        assertEquals(-2, dec.scale());
    }

    @Test
    void schemaNestingDeeperThan64IsADepthErrorAndTheSchemaIsReleasedOnce() {
        HandMade.ROOT_RELEASES.set(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = HandMade.schema(arena, "i");
            for (int i = 0; i < 70; i++) {
                s = HandMade.schema(arena, "+l", s);
            }
            MemorySegment root = HandMade.root(s);
            ValidationException ex = assertThrows(ValidationException.class, () -> ArrowC.importSchema(root));
            assertEquals(Category.DEPTH, ex.category());
            assertEquals(1, HandMade.ROOT_RELEASES.get());
        }
    }

    @Test
    void aSchemaThatIsItsOwnChildIsACycle() {
        HandMade.ROOT_RELEASES.set(0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment root = HandMade.root(HandMade.schema(arena, "+s", MemorySegment.NULL));
            ArrowSchema.children(root).reinterpret(8).set(ValueLayout.ADDRESS, 0, root);
            ValidationException ex = assertThrows(ValidationException.class, () -> ArrowC.importSchema(root));
            assertEquals(Category.DEPTH, ex.category());
            assertEquals("children[0]", ex.path());
            assertEquals(1, HandMade.ROOT_RELEASES.get());
        }
    }

    @Test
    void metadataIsReadInOrderAndANegativeLengthIsAMetadataError() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment blob = arena.allocate(64);
            blob.set(ValueLayout.JAVA_INT_UNALIGNED, 0, 2);
            blob.set(ValueLayout.JAVA_INT_UNALIGNED, 4, 1);
            blob.set(ValueLayout.JAVA_BYTE, 8, (byte) 'b');
            blob.set(ValueLayout.JAVA_INT_UNALIGNED, 9, 2);
            blob.set(ValueLayout.JAVA_BYTE, 13, (byte) 'x');
            blob.set(ValueLayout.JAVA_BYTE, 14, (byte) 'y');
            blob.set(ValueLayout.JAVA_INT_UNALIGNED, 15, 1);
            blob.set(ValueLayout.JAVA_BYTE, 19, (byte) 'a');
            blob.set(ValueLayout.JAVA_INT_UNALIGNED, 20, 0);
            MemorySegment s = HandMade.root(HandMade.schema(arena, "i"));
            ArrowSchema.metadata(s, blob);
            try (ImportedSchema schema = ArrowC.importSchema(s)) {
                assertEquals(java.util.List.of("b", "a"), java.util.List.copyOf(schema.root().metadata().keySet()));
                assertEquals("xy", schema.root().metadata().get("b"));
                assertEquals("", schema.root().metadata().get("a"));
            }
            blob.set(ValueLayout.JAVA_INT_UNALIGNED, 9, -7);
            MemorySegment bad = HandMade.root(HandMade.schema(arena, "i"));
            ArrowSchema.metadata(bad, blob);
            ValidationException ex = assertThrows(ValidationException.class, () -> ArrowC.importSchema(bad));
            assertEquals(Category.METADATA, ex.category());
            assertEquals("metadata: expected a non-negative length of value 0 but found -7", ex.getMessage());
        }
    }

    @Test
    void aDictionaryIndexOutOfRangeIsCaughtAtFull() {
        VarCharVector dict = new VarCharVector("d", allocator);
        dict.allocateNew();
        dict.setSafe(0, new byte[] {'a'});
        dict.setSafe(1, new byte[] {'b'});
        dict.setValueCount(2);
        org.apache.arrow.vector.types.pojo.DictionaryEncoding enc = new org.apache.arrow.vector.types.pojo.DictionaryEncoding(
                1, false, new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, true));
        IntVector idx = new IntVector("v", new org.apache.arrow.vector.types.pojo.FieldType(true,
                new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, true), enc), allocator);
        idx.allocateNew();
        idx.setSafe(0, 1);
        idx.setSafe(1, 2); // out of range
        idx.setNull(2);
        idx.setValueCount(3);
        org.apache.arrow.vector.dictionary.DictionaryProvider.MapDictionaryProvider p =
                new org.apache.arrow.vector.dictionary.DictionaryProvider.MapDictionaryProvider();
        p.put(new org.apache.arrow.vector.dictionary.Dictionary(dict, enc));
        try (idx; dict; Exported e = new Exported(allocator, idx, p); ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL));
            assertEquals("buffers[1]: dictionary index at 1: expected a value in [0, 2) but found 2", ex.getMessage());
        }
    }


    @Test
    void invalidUtf8IsCaughtOnlyAtFull() {
        // Byte 0 of value 0 ("v0-") becomes 0xFF, which never starts a UTF-8 sequence.
        Consumer<Exported> c = e -> buffer(e, -1, 2).reinterpret(1).set(ValueLayout.JAVA_BYTE, 0, (byte) 0xFF);
        assertEquals(null, importCorrupted("utf8", c, ValidationLevel.DEFAULT));
        ValidationException ex = importCorrupted("utf8", c, ValidationLevel.FULL);
        assertEquals("buffers[2]: value 0: expected valid UTF-8 but found an invalid byte sequence", ex.getMessage());
    }
}
