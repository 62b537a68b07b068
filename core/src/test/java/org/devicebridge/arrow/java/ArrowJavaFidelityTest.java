package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.UuidVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.extension.UuidType;
import org.apache.arrow.vector.types.Types.MinorType;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What an Arrow Java user gets back through the bridge, compared with what Arrow Java's own C Data module
 * (arrow-c-data) gives for the same data: registered extension types (UUID and a custom one) come back as
 * themselves and export with Arrow's metadata, imported buffers are readable to their length, imported fields
 * are plain {@link Field}s whose JSON is the source's, and a sparse union with rows it never set exports, passes
 * FULL and reads null there.
 */
class ArrowJavaFidelityTest extends ArrowTestSupport {
    private final ExportTestSupport.Baseline exports = new ExportTestSupport.Baseline();
    private final LengthType meters = new LengthType("m");

    @Override
    @AfterEach
    protected void checkNothingLeaked() {
        ExtensionTypeRegistry.unregister(meters);
        exports.assertNothingLeaked(allocator);
        super.checkNothingLeaked();
    }

    /** Exports {@code v} (and its field) through the bridge and imports it back through the bridge at FULL. */
    private FieldVector bridgeRoundTrip(FieldVector v) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportVector(v, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                return ArrowJava.importFieldVector(allocator, ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null);
            }
        }
    }

    /** Exports {@code v} through arrow-c-data and imports it back through arrow-c-data. */
    private FieldVector cDataRoundTrip(FieldVector v) {
        try (org.apache.arrow.c.ArrowArray a = org.apache.arrow.c.ArrowArray.allocateNew(allocator);
             org.apache.arrow.c.ArrowSchema s = org.apache.arrow.c.ArrowSchema.allocateNew(allocator);
             CDataDictionaryProvider p = new CDataDictionaryProvider()) {
            Data.exportVector(allocator, v, null, a, s);
            return Data.importVector(allocator, a, s, p);
        }
    }

    /** The whole metadata blob of an exported {@code ArrowSchema} ({@code null} for none). */
    private static byte[] metadataBlob(MemorySegment schema) {
        MemorySegment md = ArrowSchema.metadata(schema.reinterpret(ArrowSchema.sizeof()));
        if (md.address() == 0) {
            return null;
        }
        MemorySegment m = md.reinterpret(1 << 20);
        long pos = 4;
        for (int k = 0; k < 2 * m.get(ValueLayout.JAVA_INT_UNALIGNED, 0); k++) {
            pos += 4 + m.get(ValueLayout.JAVA_INT_UNALIGNED, pos);
        }
        return m.asSlice(0, pos).toArray(ValueLayout.JAVA_BYTE);
    }

    /** The field's metadata blob as the bridge writes it and as arrow-c-data writes it: must be the same bytes. */
    private void assertExportedLikeArrowCData(FieldVector v, String format) {
        try (Arena arena = Arena.ofConfined();
             org.apache.arrow.c.ArrowSchema peer = org.apache.arrow.c.ArrowSchema.allocateNew(allocator)) {
            MemorySegment ours = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportField(v.getField(), null, ours);
            Data.exportField(allocator, v.getField(), null, peer);
            try {
                MemorySegment theirs = MemorySegment.ofAddress(peer.memoryAddress()).reinterpret(ArrowSchema.sizeof());
                assertEquals(format, ArrowSchema.format(ours).reinterpret(64).getString(0), "the storage format");
                assertEquals(ArrowSchema.format(theirs).reinterpret(64).getString(0), ArrowSchema.format(ours).reinterpret(64).getString(0));
                byte[] want = metadataBlob(theirs);
                assertNotNull(want);
                assertArrayEquals(want, metadataBlob(ours), "the same metadata bytes, keys in the same order");
            } finally {
                ExportTestSupport.releaseIfLive(null, ours);
                peer.release();
            }
        }
    }

    // ---------------------------------------------------------------- extension types

    private UuidVector uuids() {
        UuidVector u = new UuidVector("id", allocator);
        u.allocateNew(5);
        for (int i = 0; i < 5; i++) {
            if (i == 2) {
                u.setNull(i);
            } else {
                u.setSafe(i, new UUID(i * 7L, -i));
            }
        }
        u.setValueCount(5);
        return u;
    }

    @Test
    void aRegisteredUuidComesBackAsAUuidVectorAndExportsWithArrowsMetadata() {
        assertSame(UuidType.INSTANCE, ExtensionTypeRegistry.lookup(UuidType.EXTENSION_NAME), "registered by Arrow Java");
        try (UuidVector original = uuids(); FieldVector ours = bridgeRoundTrip(original);
             FieldVector peer = cDataRoundTrip(original)) {
            assertExportedLikeArrowCData(original, "w:16");
            assertInstanceOf(UuidVector.class, ours);
            assertEquals(original.getField(), ours.getField());
            assertEquals(peer.getField(), ours.getField());
            assertEquals(UuidType.INSTANCE, ours.getField().getType());
            for (int i = 0; i < 5; i++) {
                assertEquals(original.getObject(i), ours.getObject(i), "row " + i);
                assertEquals(peer.getObject(i), ours.getObject(i), "row " + i);
            }
            assertNull(ours.getObject(2));
        }
    }

    private FieldVector lengths(String name, ArrowType type) {
        FieldVector v = new Field(name, new FieldType(true, type, null, Map.of("source", "sensor")), null).createVector(allocator);
        BigIntVector storage = v instanceof LengthType.LengthVector l ? l.getUnderlyingVector() : (BigIntVector) v;
        storage.allocateNew(4);
        for (int i = 0; i < 4; i++) {
            if (i == 1) {
                storage.setNull(i);
            } else {
                storage.setSafe(i, 1000L * i - 3);
            }
        }
        storage.setValueCount(4);
        return v;
    }

    @Test
    void aCustomRegisteredTypeComesBackAsItselfInARootAndExportsWithItsNameAndMetadata() {
        ExtensionTypeRegistry.register(meters);
        try (FieldVector original = lengths("len", new LengthType("km"));
             VectorSchemaRoot root = new VectorSchemaRoot(List.of(original)); Arena arena = Arena.ofConfined()) {
            root.setRowCount(4);
            assertInstanceOf(LengthType.LengthVector.class, original);
            assertExportedLikeArrowCData(original, "l");
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportRoot(root, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 VectorSchemaRoot ours = ArrowJava.importVectorSchemaRoot(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(root.getSchema(), ours.getSchema());
                assertEquals(new LengthType("km"), ours.getSchema().getFields().get(0).getType(), "the unit deserialized");
                assertInstanceOf(LengthType.LengthVector.class, ours.getVector(0));
                assertEquals(root.contentToTSVString(), ours.contentToTSVString());
                assertNull(ours.getVector(0).getObject(1));
            }
        }
    }

    @Test
    void anUnregisteredNameKeepsStorageAndMetadataAndTheReusedMappingFollowsTheRegistry() {
        ExtensionTypeRegistry.register(meters);
        try (FieldVector original = lengths("len", new LengthType("m"))) {
            try (FieldVector registered = bridgeRoundTrip(original)) {
                assertInstanceOf(LengthType.LengthVector.class, registered);
            }
            ExtensionTypeRegistry.unregister(meters);
            try (FieldVector ours = bridgeRoundTrip(original); FieldVector peer = cDataRoundTrip(original)) {
                assertInstanceOf(BigIntVector.class, ours, "the same schema again, now unregistered: its storage");
                assertEquals(LengthType.STORAGE, ours.getField().getType());
                assertEquals(Map.of("source", "sensor", ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME, LengthType.NAME,
                        ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, "m"), ours.getField().getMetadata());
                assertEquals(peer.getField(), ours.getField(), "as arrow-c-data keeps it");
                for (int i = 0; i < 4; i++) {
                    assertEquals(original.getObject(i), ours.getObject(i));
                }
            }
        }
    }

    // ---------------------------------------------------------------- writer index

    @Test
    void importedBuffersAreReadableToTheirLengthAsArrowCDataMakesThem() {
        try (IntVector ints = new IntVector("i", allocator); VarCharVector text = new VarCharVector("t", allocator)) {
            ints.allocateNew(4);
            text.allocateNew();
            for (int i = 0; i < 4; i++) {
                ints.set(i, 10 * i + 1);
                text.setSafe(i, ("v" + i).getBytes(StandardCharsets.UTF_8));
            }
            ints.setValueCount(4);
            text.setValueCount(4);
            try (FieldVector ours = bridgeRoundTrip(ints); FieldVector peer = cDataRoundTrip(ints);
                 FieldVector oursText = bridgeRoundTrip(text); FieldVector peerText = cDataRoundTrip(text)) {
                assertEquals(16, ours.getDataBuffer().readableBytes(), "4 ints");
                assertEquals(peer.getDataBuffer().writerIndex(), ours.getDataBuffer().writerIndex());
                IntBuffer values = ours.getDataBuffer().nioBuffer().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
                assertEquals(4, values.remaining());
                for (int i = 0; i < 4; i++) {
                    assertEquals(10 * i + 1, values.get(i));
                }
                assertEquals(peerText.getOffsetBuffer().readableBytes(), oursText.getOffsetBuffer().readableBytes());
                assertEquals(20, oursText.getOffsetBuffer().readableBytes(), "5 offsets");
                assertEquals(peerText.getDataBuffer().readableBytes(), oursText.getDataBuffer().readableBytes());
                assertEquals("v0v1v2v3", StandardCharsets.UTF_8.decode(oursText.getDataBuffer().nioBuffer()).toString());
            }
        }
    }

    @Test
    void aBufferTheImportRebasesOrShiftsIsReadableToItsLengthToo() {
        try (HandBuilt h = new HandBuilt()) {
            // offset 3: the validity bitmap is shifted into a new buffer, the offsets rebased, the data sliced
            MemorySegment schema = HandBuilt.rootSchema(h.schema("u", "t"));
            MemorySegment array = HandBuilt.rootArray(h.array(2, 1, 3, new MemorySegment[] {
                h.bits(true, true, true, false, true), h.ints(0, 1, 2, 3, 5, 8), h.utf8("abcdefgh")}));
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 FieldVector v = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(List.of("null", "fgh"), List.of(String.valueOf(v.getObject(0)), String.valueOf(v.getObject(1))));
                assertEquals(1, v.getValidityBuffer().readableBytes());
                assertEquals(12, v.getOffsetBuffer().readableBytes(), "3 rebased offsets");
                assertEquals(5, v.getOffsetBuffer().getInt(8));
                assertEquals(5, v.getDataBuffer().readableBytes(), "the bytes of rows 3 and 4 only");
            }
        }
    }

    // ---------------------------------------------------------------- plain fields

    @Test
    void importedFieldsArePlainFieldsAndTheSchemaJsonIsTheSources() {
        try (FieldVector list = ExportTestSupport.list(org.apache.arrow.vector.complex.ListVector.empty("l", allocator), 6, true);
             FieldVector struct = ExportTestSupport.struct(allocator, "s", 6, true);
             FieldVector map = ExportTestSupport.map(allocator, 6, true);
             FieldVector ints = new Field("meta", new FieldType(true, new ArrowType.Int(16, false), null,
                     Map.of("b", "2", "a", "1", "unit", "ms")), null).createVector(allocator);
             Arena arena = Arena.ofConfined()) {
            ints.setValueCount(6);
            Schema schema = new Schema(List.of(list.getField(), struct.getField(), map.getField(), ints.getField()),
                    Map.of("origin", "test", "z", "last"));
            try (VectorSchemaRoot root = new VectorSchemaRoot(schema, List.of(list, struct, map, ints), 6)) {
                MemorySegment array = arena.allocate(ArrowArray.layout());
                MemorySegment schemaStruct = arena.allocate(ArrowSchema.layout());
                ArrowJava.exportRoot(root, null, array, schemaStruct);
                try (ImportedSchema s = ArrowC.importSchema(schemaStruct);
                     VectorSchemaRoot ours = ArrowJava.importVectorSchemaRoot(allocator,
                             ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                    assertEquals(schema.toJson(), ours.getSchema().toJson(), "character for character");
                    ours.getSchema().getFields().forEach(ArrowJavaFidelityTest::assertPlain);
                    ours.getFieldVectors().forEach(v -> assertPlain(v.getField()));
                    assertPlain(ArrowJava.toField(s.root().children().get(0)));
                }
            }
        }
    }

    private static void assertPlain(Field f) {
        assertSame(Field.class, f.getClass(), f.getName());
        f.getChildren().forEach(ArrowJavaFidelityTest::assertPlain);
    }

    // ---------------------------------------------------------------- unions with unset rows

    private UnionVector unionWithUnsetRows() {
        return ExportTestSupport.sparseUnionWithUnsetRows(allocator);
    }

    private static final List<Object> UNION_VALUES = java.util.Arrays.asList(5, null, -20L, null, null, null);

    @Test
    void aSparseUnionWithUnsetRowsExportsPassesFullAndReadsNullThere() {
        try (UnionVector original = unionWithUnsetRows(); Arena arena = Arena.ofConfined()) {
            assertEquals(0, original.getTypeValue(1), "Arrow Java's unset row: type id 0");
            assertEquals(UNION_VALUES, values(original));
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportVector(original, null, array, schema);
            // the exported rows select a child that is null there (the int child: the first)
            MemorySegment types = ArrowArray.buffers(array).reinterpret(8).get(ValueLayout.ADDRESS, 0).reinterpret(6);
            int intId = MinorType.INT.ordinal();
            for (int row : new int[] {1, 3, 5}) {
                assertEquals(intId, types.get(ValueLayout.JAVA_BYTE, row), "row " + row);
            }
            assertEquals(0, original.getTypeValue(1), "the vector itself is not written");
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 FieldVector ours = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(UNION_VALUES, values(ours));
                // and back through arrow-c-data: the same values
                ArrowJava.exportVector(ours, null, array, schema);
                try (CDataDictionaryProvider p = new CDataDictionaryProvider();
                     FieldVector peer = Data.importVector(allocator, org.apache.arrow.c.ArrowArray.wrap(array.address()),
                             org.apache.arrow.c.ArrowSchema.wrap(schema.address()), p)) {
                    assertEquals(UNION_VALUES, values(peer));
                }
            }
        }
    }

    @Test
    void aBatchWithUnsetRowsMatchesTheSchemaExportedBeforeIt() {
        try (UnionVector u = unionWithUnsetRows(); VectorSchemaRoot root = new VectorSchemaRoot(List.of((FieldVector) u));
             Arena arena = Arena.ofConfined()) {
            root.setRowCount(6);
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            MemorySegment array = arena.allocate(ArrowArray.layout());
            ArrowJava.exportSchema(root.getSchema(), null, schema); // once, as a stream does, before any batch
            ArrowJava.exportRoot(root, null, array, null);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 VectorSchemaRoot ours = ArrowJava.importVectorSchemaRoot(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(root.getSchema(), ours.getSchema(), "no child added: the schema is the vector's");
                assertEquals(UNION_VALUES, values(ours.getVector(0)));
            }
        }
    }

    @Test
    void unsetRowsWhereNoChildIsNullAndIdsArrowJavaCannotExplainAreStillRefused() {
        try (UnionVector u = unionWithUnsetRows(); Arena arena = Arena.ofConfined()) {
            u.getIntVector().setSafe(3, 1); // every child now holds a value at unset row 3
            u.getBigIntVector().setSafe(3, 1L);
            MemorySegment array = arena.allocate(ArrowArray.layout());
            ValidationException e = assertThrows(ValidationException.class, () -> ArrowJava.exportVector(u, null, array, null));
            assertEquals(ValidationException.Category.CONTENT, e.category());
            assertTrue(e.getMessage().contains("index 3") && e.getMessage().contains("no child is null"), e.getMessage());
            assertEquals(0L, ArrowArray.release(array).address(), "the output is untouched");
            u.getTypeBuffer().setByte(3, 99); // no minor type has that number
            e = assertThrows(ValidationException.class, () -> ArrowJava.exportVector(u, null, array, null));
            assertTrue(e.getMessage().contains("type id 99 at index 3"), e.getMessage());
        }
    }

    private static List<Object> values(FieldVector v) {
        List<Object> out = new java.util.ArrayList<>();
        for (int i = 0; i < v.getValueCount(); i++) {
            out.add(v.getObject(i));
        }
        return out;
    }
}
