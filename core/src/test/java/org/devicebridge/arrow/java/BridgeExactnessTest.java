package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What the Arrow Java bridge must carry exactly both ways (issue 13): schema metadata, non-canonical map
 * names, decimal32/decimal64 (narrowed on export to 4/8-byte values, widened on import into Arrow Java's own
 * layout), nested dictionaries. Arrow Java data goes out through this library and comes back through it, and
 * through arrow-c-data where arrow-c-data is right; nothing is left held.
 */
class BridgeExactnessTest extends ArrowTestSupport {
    private final ExportTestSupport.Baseline exports = new ExportTestSupport.Baseline();

    @Override
    @org.junit.jupiter.api.AfterEach
    protected void checkNothingLeaked() {
        exports.assertNothingLeaked(allocator);
        super.checkNothingLeaked();
    }

    // ---------------------------------------------------------------- metadata and map names

    /** A root with schema metadata, a map whose entries, key and value are not named canonically, and a list. */
    private VectorSchemaRoot mapRoot(int rows) {
        Field entries = new Field("some_entries", FieldType.notNullable(ArrowType.Struct.INSTANCE), List.of(
                Field.notNullable("some_key", ArrowType.Utf8.INSTANCE), Field.nullable("some_value", new ArrowType.Int(32, true))));
        Field map = new Field("m", new FieldType(true, new ArrowType.Map(false), null, Map.of("field", "kept")),
                List.of(entries));
        Schema schema = new Schema(List.of(map), Map.of("origin", "parquet", "rows", String.valueOf(rows)));
        VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
        MapVector m = (MapVector) root.getVector(0);
        m.allocateNew();
        StructVector e = (StructVector) m.getDataVector();
        VarCharVector keys = (VarCharVector) e.getChildrenFromFields().get(0);
        IntVector values = (IntVector) e.getChildrenFromFields().get(1);
        int total = 0;
        for (int r = 0; r < rows; r++) {
            if (r % 4 == 1) {
                m.setNull(r);
                continue;
            }
            int start = m.startNewValue(r);
            for (int k = 0; k < r % 3; k++) {
                e.setIndexDefined(start + k);
                keys.setSafe(start + k, ("k" + k).getBytes(StandardCharsets.UTF_8));
                values.setSafe(start + k, r * 10 + k);
            }
            m.endValue(r, r % 3);
            total = start + r % 3;
        }
        keys.setValueCount(total);
        values.setValueCount(total);
        e.setValueCount(total);
        root.setRowCount(rows);
        return root;
    }

