package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.TestVectors;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** arrow-c-data exports every type; the import into Arrow Java gives back the same values, sliced or not. */
class ArrowJavaImportTest extends ArrowTestSupport {

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        TestVectors.all().forEach((name, f) -> {
            for (int[] window : new int[][] {{0, TestVectors.N}, {3, 4}, {1, 0}, {5, 4}}) {
                out.add(Arguments.of(name, f, window[0], window[1]));
            }
        });
        return out.stream();
    }

    @ParameterizedTest(name = "{0} offset {2} length {3}")
    @MethodSource("cases")
    void importedVectorHoldsTheProducersValuesAtTheProducersOffset(String name, Function<BufferAllocator, FieldVector> make,
                                                                  int offset, int length) {
        try (FieldVector original = make.apply(allocator); Exported e = export(original)) {
            if (offset != 0 || length != TestVectors.N) {
                // Craft a sliced array: the same buffers, a non-zero offset, an unknown null count.
                ArrowArray.offset(e.arrayStruct(), offset);
                ArrowArray.length(e.arrayStruct(), length);
                ArrowArray.null_count(e.arrayStruct(), -1);
            }
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr())) {
                ImportedArray array = ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL);
                if (name.equals("run_end_encoded") && offset != 0) {
                    try (array) {
                        assertThrows(UnsupportedFeatureException.class,
                                () -> ArrowJava.importFieldVector(allocator, array, null));
                        assertTrue(!array.isLive(), "the input is released on every throw, an unsupported feature too");
                    }
                    return;
                }
                try (FieldVector imported = ArrowJava.importFieldVector(allocator, array, null)) {
                    assertTrue(!array.isLive(), "the array is consumed by the Arrow Java import");
                    assertEquals(length, imported.getValueCount());
                    assertEquals(normalizedType(original), normalizedType(imported));
                    assertEquals(original.getField().getMetadata(), imported.getField().getMetadata());
                    int nulls = 0;
                    for (int i = 0; i < length; i++) {
                        Object want = original.getObject(offset + i);
                        Object got = imported.getObject(i);
                        assertTrue(Objects.deepEquals(want, got) || String.valueOf(want).equals(String.valueOf(got)),
                                name + "[" + i + "]: expected " + want + " but found " + got);
                        assertEquals(original.isNull(offset + i), imported.isNull(i), name + " null at " + i);
                        nulls += original.isNull(offset + i) ? 1 : 0;
                    }
                    if (!(imported.getField().getType() instanceof ArrowType.Union)
                            && !(imported.getField().getType() instanceof ArrowType.RunEndEncoded)
                            && !(imported.getField().getType() instanceof ArrowType.Null)) {
                        assertEquals(nulls, imported.getNullCount(), name + " null count");
                    }
                }
            }
        }
    }

    private static String normalizedType(FieldVector v) {
        return v.getField().getType().toString();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("narrowDecimals")
    void decimal32And64KeepTheirDeclaredWidthInTheField(String format, int bits) {
        // Arrow Java 19's own readers hold them this way: the declared type over a 16-byte DecimalVector.
        SchemaNode node = field("d", format, SchemaNode.FLAG_NULLABLE);
        assertEquals(bits, ((ArrowType.Decimal) ArrowJava.toField(node).getType()).getBitWidth());
    }

    static Stream<Arguments> narrowDecimals() {
        return Stream.of(Arguments.of("d:9,2,32", 32), Arguments.of("d:18,3,64", 64));
    }

    @org.junit.jupiter.api.Test
    void theLastArrowBufferReleasesTheStructAfterATransfer() {
        try (FieldVector original = TestVectors.all().get("utf8").apply(allocator); Exported e = export(original)) {
            long exportedBytes = allocator.getAllocatedMemory();
            FieldVector moved;
            try (ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
                 FieldVector imported = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.DEFAULT), null)) {
                moved = (FieldVector) imported.getTransferPair(allocator).getTo();
                imported.makeTransferPair(moved).transfer();
            }
            // The struct (and the export's hold on the buffers) lives on in the transferred vector.
            assertTrue(allocator.getAllocatedMemory() > exportedBytes - 1);
            assertEquals(original.getObject(7).toString(), moved.getObject(7).toString());
            moved.close();
        }
    }

    @org.junit.jupiter.api.Test
    void dictionaryEncodedFieldsImportTheirDictionary() {
        org.apache.arrow.vector.VarCharVector dict = new org.apache.arrow.vector.VarCharVector("d", allocator);
        dict.allocateNew();
        for (int i = 0; i < 3; i++) {
            dict.setSafe(i, ("word" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        dict.setValueCount(3);
        org.apache.arrow.vector.types.pojo.DictionaryEncoding enc =
                new org.apache.arrow.vector.types.pojo.DictionaryEncoding(7, false, new ArrowType.Int(32, true));
        org.apache.arrow.vector.IntVector indices = new org.apache.arrow.vector.IntVector("v",
                new org.apache.arrow.vector.types.pojo.FieldType(true, new ArrowType.Int(32, true), enc), allocator);
        indices.allocateNew();
        int[] values = {2, 0, -1, 1, 1};
        for (int i = 0; i < values.length; i++) {
            if (values[i] < 0) {
                indices.setNull(i);
            } else {
                indices.setSafe(i, values[i]);
            }
        }
        indices.setValueCount(values.length);
        DictionaryProvider.MapDictionaryProvider producerDicts = new DictionaryProvider.MapDictionaryProvider();
        producerDicts.put(new org.apache.arrow.vector.dictionary.Dictionary(dict, enc));
        try (indices; dict; Exported e = new Exported(allocator, indices, producerDicts);
             ImportedSchema schema = ArrowC.importSchema(e.schemaPtr());
             DictionaryProvider.MapDictionaryProvider dicts = new DictionaryProvider.MapDictionaryProvider()) {
            assertEquals("u", schema.root().dictionary().format());
            try (FieldVector imported = ArrowJava.importFieldVector(allocator,
                    ArrowC.importArray(schema.root(), e.arrayPtr(), ValidationLevel.FULL), dicts)) {
                long id = imported.getField().getDictionary().getId();
                FieldVector decodedDict = dicts.lookup(id).getVector();
                for (int i = 0; i < values.length; i++) {
                    if (values[i] < 0) {
                        assertTrue(imported.isNull(i));
                    } else {
                        assertEquals("word" + values[i], decodedDict.getObject(((org.apache.arrow.vector.IntVector) imported).get(i)).toString());
                    }
                }
            }
        }
    }
}
