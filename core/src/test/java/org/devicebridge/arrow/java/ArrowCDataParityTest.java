package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseVariableWidthViewVector;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.extension.UuidType;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Parity with Arrow Java's own C Data module: every vector type Arrow Java has ({@link ExportTestSupport#FAMILIES}),
 * whole, sliced (Arrow Java's {@code VectorSchemaRoot.slice}), empty, with and without nulls, dictionaries
 * included, goes round through the bridge (its export, its import at FULL) and round through arrow-c-data
 * ({@code Data.export...}, {@code Data.import...}); both must give the same schema (and {@code toJson()}), the
 * same vector fields and classes, the same values, the same dictionaries and the same readable bytes in every
 * buffer. The deliberate differences are each named by a test below ({@code difference...}), and listed in
 * {@code docs/arrow-java.md}.
 */
class ArrowCDataParityTest extends ArrowTestSupport {
    private final ExportTestSupport.Baseline exports = new ExportTestSupport.Baseline();

    @BeforeAll
    static void loadUuid() {
        assertNotNull(UuidType.INSTANCE); // Arrow Java registers it when the class loads
    }

    @Override
    @AfterEach
    protected void checkNothingLeaked() {
        exports.assertNothingLeaked(allocator);
        super.checkNothingLeaked();
    }

    enum Shape { WHOLE, SLICED, EMPTY }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String family : ExportTestSupport.FAMILIES) {
            for (Shape shape : Shape.values()) {
                for (boolean nulls : new boolean[] {false, true}) {
                    out.add(Arguments.of(family, shape, nulls));
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} nulls={2}")
    @MethodSource("cases")
    void theBridgesRoundTripGivesWhatArrowCDatasGives(String family, Shape shape, boolean nulls) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        int rows = shape == Shape.EMPTY ? 0 : 37;
        List<FieldVector> vectors = ExportTestSupport.family(family, allocator, rows, nulls, dictionaries);
        try (VectorSchemaRoot built = new VectorSchemaRoot(vectors)) {
            built.setRowCount(rows);
            try (VectorSchemaRoot source = shape == Shape.SLICED ? built.slice(5, 20) : null) {
                compare(source == null ? built : source, dictionaries);
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    private void compare(VectorSchemaRoot source, DictionaryProvider dictionaries) {
        try (DictionaryProvider.MapDictionaryProvider ourDictionaries = new DictionaryProvider.MapDictionaryProvider();
             CDataDictionaryProvider peerDictionaries = new CDataDictionaryProvider();
             VectorSchemaRoot ours = throughBridge(source, dictionaries, ourDictionaries);
             VectorSchemaRoot peer = throughCData(source, dictionaries, peerDictionaries)) {
            for (int i = 0; i < source.getFieldVectors().size(); i++) { // first: nothing has read them yet
                assertEquals(readable(peer.getVector(i)), readable(ours.getVector(i)), "readable bytes of every buffer");
            }
            assertEquals(peer.getSchema(), ours.getSchema());
            assertEquals(peer.getSchema().toJson(), ours.getSchema().toJson());
            if (!hasDictionary(source.getSchema())) { // the C interface carries no dictionary id: both renumber
                assertEquals(source.getSchema().toJson(), ours.getSchema().toJson());
            }
            assertEquals(source.getRowCount(), ours.getRowCount());
            for (int i = 0; i < source.getFieldVectors().size(); i++) {
                FieldVector want = source.getVector(i);
                FieldVector o = ours.getVector(i);
                FieldVector p = peer.getVector(i);
                assertEquals(p.getField(), o.getField());
                assertEquals(p.getClass(), o.getClass());
                for (int r = 0; r < source.getRowCount(); r++) {
                    assertTrue(Objects.deepEquals(want.getObject(r), o.getObject(r)), want.getName() + "[" + r + "]");
                    assertTrue(Objects.deepEquals(p.getObject(r), o.getObject(r)), want.getName() + "[" + r + "]");
                }
                if (o.getField().getDictionary() != null) {
                    Dictionary od = ourDictionaries.lookup(o.getField().getDictionary().getId());
                    Dictionary pd = peerDictionaries.lookup(p.getField().getDictionary().getId());
                    assertEquals(pd.getVector().getField(), od.getVector().getField());
                    assertEquals(readable(pd.getVector()), readable(od.getVector()));
                    assertTrue(VectorEqualsVisitor.vectorEquals(pd.getVector(), od.getVector()), "dictionary values");
                }
            }
        }
    }

    private VectorSchemaRoot throughBridge(VectorSchemaRoot source, DictionaryProvider dictionaries,
                                           DictionaryProvider.MapDictionaryProvider into) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportRoot(source, dictionaries, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                return ArrowJava.importVectorSchemaRoot(allocator,
                        ArrowC.importArray(s.root(), array, ValidationLevel.FULL), into);
            }
        }
    }

    private VectorSchemaRoot throughCData(VectorSchemaRoot source, DictionaryProvider dictionaries,
                                          CDataDictionaryProvider into) {
        try (org.apache.arrow.c.ArrowArray a = org.apache.arrow.c.ArrowArray.allocateNew(allocator);
             org.apache.arrow.c.ArrowSchema s = org.apache.arrow.c.ArrowSchema.allocateNew(allocator)) {
            Data.exportVectorSchemaRoot(allocator, source, dictionaries, a, s);
            return Data.importVectorSchemaRoot(allocator, a, s, into);
        }
    }

    private static boolean hasDictionary(Schema schema) {
        return schema.getFields().stream().anyMatch(ArrowCDataParityTest::hasDictionary);
    }

    private static boolean hasDictionary(Field f) {
        return f.getDictionary() != null || f.getChildren().stream().anyMatch(ArrowCDataParityTest::hasDictionary);
    }

    /**
     * The readable bytes of each buffer of {@code v} and its children, read through the accessors a user calls
     * ({@code getFieldBuffers()} would reset the writer indexes first).
     */
    private static List<String> readable(FieldVector v) {
        List<String> out = new ArrayList<>();
        readable(v, v.getName(), out);
        return out;
    }

    private static void readable(FieldVector vector, String path, List<String> out) {
        FieldVector v = vector instanceof ExtensionTypeVector<?> e ? e.getUnderlyingVector() : vector;
        out.add(path + " validity=" + bytes(() -> v.getValidityBuffer()) + " data=" + bytes(() -> v.getDataBuffer())
                + " offsets=" + bytes(() -> v.getOffsetBuffer()));
        if (v instanceof BaseVariableWidthViewVector view) {
            for (ArrowBuf b : view.getDataBuffers()) {
                out.add(path + " variadic=" + b.readableBytes());
            }
        }
        List<FieldVector> children = v.getChildrenFromFields();
        for (int i = 0; children != null && i < children.size(); i++) {
            readable(children.get(i), path + "." + children.get(i).getName(), out);
        }
    }

    private static String bytes(java.util.function.Supplier<ArrowBuf> buffer) {
        try {
            ArrowBuf b = buffer.get();
            return b == null ? "none" : String.valueOf(b.readableBytes());
        } catch (UnsupportedOperationException e) {
            return "n/a"; // the vector has no such buffer
        }
    }

    // ---------------------------------------------------------------- the deliberate differences

    private IntVector ints(int n) {
        IntVector v = new IntVector("i", allocator);
        v.allocateNew(n);
        for (int i = 0; i < n; i++) {
            v.set(i, 100 + i);
        }
        v.setValueCount(n);
        return v;
    }

    @Test
    void differenceAnOffsetIsHonouredWhereArrowCDataReadsTheFirstRows() {
        try (IntVector source = ints(8); Exported forUs = export(source); Exported forThem = export(source)) {
            for (Exported e : new Exported[] {forUs, forThem}) {
                ArrowArray.offset(e.arrayStruct(), 3);
                ArrowArray.length(e.arrayStruct(), 4);
            }
            try (ImportedSchema s = ArrowC.importSchema(forUs.schemaPtr());
                 FieldVector ours = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(s.root(), forUs.arrayPtr(), ValidationLevel.FULL), null);
                 CDataDictionaryProvider p = new CDataDictionaryProvider();
                 FieldVector peer = Data.importVector(allocator, org.apache.arrow.c.ArrowArray.wrap(forThem.arrayPtr().address()),
                         org.apache.arrow.c.ArrowSchema.wrap(forThem.schemaPtr().address()), p)) {
                assertEquals(List.of(103, 104, 105, 106), List.of(ours.getObject(0), ours.getObject(1), ours.getObject(2), ours.getObject(3)));
                assertEquals(List.of(100, 101, 102, 103), List.of(peer.getObject(0), peer.getObject(1), peer.getObject(2), peer.getObject(3)),
                        "arrow-c-data 19 ignores the offset");
            }
        }
    }

    @Test
    void differenceAMissingBufferIsATypedErrorWithAPathWhereArrowCDataThrowsAnUntypedOne() {
        try (HandBuilt h = new HandBuilt()) {
            MemorySegment[][] sa = new MemorySegment[2][];
            for (int k = 0; k < 2; k++) {
                sa[k] = new MemorySegment[] {HandBuilt.rootSchema(h.schema("i", "i")),
                    HandBuilt.rootArray(h.array(2, 0, 0, new MemorySegment[] {null, null}))};
            }
            ValidationException ours = assertThrows(ValidationException.class, () -> {
                try (ImportedSchema s = ArrowC.importSchema(sa[0][0])) {
                    ArrowJava.importFieldVector(allocator, ArrowC.importArray(s.root(), sa[0][1], ValidationLevel.FULL), null)
                            .close();
                }
            });
            assertTrue(ours.path().contains("buffers[1]"), ours.path());
            assertTrue(HandBuilt.released(sa[0][1], false), "released on the throw");
            try (CDataDictionaryProvider p = new CDataDictionaryProvider()) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Data.importVector(allocator,
                        org.apache.arrow.c.ArrowArray.wrap(sa[1][1].address()),
                        org.apache.arrow.c.ArrowSchema.wrap(sa[1][0].address()), p).close());
                assertInstanceOf(IllegalStateException.class, e.getCause(), "arrow-c-data 19: no field path, no category");
            }
            assertTrue(HandBuilt.released(sa[1][1], false));
        }
    }

    @Test
    void differenceARegisteredExtensionTypeThatRefusesItsStorageIsATypedErrorNamingTheField() {
        try (HandBuilt h = new HandBuilt()) {
            Map<String, String> md = Map.of("ARROW:extension:name", UuidType.EXTENSION_NAME, "ARROW:extension:metadata", "");
            MemorySegment[] schemas = new MemorySegment[2];
            for (int k = 0; k < 2; k++) {
                schemas[k] = HandBuilt.rootSchema(h.schema("+s", "", 0, Map.of(), h.schema("w:8", "id", 2, md)));
            }
            MemorySegment array = HandBuilt.rootArray(h.array(0, 0, 0, new MemorySegment[] {null},
                    h.array(0, 0, 0, new MemorySegment[] {null, null})));
            try (ImportedSchema s = ArrowC.importSchema(schemas[0])) {
                UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class, () ->
                        ArrowJava.importVectorSchemaRoot(allocator, ArrowC.importArray(s.root(), array, ValidationLevel.FULL),
                                null).close());
                assertEquals("children[0]", e.path());
                assertTrue(HandBuilt.released(array, false), "released on the throw");
            }
            try (CDataDictionaryProvider p = new CDataDictionaryProvider()) {
                assertThrows(UnsupportedOperationException.class, () -> Data.importField(allocator,
                        org.apache.arrow.c.ArrowSchema.wrap(schemas[1].address()), p), "arrow-c-data: UuidType's own exception");
            }
        }
    }

    @Test
    void differenceAnExtensionNameOnADictionaryEncodedFieldKeepsTheIndexTypeWhereArrowCDataDeserializesTheIndexType() {
        try (HandBuilt h = new HandBuilt()) {
            Map<String, String> md = Map.of("ARROW:extension:name", UuidType.EXTENSION_NAME, "ARROW:extension:metadata", "");
            MemorySegment[] schemas = new MemorySegment[2];
            for (int k = 0; k < 2; k++) {
                schemas[k] = HandBuilt.rootSchema(HandBuilt.withDictionary(h.schema("i", "id", 2, md), h.schema("w:16", "")));
            }
            try (ImportedSchema s = ArrowC.importSchema(schemas[0])) {
                Field ours = ArrowJava.toField(s.root());
                assertEquals(new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, true), ours.getType());
                assertNotNull(ours.getDictionary());
                assertEquals(md, ours.getMetadata());
            }
            try (CDataDictionaryProvider p = new CDataDictionaryProvider()) {
                assertThrows(UnsupportedOperationException.class, () -> Data.importField(allocator,
                        org.apache.arrow.c.ArrowSchema.wrap(schemas[1].address()), p));
            }
        }
    }

    @Test
    void differenceUnsetUnionRowsExportAsValidDataWhereArrowCDataExportsIdsThatSelectNoChild() {
        try (UnionVector u = ExportTestSupport.sparseUnionWithUnsetRows(allocator); Exported theirs = export(u)) {
            // arrow-c-data's export keeps type id 0 for the unset rows, which no child of the union has
            try (ImportedSchema s = ArrowC.importSchema(theirs.schemaPtr())) {
                ValidationException e = assertThrows(ValidationException.class,
                        () -> ArrowC.importArray(s.root(), theirs.arrayPtr(), ValidationLevel.FULL).close());
                assertEquals(ValidationException.Category.CONTENT, e.category());
            }
            try (Arena arena = Arena.ofConfined()) { // the bridge's export of the same vector is valid at FULL
                MemorySegment array = arena.allocate(ArrowArray.layout());
                MemorySegment schema = arena.allocate(ArrowSchema.layout());
                ArrowJava.exportVector(u, null, array, schema);
                try (ImportedSchema s = ArrowC.importSchema(schema)) {
                    ArrowC.importArray(s.root(), array, ValidationLevel.FULL).close();
                }
            }
        }
    }

    @Test
    void differenceAStreamsSchemaIsReadAtImportWhereArrowCDataReadsItOnFirstUse() throws IOException {
        try (ArrowArrayStream forUs = ArrowArrayStream.allocateNew(allocator);
             ArrowArrayStream forThem = ArrowArrayStream.allocateNew(allocator)) {
            Data.exportArrayStream(allocator, new NoSchemaReader(allocator), forUs);
            Data.exportArrayStream(allocator, new NoSchemaReader(allocator), forThem);
            DeviceBridgeException e = assertThrows(DeviceBridgeException.class,
                    () -> ArrowC.importStream(MemorySegment.ofAddress(forUs.memoryAddress())).close());
            assertTrue(e.getMessage().contains("no schema"), e.getMessage());
            try (ArrowReader reader = Data.importArrayStream(allocator, forThem)) { // accepted
                assertInstanceOf(IOException.class, assertThrows(IOException.class, reader::getVectorSchemaRoot));
            }
        }
    }

    /** An Arrow Java reader whose schema cannot be read. */
    private static final class NoSchemaReader extends ArrowReader {
        NoSchemaReader(BufferAllocator allocator) {
            super(allocator);
        }

        @Override
        public boolean loadNextBatch() {
            return false;
        }

        @Override
        public long bytesRead() {
            return 0;
        }

        @Override
        protected void closeReadSource() {
        }

        @Override
        protected Schema readSchema() throws IOException {
            throw new IOException("no schema");
        }
    }
}