    @ParameterizedTest(name = "{0} rows")
    @MethodSource("rowCounts")
    void schemaMetadataAndMapNamesSurviveBothWays(int rows) {
        try (VectorSchemaRoot original = mapRoot(rows); Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportRoot(original, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 VectorSchemaRoot ours = ArrowJava.importVectorSchemaRoot(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(original.getSchema(), ours.getSchema(), "names, field and schema metadata kept");
                assertEquals(original.contentToTSVString(), ours.contentToTSVString());
                // the other way: ours exported again, read by arrow-c-data, which keeps them the same way
                ArrowJava.exportRoot(ours, null, array, schema);
                try (CDataDictionaryProvider p = new CDataDictionaryProvider();
                     VectorSchemaRoot peer = Data.importVectorSchemaRoot(allocator,
                             org.apache.arrow.c.ArrowArray.wrap(array.address()), org.apache.arrow.c.ArrowSchema.wrap(schema.address()), p)) {
                    assertEquals(original.getSchema(), peer.getSchema());
                    assertEquals(original.contentToTSVString(), peer.contentToTSVString());
                }
            }
        }
    }

    static Stream<Integer> rowCounts() {
        return Stream.of(0, 1, 9);
    }

    @Test
    void aHandWrittenRootKeepsItsMetadataAsArrowCDataDoes() {
        try (HandBuilt h = new HandBuilt()) {
            MemorySegment[][] sa = new MemorySegment[2][];
            for (int k = 0; k < 2; k++) {
                MemorySegment schema = HandBuilt.rootSchema(h.schema("+s", "", 0, Map.of("k", "v"),
                        h.schema("i", "x", 2, Map.of("unit", "m"))));
                MemorySegment array = HandBuilt.rootArray(h.array(2, 0, 0, new MemorySegment[] {null},
                        h.array(2, 0, 0, new MemorySegment[] {null, h.ints(1, 2)})));
                sa[k] = new MemorySegment[] {schema, array};
            }
            try (ImportedSchema s = ArrowC.importSchema(sa[0][0]);
                 VectorSchemaRoot ours = ArrowJava.importVectorSchemaRoot(allocator,
                         ArrowC.importArray(s.root(), sa[0][1], ValidationLevel.DEFAULT), null);
                 CDataDictionaryProvider p = new CDataDictionaryProvider();
                 VectorSchemaRoot peer = Data.importVectorSchemaRoot(allocator,
                         org.apache.arrow.c.ArrowArray.wrap(sa[1][1].address()), org.apache.arrow.c.ArrowSchema.wrap(sa[1][0].address()), p)) {
                assertEquals(Map.of("k", "v"), ours.getSchema().getCustomMetadata());
                assertEquals(peer.getSchema(), ours.getSchema());
            }
        }
    }

    // ---------------------------------------------------------------- decimal32 / decimal64

    static Stream<Arguments> decimals() {
        List<Arguments> out = new ArrayList<>();
        for (int bits : new int[] {32, 64}) {
            for (String nulls : new String[] {"none", "some", "all"}) {
                for (int[] w : new int[][] {{0, 11}, {3, 5}, {0, 0}, {11, 0}}) {
                    out.add(Arguments.of(bits, nulls, w[0], w[1]));
                }
            }
        }
        return out.stream();
    }

    /** A DecimalVector (Arrow Java's 16-byte layout) under a field of {@code bits} bits, as Arrow Java holds it. */
    private DecimalVector decimals(int bits, String nulls, int rows) {
        int precision = bits == 32 ? 9 : 18;
        DecimalVector v = new DecimalVector(new Field("d", FieldType.nullable(new ArrowType.Decimal(precision, 2, bits)), null),
                allocator);
        v.allocateNew(rows);
        long max = bits == 32 ? 999_999_999L : 999_999_999_999_999_999L;
        for (int i = 0; i < rows; i++) {
            long unscaled = switch (i % 4) {
                case 0 -> max;
                case 1 -> -max;
                case 2 -> -1;
                default -> i * 12345L;
            };
            v.setSafe(i, BigDecimal.valueOf(unscaled, 2));
            if (nulls.equals("all") || (nulls.equals("some") && i % 3 == 1)) {
                v.setNull(i); // the slot keeps its bytes: the export writes 0 there
            }
        }
        v.setValueCount(rows);
        return v;
    }

    @ParameterizedTest(name = "decimal{0} nulls={1} offset {2} length {3}")
    @MethodSource("decimals")
    void decimal32And64AreNarrowedExactlyOnExportAndWidenedExactlyOnImport(int bits, String nulls, int offset, int length) {
        try (DecimalVector original = decimals(bits, nulls, 11); Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportVector(original, null, array, schema);
            assertEquals("d:" + (bits == 32 ? 9 : 18) + ",2," + bits, ArrowSchema.format(schema).getString(0));
            MemorySegment data = ArrowArray.buffers(array).reinterpret(16).getAtIndex(ValueLayout.ADDRESS, 1)
                    .reinterpret(11L * bits / 8);
            for (int i = 0; i < 11; i++) {
                long got = bits == 32 ? data.getAtIndex(ValueLayout.JAVA_INT, i) : data.getAtIndex(ValueLayout.JAVA_LONG, i);
                long want = original.isNull(i) ? 0 : original.getObject(i).unscaledValue().longValueExact();
                assertEquals(want, got, "exported value " + i + " is the " + bits + "-bit unscaled value");
            }
            ArrowArray.offset(array, offset);
            ArrowArray.length(array, length);
            ArrowArray.null_count(array, -1);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 FieldVector back = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(original.getField().getType(), back.getField().getType(), "declared width kept");
                assertTrue(back instanceof DecimalVector, "Arrow Java's own layout: " + back.getClass());
                for (int i = 0; i < length; i++) {
                    assertEquals(original.getObject(offset + i), back.getObject(i), "row " + i);
                }
            }
        }
    }

    @Test
    void handWrittenDecimal32And64AreWidenedAtTheirOffset() {
        try (HandBuilt h = new HandBuilt()) {
            MemorySegment s32 = HandBuilt.rootSchema(h.schema("d:9,2,32", "d"));
            MemorySegment a32 = HandBuilt.rootArray(h.array(3, 1, 1, new MemorySegment[] {h.bits(true, true, false, true),
                    h.ints(5, -999_999_999, 7, 123)}));
            MemorySegment s64 = HandBuilt.rootSchema(h.schema("d:18,3,64", "d"));
            MemorySegment a64 = HandBuilt.rootArray(h.array(2, 0, 2, new MemorySegment[] {null,
                    h.longs(0, 0, Long.MIN_VALUE / 10, 999_999_999_999_999_999L)}));
            try (ImportedSchema i32 = ArrowC.importSchema(s32); ImportedSchema i64 = ArrowC.importSchema(s64);
                 FieldVector v32 = ArrowJava.importFieldVector(allocator, ArrowC.importArray(i32.root(), a32, ValidationLevel.FULL), null);
                 FieldVector v64 = ArrowJava.importFieldVector(allocator, ArrowC.importArray(i64.root(), a64, ValidationLevel.DEFAULT), null)) {
                assertEquals(new BigDecimal("-9999999.99"), v32.getObject(0));
                assertEquals(null, v32.getObject(1));
                assertEquals(new BigDecimal("1.23"), v32.getObject(2));
                assertEquals(BigDecimal.valueOf(Long.MIN_VALUE / 10, 3), v64.getObject(0));
                assertEquals(BigDecimal.valueOf(999_999_999_999_999_999L, 3), v64.getObject(1));
            }
        }
    }

