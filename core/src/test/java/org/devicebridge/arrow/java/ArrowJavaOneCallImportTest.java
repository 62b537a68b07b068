package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.TestVectors;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.Test;

/**
 * The one-call imports of {@link ArrowJava} (structs in, Arrow Java out), against arrow-c-data as the producer:
 * the values come back, both structs are taken over, and a refused schema releases the array too.
 */
class ArrowJavaOneCallImportTest extends ArrowTestSupport {

    @Test
    void aVectorComesBackInOneCallAndBothStructsAreTakenOver() {
        for (var entry : TestVectors.all().entrySet()) {
            try (FieldVector original = entry.getValue().apply(allocator); Exported e = export(original);
                 FieldVector back = ArrowJava.importFieldVector(allocator, e.arrayPtr(), e.schemaPtr(), null)) {
                assertEquals(original.getValueCount(), back.getValueCount(), entry.getKey());
                for (int i = 0; i < original.getValueCount(); i++) {
                    Object want = original.getObject(i);
                    Object got = back.getObject(i);
                    assertTrue(Objects.deepEquals(want, got) || String.valueOf(want).equals(String.valueOf(got)),
                            entry.getKey() + "[" + i + "]: expected " + want + " but found " + got);
                }
                assertEquals(MemorySegment.NULL, ArrowArray.release(e.arrayStruct()), "the array struct was moved");
                assertEquals(MemorySegment.NULL, ArrowSchema.release(schemaStruct(e)), "the schema struct was released");
            }
        }
    }

    @Test
    void aRecordBatchComesBackInOneCallAsARoot() {
        try (IntVector ids = new IntVector("id", allocator); VarCharVector names = new VarCharVector("name", allocator);
             Arena structs = Arena.ofConfined()) {
            ids.allocateNew(3);
            names.allocateNew(3);
            for (int i = 0; i < 3; i++) {
                ids.set(i, 10 * i);
                names.setSafe(i, ("n" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            ids.setNull(1);
            ids.setValueCount(3);
            names.setValueCount(3);
            try (VectorSchemaRoot table = new VectorSchemaRoot(java.util.List.of(ids, names))) {
                table.setRowCount(3);
                MemorySegment array = structs.allocate(ArrowArray.layout());
                MemorySegment schema = structs.allocate(ArrowSchema.layout());
                ArrowJava.exportRoot(table, null, array, schema);
                try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, array, schema, null)) {
                    assertEquals(new Schema(java.util.List.of(ids.getField(), names.getField())), back.getSchema());
                    assertEquals(table.contentToTSVString(), back.contentToTSVString());
                }
                assertEquals(MemorySegment.NULL, ArrowArray.release(array));
                assertEquals(MemorySegment.NULL, ArrowSchema.release(schema));
            }
        }
    }

    @Test
    void aRefusedSchemaReleasesTheArrayToo() {
        try (FieldVector original = TestVectors.all().get("utf8").apply(allocator); Exported e = export(original);
             Arena arena = Arena.ofConfined()) {
            ArrowSchema.format(schemaStruct(e), arena.allocateFrom("not a format"));
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> ArrowJava.importVectorSchemaRoot(allocator, e.arrayPtr(), e.schemaPtr(), null));
            assertTrue(ex.path().endsWith("format"), ex.path() + ": " + ex.getMessage());
            assertEquals(MemorySegment.NULL, ArrowArray.release(e.arrayStruct()), "the array was released as well");
            assertEquals(MemorySegment.NULL, ArrowSchema.release(schemaStruct(e)), "the schema was released");
        }
        // the allocator check after each test proves the producer's buffers came back
    }

    private static MemorySegment schemaStruct(Exported e) {
        return e.schemaPtr().reinterpret(ArrowSchema.sizeof());
    }
}
