package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.Test;

/**
 * What the import into Arrow Java reuses from batch to batch, and what it must not: the fields of the same
 * (or an equal) schema are the same objects and equal to plain fields; a different schema or a dictionary
 * gets its own; all buffers of one import are one allocation, whose last buffer releases the struct once.
 */
class ArrowJavaImportReuseTest extends ArrowTestSupport {

    private VectorSchemaRoot batch(String prefix, int columns, int rows) {
        List<FieldVector> vectors = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            BigIntVector v = new BigIntVector(prefix + c, allocator);
            v.allocateNew(rows);
            for (int i = 0; i < rows; i++) {
                if (i % 5 == 3) {
                    v.setNull(i);
                } else {
                    v.set(i, 10L * c + i);
                }
            }
            v.setValueCount(rows);
            vectors.add(v);
        }
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }

    /** Exports {@code root} (with its schema) and imports it into a new root. */
    private VectorSchemaRoot roundTrip(VectorSchemaRoot root, Arena arena) {
        MemorySegment array = arena.allocate(ArrowArray.layout());
        MemorySegment schema = arena.allocate(ArrowSchema.layout());
        ArrowJava.exportRoot(root, null, array, schema);
        ImportedArray imported;
        try (ImportedSchema s = ArrowC.importSchema(schema)) {
            imported = ArrowC.importArray(s.root(), array, ValidationLevel.DEFAULT);
        }
        return ArrowJava.importVectorSchemaRoot(allocator, imported, null);
    }

    @Test
    void theSameSchemaImportedAgainReusesItsFieldsAndAnEqualOneToo() {
        try (Arena arena = Arena.ofConfined(); VectorSchemaRoot producer = batch("c", 3, 7)) {
            MemorySegment schemaStruct = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportSchema(producer.getSchema(), null, schemaStruct);
            try (ImportedSchema schema = ArrowC.importSchema(schemaStruct)) {
                List<Field> first;
                for (int round = 0; round < 2; round++) {
                    MemorySegment array = arena.allocate(ArrowArray.layout());
                    ArrowJava.exportRoot(producer, null, array, null);
                    try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator,
                            ArrowC.importArray(schema.root(), array, ValidationLevel.DEFAULT), null)) {
                        assertEquals(producer.getSchema(), back.getSchema());
                        assertEquals(producer.contentToTSVString(), back.contentToTSVString());
                    }
                }
                MemorySegment a1 = arena.allocate(ArrowArray.layout());
                MemorySegment a2 = arena.allocate(ArrowArray.layout());
                ArrowJava.exportRoot(producer, null, a1, null);
                ArrowJava.exportRoot(producer, null, a2, null);
                try (VectorSchemaRoot b1 = ArrowJava.importVectorSchemaRoot(allocator,
                        ArrowC.importArray(schema.root(), a1, ValidationLevel.DEFAULT), null);
                     VectorSchemaRoot b2 = ArrowJava.importVectorSchemaRoot(allocator,
                             ArrowC.importArray(schema.root(), a2, ValidationLevel.DEFAULT), null)) {
                    first = b1.getSchema().getFields();
                    assertSame(b1.getSchema(), b2.getSchema(), "same SchemaNode: the same Schema");
                }
                // The schema exported with every batch: a new but equal SchemaNode each time.
                try (VectorSchemaRoot b3 = roundTrip(producer, arena); VectorSchemaRoot b4 = roundTrip(producer, arena)) {
                    assertSame(b3.getSchema().getFields().get(0), b4.getSchema().getFields().get(0));
                    assertEquals(first, b3.getSchema().getFields());
                    assertEquals(producer.contentToTSVString(), b4.contentToTSVString());
                }
            }
        }
    }

    @Test
    void reusedFieldsEqualAndHashLikePlainFields() {
        try (Arena arena = Arena.ofConfined(); VectorSchemaRoot producer = batch("x", 2, 3);
             VectorSchemaRoot back = roundTrip(producer, arena)) {
            for (int i = 0; i < 2; i++) {
                Field plain = new Field("x" + i, FieldType.nullable(new ArrowType.Int(64, true)), null);
                Field imported = back.getSchema().getFields().get(i);
                assertEquals(plain, imported);
                assertEquals(imported, plain);
                assertEquals(plain.hashCode(), imported.hashCode());
                assertEquals(plain.hashCode(), imported.hashCode(), "cached hash stays the same");
                assertSame(back.getVector(i), back.getVector(plain), "found by a plain field");
            }
            try {
                assertEquals(producer.getSchema(), Schema.fromJSON(back.getSchema().toJson()), "JSON round trip");
            } catch (java.io.IOException e) {
                throw new AssertionError(e);
            }
            assertEquals(producer.getSchema(),
                    Schema.deserializeMessage(java.nio.ByteBuffer.wrap(back.getSchema().serializeAsMessage())), "IPC round trip");
        }
    }

    @Test
    void aDifferentSchemaGetsItsOwnFields() {
        try (Arena arena = Arena.ofConfined(); VectorSchemaRoot one = batch("a", 2, 3); VectorSchemaRoot other = batch("b", 2, 3);
             VectorSchemaRoot backOne = roundTrip(one, arena); VectorSchemaRoot backOther = roundTrip(other, arena);
             VectorSchemaRoot backOneAgain = roundTrip(one, arena)) {
            assertEquals(one.getSchema(), backOne.getSchema());
            assertEquals(other.getSchema(), backOther.getSchema());
            assertNotEquals(backOne.getSchema(), backOther.getSchema());
            assertEquals(one.getSchema(), backOneAgain.getSchema());
            assertNotSame(backOther.getSchema().getFields().get(0), backOneAgain.getSchema().getFields().get(0));
        }
    }

    @Test
    void dictionaryEncodedSchemasGetFreshDictionaryIdsOnEveryImport() {
        DictionaryProvider.MapDictionaryProvider provider = new DictionaryProvider.MapDictionaryProvider();
        DictionaryProvider.MapDictionaryProvider received = new DictionaryProvider.MapDictionaryProvider();
        try (Arena arena = Arena.ofConfined()) {
            FieldVector encoded = ExportTestSupport.dictionaryEncoded(allocator, 6, false, provider);
            try (VectorSchemaRoot producer = new VectorSchemaRoot(List.of(encoded))) {
                producer.setRowCount(6);
                List<Long> ids = new ArrayList<>();
                for (int round = 0; round < 2; round++) {
                    MemorySegment array = arena.allocate(ArrowArray.layout());
                    MemorySegment schema = arena.allocate(ArrowSchema.layout());
                    ArrowJava.exportRoot(producer, provider, array, schema);
                    ImportedArray imported;
                    try (ImportedSchema s = ArrowC.importSchema(schema)) {
                        imported = ArrowC.importArray(s.root(), array, ValidationLevel.DEFAULT);
                    }
                    try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, imported, received)) {
                        ids.add(back.getSchema().getFields().get(0).getDictionary().getId());
                        VarCharVector words = (VarCharVector) received.lookup(ids.get(round)).getVector();
                        assertEquals("word1", words.getObject(1).toString());
                    }
                }
                assertNotEquals(ids.get(0), ids.get(1), "each import adds its own dictionary");
            } finally {
                ExportTestSupport.closeDictionaries(provider);
                ExportTestSupport.closeDictionaries(received);
            }
        }
    }

    @Test
    void theStructIsReleasedOnceWhenTheLastOfItsVectorsIsClosedInAnyOrder() {
        try (Arena arena = Arena.ofConfined(); VectorSchemaRoot producer = batch("v", 4, 9)) {
            long releases = ExportTestSupport.arrayReleases();
            VectorSchemaRoot back = roundTrip(producer, arena);
            long accounted = allocator.getAllocatedMemory();
            FieldVector kept = back.getVector(2);
            FieldVector moved = (FieldVector) kept.getTransferPair(allocator).getTo();
            kept.makeTransferPair(moved).transfer();
            back.close();
            assertEquals(0, ExportTestSupport.arrayReleases() - releases, "a transferred vector still holds the struct");
            assertEquals(producer.getVector(2).getObject(4), moved.getObject(4));
            assertEquals(accounted, allocator.getAllocatedMemory(), "one allocation, accounted while any of it is held");
            moved.close();
            assertEquals(5, ExportTestSupport.arrayReleases() - releases, "root and 4 children, each once");
        }
    }
}