    @Test
    void aDecimalThatDoesNotFitItsDeclaredWidthIsRefusedAndNothingIsHeld() {
        try (DecimalVector v = decimals(32, "none", 4); Arena arena = Arena.ofConfined()) {
            v.getDataBuffer().setLong(2 * 16, 1L << 40); // Arrow Java's own setters check precision, a producer need not
            v.getDataBuffer().setLong(2 * 16 + 8, 0);
            MemorySegment array = arena.allocate(ArrowArray.layout());
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrowJava.exportVector(v, null, array, null));
            assertEquals(ValidationException.Category.CONTENT, e.category());
            assertTrue(e.getMessage().contains("index 2"), e.getMessage());
            assertEquals(0L, ArrowArray.release(array).address(), "the output is untouched");
        }
    }

    // ---------------------------------------------------------------- nested dictionaries

    @Test
    void nestedDictionariesDecodeExactlyBothWays() {
        // words <- codes (dictionary-encoded by words) <- column (dictionary-encoded by codes)
        DictionaryEncoding byWords = new DictionaryEncoding(11, false, new ArrowType.Int(32, true));
        DictionaryEncoding byCodes = new DictionaryEncoding(12, false, new ArrowType.Int(32, true));
        DictionaryProvider.MapDictionaryProvider dicts = new DictionaryProvider.MapDictionaryProvider();
        VarCharVector words = new VarCharVector("words", allocator);
        IntVector codes = new IntVector("codes", new FieldType(false, new ArrowType.Int(32, true), byWords), allocator);
        IntVector column = new IntVector("c", new FieldType(true, new ArrowType.Int(32, true), byCodes), allocator);
        try (words; codes; column; Arena arena = Arena.ofConfined()) {
            String[] w = {"alpha", "beta", "gamma"};
            for (int i = 0; i < w.length; i++) {
                words.setSafe(i, w[i].getBytes(StandardCharsets.UTF_8));
            }
            words.setValueCount(3);
            int[] c = {2, 0, 1, 1};
            for (int i = 0; i < c.length; i++) {
                codes.setSafe(i, c[i]);
            }
            codes.setValueCount(4);
            int[] col = {3, 0, -1, 2, 1};
            for (int i = 0; i < col.length; i++) {
                if (col[i] < 0) {
                    column.setNull(i);
                } else {
                    column.setSafe(i, col[i]);
                }
            }
            column.setValueCount(col.length);
            dicts.put(new Dictionary(words, byWords));
            dicts.put(new Dictionary(codes, byCodes));
            List<String> want = decode(column, dicts);
            assertEquals(List.of("beta", "gamma", "null", "beta", "alpha"), want);

            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportVector(column, dicts, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 DictionaryProvider.MapDictionaryProvider ours = new DictionaryProvider.MapDictionaryProvider();
                 FieldVector back = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), ours)) {
                assertEquals(want, decode(back, ours));
                assertEquals(2, ours.getDictionaryIds().size(), "both dictionaries, each under its own id");
                // and ours exported again, read by arrow-c-data (which renumbers ids: it decodes the same)
                ArrowJava.exportVector(back, ours, array, schema);
                try (CDataDictionaryProvider p = new CDataDictionaryProvider();
                     FieldVector peer = Data.importVector(allocator, org.apache.arrow.c.ArrowArray.wrap(array.address()),
                             org.apache.arrow.c.ArrowSchema.wrap(schema.address()), p)) {
                    assertEquals(want, decode(peer, p));
                }
            }
        }
    }

    /** The words of {@code column} through its chain of dictionaries. */
    private static List<String> decode(FieldVector column, DictionaryProvider provider) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < column.getValueCount(); i++) {
            FieldVector v = column;
            int index = i;
            while (v.getField().getDictionary() != null && !v.isNull(index)) {
                Dictionary d = provider.lookup(v.getField().getDictionary().getId());
                assertNotNull(d, "dictionary " + v.getField().getDictionary().getId());
                index = ((IntVector) v).get(index);
                v = d.getVector();
            }
            out.add(v.isNull(index) ? "null" : String.valueOf(v.getObject(index)));
        }
        return out;
    }
}
