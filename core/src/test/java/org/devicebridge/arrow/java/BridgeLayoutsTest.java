package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.holders.NullableBigIntHolder;
import org.apache.arrow.vector.holders.NullableIntHolder;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Valid layouts the Arrow Java bridge once refused or misread (issue 13): dense unions whose children differ in
 * type (or share a name), unions nested in fixed-size lists and in unions, lists of structs sliced to nothing,
 * sparse unions with any type ids. Each is written by hand as a C producer would, imported into Arrow Java,
 * compared with arrow-c-data's reading of the same structs where arrow-c-data reads it right, exported again by
 * this library and imported back; every root struct is released exactly once, on success and on a throw.
 */
class BridgeLayoutsTest extends ArrowTestSupport {
    /** Dense union rows: the child of each row (0 int32 'a', 1 utf8 'b', 2 list<int32> 'c'). */
    private static final int[] CHILD_OF_ROW = {0, 1, 2, 1, 0, 2, 0};
    private static final String[] ROW_VALUES = {"10", "p", "[1,2]", "qq", "null", "[]", "30"};

    static Stream<Arguments> denseWindows() {
        List<Arguments> out = new ArrayList<>();
        for (String names : new String[] {"distinct", "shared", "empty"}) {
            for (int[] w : new int[][] {{0, 7}, {2, 3}, {1, 0}, {7, 0}, {4, 3}}) {
                for (ValidationLevel level : new ValidationLevel[] {ValidationLevel.DEFAULT, ValidationLevel.FULL}) {
                    out.add(Arguments.of(names, w[0], w[1], level));
                }
            }
        }
        return out.stream();
    }

    /** A dense union of int32, utf8 and list<int32> children, type ids 3, 1, 2 (not in child order). */
    private static MemorySegment[] denseUnion(HandBuilt h, String names, long offset, long length) {
        String[] n = switch (names) {
            case "distinct" -> new String[] {"a", "b", "c"};
            case "shared" -> new String[] {"x", "x", "x"};
            default -> new String[] {"", "", ""};
        };
        int[] declared = {3, 1, 2};
        int[] types = new int[CHILD_OF_ROW.length];
        int[] offsets = new int[CHILD_OF_ROW.length];
        int[] seen = new int[3];
        for (int r = 0; r < CHILD_OF_ROW.length; r++) {
            types[r] = declared[CHILD_OF_ROW[r]];
            offsets[r] = seen[CHILD_OF_ROW[r]]++;
        }
        MemorySegment schema = h.schema("+ud:3,1,2", "u", h.schema("i", n[0]), h.schema("u", n[1]),
                h.schema("+l", n[2], h.schema("i", "item")));
        MemorySegment a = h.array(3, 1, 0, new MemorySegment[] {h.bits(true, false, true), h.ints(10, 0, 30)});
        MemorySegment b = h.array(2, 0, 0, new MemorySegment[] {null, h.ints(0, 1, 3), h.utf8("pqq")});
        MemorySegment c = h.array(2, 0, 0, new MemorySegment[] {null, h.ints(0, 2, 2)},
                h.array(2, 0, 0, new MemorySegment[] {null, h.ints(1, 2)}));
        MemorySegment union = h.array(length, 0, offset, new MemorySegment[] {h.bytes(types), h.ints(offsets)}, a, b, c);
        return new MemorySegment[] {HandBuilt.rootSchema(schema), HandBuilt.rootArray(union)};
    }

    @ParameterizedTest(name = "{0} names, offset {1} length {2} at {3}")
    @MethodSource("denseWindows")
    void denseUnionChildrenOfDifferentTypesKeepTheirValues(String names, int offset, int length, ValidationLevel level) {
        try (HandBuilt h = new HandBuilt()) {
            MemorySegment[] sa = denseUnion(h, names, offset, length);
            List<String> want = List.of(ROW_VALUES).subList(offset, offset + length);
            int releases = HandBuilt.ARRAY_RELEASES.get();
            try (ImportedSchema s = ArrowC.importSchema(sa[0]);
                 FieldVector v = ArrowJava.importFieldVector(allocator, ArrowC.importArray(s.root(), sa[1], level), null)) {
                assertEquals(want, values(v));
                assertEquals(releases, HandBuilt.ARRAY_RELEASES.get(), "the vectors hold the struct");
                assertEquals(want, roundTrip(v), "exported by this library and imported back");
            }
            assertEquals(releases + 1, HandBuilt.ARRAY_RELEASES.get(), "released once, with the last vector");
            if (names.equals("distinct") && offset == 0) { // arrow-c-data: no shared names, no union offset
                MemorySegment[] again = denseUnion(h, names, offset, length);
                try (CDataDictionaryProvider p = new CDataDictionaryProvider();
                     FieldVector peer = Data.importVector(allocator, org.apache.arrow.c.ArrowArray.wrap(again[1].address()),
                             org.apache.arrow.c.ArrowSchema.wrap(again[0].address()), p)) {
                    assertEquals(want, values(peer), "arrow-c-data reads the same values");
                }
            }
        }
    }

    @Test
    void aDenseUnionOfNoRowsLoads() {
        try (HandBuilt h = new HandBuilt()) {
            MemorySegment schema = HandBuilt.rootSchema(h.schema("+ud:0,1", "u", h.schema("i", "x"), h.schema("u", "x")));
            MemorySegment array = HandBuilt.rootArray(h.array(0, 0, 0, new MemorySegment[] {null, null},
                    h.array(0, 0, 0, new MemorySegment[] {null, null}), h.array(0, 0, 0, new MemorySegment[] {null, null, null})));
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 FieldVector v = ArrowJava.importFieldVector(allocator, ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                assertEquals(0, v.getValueCount());
                assertEquals(2, v.getChildrenFromFields().size(), "both children kept");
            }
        }
    }

    /** {@code +w:1<+ud:0,1<int32, utf8>>}, {@code +w:1<+us:...>} and a dense union inside a dense union. */
    static Stream<Arguments> nestedUnions() {
        return Stream.of(
                Arguments.of("+w:1", "+ud:0,1", List.of("7", "abc")),
                Arguments.of("+w:1", "+us:4,24", List.of("7", "b")),
                Arguments.of("+ud:0,1", "+ud:0,1", List.of("7", "abc")));
    }

    @ParameterizedTest(name = "{0}<{1}<...>>")
    @MethodSource("nestedUnions")
    void unionsNestedInFixedSizeListsAndUnionsLoad(String outer, String inner, List<String> want) {
        try (HandBuilt h = new HandBuilt()) {
            boolean dense = inner.startsWith("+ud");
            MemorySegment[] innerBuffers = dense ? new MemorySegment[] {h.bytes(0, 1), h.ints(0, 0)}
                    : new MemorySegment[] {h.bytes(4, 24)};
            MemorySegment innerSchema = h.schema(inner, "u", h.schema("i", "int"), h.schema("u", "varchar"));
            MemorySegment innerArray = h.array(2, 0, 0, innerBuffers,
                    h.array(dense ? 1 : 2, 0, 0, new MemorySegment[] {null, h.ints(7, 8)}),
                    h.array(dense ? 1 : 2, 0, 0, new MemorySegment[] {null, dense ? h.ints(0, 3) : h.ints(0, 1, 2),
                            h.utf8(dense ? "abc" : "ab")}));
            MemorySegment schema;
            MemorySegment array;
            if (outer.startsWith("+w")) {
                schema = h.schema(outer, "f", innerSchema);
                array = h.array(2, 0, 0, new MemorySegment[] {null}, innerArray);
            } else {
                schema = h.schema(outer, "o", innerSchema, h.schema("i", "z"));
                array = h.array(2, 0, 0, new MemorySegment[] {h.bytes(0, 0), h.ints(0, 1)}, innerArray,
                        h.array(0, 0, 0, new MemorySegment[] {null, null}));
            }
            HandBuilt.rootSchema(schema);
            HandBuilt.rootArray(array);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 FieldVector v = ArrowJava.importFieldVector(allocator, ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                FieldVector union = outer.startsWith("+w") ? v.getChildrenFromFields().get(0) : v;
                List<String> got = outer.startsWith("+w") ? values(union) : values(v);
                assertEquals(want, got);
                assertEquals(values(v), roundTrip(v), "exported by this library and imported back");
            }
        }
    }

    @ParameterizedTest(name = "offset 1 length 0 at {0}")
    @MethodSource("levels")
    void aListOfStructsSlicedToNothingLoads(ValidationLevel level) {
        // Arrow Java's own producer: list<struct<int32>> of three rows, exported by arrow-c-data, sliced to [1, 1).
        try (ListVector list = ListVector.empty("l", allocator)) {
            StructVector st = (StructVector) list.addOrGetVector(FieldType.nullable(ArrowType.Struct.INSTANCE)).getVector();
            IntVector x = st.addOrGet("x", FieldType.nullable(new ArrowType.Int(32, true)), IntVector.class);
            list.allocateNew();
            for (int r = 0; r < 3; r++) {
                int start = list.startNewValue(r);
                for (int k = 0; k < r; k++) {
                    st.setIndexDefined(start + k);
                    x.setSafe(start + k, r * 10 + k);
                }
                list.endValue(r, r);
            }
            x.setValueCount(3);
            st.setValueCount(3);
            list.setValueCount(3);
            for (int[] w : new int[][] {{1, 0}, {3, 0}, {1, 2}, {0, 3}}) {
                try (Exported e = export(list)) {
                    org.devicebridge.generated.arrow.ArrowArray.offset(e.arrayStruct(), w[0]);
                    org.devicebridge.generated.arrow.ArrowArray.length(e.arrayStruct(), w[1]);
                    org.devicebridge.generated.arrow.ArrowArray.null_count(e.arrayStruct(), -1);
                    try (ImportedSchema s = ArrowC.importSchema(e.schemaPtr());
                         FieldVector v = ArrowJava.importFieldVector(allocator, ArrowC.importArray(s.root(), e.arrayPtr(), level), null)) {
                        assertEquals(w[1], v.getValueCount());
                        for (int i = 0; i < w[1]; i++) {
                            assertEquals(String.valueOf(list.getObject(w[0] + i)), String.valueOf(v.getObject(i)));
                        }
                        assertEquals(values(v), roundTrip(v));
                    }
                }
            }
        }
    }

    static Stream<ValidationLevel> levels() {
        return Stream.of(ValidationLevel.DEFAULT, ValidationLevel.FULL);
    }

    /**
     * Sparse unions: Arrow Java 19's UnionVector maps any declared type id to its child (arrow-c-data and the IPC
     * reader load {@code +us:5,7} and read it right), so they load; where UnionVector would read another child
     * (two children of one minor type; a struct child not named "struct") arrow-c-data reads wrong values, and
     * this bridge refuses typed, with the struct released.
     */
    @Test
    void sparseUnionsLoadWithAnyTypeIdsAndAreRefusedWhereUnionVectorReadsTheWrongChild() {
        try (HandBuilt h = new HandBuilt()) {
            assertEquals(List.of("1", "y", "3"), sparse(h, "+us:5,7", "i", "a", "u", "b", false));
            assertEquals(List.of("1", "y", "3"), sparse(h, "+us:5,7", "i", "a", "u", "a", false), "names shared");
            // ids that are also minor-type numbers (0 NULL, 1 STRUCT): getObject still reads the declared child
            // (fuzz seed arrow 500, +us:0,1<Z,U>), although the vector's own field lists minor-type numbers
            assertEquals(List.of("1", "y", "3"), sparse(h, "+us:0,1", "i", "a", "u", "b", false));
            assertEquals(List.of("1", "y", "3"), sparse(h, "+us:1,0", "i", "a", "u", "b", false));
            assertEquals(List.of("1", "null", "3"), sparse(h, "+us:0,1", "i", "a", "n", "b", false), "one null child");
            int releases = HandBuilt.ARRAY_RELEASES.get();
            UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class,
                    () -> sparse(h, "+us:0,1", "i", "a", "i", "b", false));
            assertTrue(e.getMessage().contains("children[1]"), e.getMessage());
            assertThrows(UnsupportedFeatureException.class, () -> sparse(h, "+us:0,1", "i", "a", "+s", "s", false));
            UnsupportedFeatureException twoNulls = assertThrows(UnsupportedFeatureException.class,
                    () -> sparse(h, "+us:0,1", "n", "a", "n", "b", false));
            assertTrue(twoNulls.getMessage().contains("second null child"), twoNulls.getMessage());
            assertEquals(releases + 3, HandBuilt.ARRAY_RELEASES.get(), "each refused struct released once");
            // the peer misreads what is refused: row 1 (type id 1, child 'b' = 5) reads child 'a'
            assertEquals(List.of("1", "2", "3"), sparse(h, "+us:0,1", "i", "a", "i", "b", true));
        }
    }

    /**
     * A sparse union Arrow Java's writers built holds minor-type numbers in its type buffer, as its own field
     * says: exported alone it is zero-copy (the exported type-id buffer is the vector's); an id that selects no
     * child is refused typed, with nothing written or held.
     */
    @Test
    void sparseUnionBuiltByArrowJavaExportsItsOwnTypeBufferAndAnIdWithoutAChildIsRefused() {
        try (UnionVector v = UnionVector.empty("u", allocator); Arena arena = Arena.ofConfined()) {
            v.allocateNew();
            v.setSafe(0, holder(7));
            NullableBigIntHolder big = new NullableBigIntHolder();
            big.isSet = 1;
            big.value = 1L << 40;
            v.setSafe(1, big);
            v.setSafe(2, holder(9));
            v.setValueCount(3);
            List<String> expected = values(v);
            assertEquals(expected, roundTrip(v));
            MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            ArrowJava.exportVector(v, null, array, null);
            try (ImportedSchema s = ArrowC.importSchema(exportedSchema(v, arena))) {
                MemorySegment buffers = array.get(java.lang.foreign.ValueLayout.ADDRESS,
                        org.devicebridge.generated.arrow.ArrowArray.buffers$offset()).reinterpret(8);
                assertEquals(v.getTypeBuffer().memoryAddress(), buffers.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0),
                        "the type ids are the vector's own buffer");
                ArrowC.importArray(s.root(), array, ValidationLevel.FULL).close();
            }
            long before = allocator.getAllocatedMemory();
            v.getTypeBuffer().setByte(1, 100); // no minor type 100, no declared id 100
            MemorySegment untouched = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            org.devicebridge.ValidationException e = assertThrows(org.devicebridge.ValidationException.class,
                    () -> ArrowJava.exportVector(v, null, untouched, null));
            assertEquals(org.devicebridge.ValidationException.Category.CONTENT, e.category());
            assertTrue(e.getMessage().contains("type id 100 at index 1"), e.getMessage());
            assertEquals(0, untouched.get(java.lang.foreign.ValueLayout.ADDRESS,
                    org.devicebridge.generated.arrow.ArrowArray.release$offset()).address(), "nothing written");
            assertEquals(before, allocator.getAllocatedMemory(), "nothing held");
        }
    }

    private static NullableIntHolder holder(int value) {
        NullableIntHolder h = new NullableIntHolder();
        h.isSet = 1;
        h.value = value;
        return h;
    }

    private static MemorySegment exportedSchema(FieldVector v, Arena arena) {
        MemorySegment schema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
        ArrowJava.exportField(v.getField(), null, schema);
        return schema;
    }

    /** A sparse union of 3 rows (type ids first, second, first), read by this bridge or by arrow-c-data. */
    private List<String> sparse(HandBuilt h, String format, String f0, String n0, String f1, String n1, boolean peer) {
        String[] ids = format.substring(4).split(",");
        int id0 = Integer.parseInt(ids[0]);
        int id1 = Integer.parseInt(ids[1]);
        MemorySegment c1Schema = f1.equals("+s") ? h.schema(f1, n1, h.schema("i", "q")) : h.schema(f1, n1);
        MemorySegment c1 = switch (f1) {
            case "n" -> h.array(3, 3, 0, new MemorySegment[0]);
            case "u" -> h.array(3, 0, 0, new MemorySegment[] {null, h.ints(0, 1, 2, 3), h.utf8("xyz")});
            case "+s" -> h.array(3, 0, 0, new MemorySegment[] {null}, h.array(3, 0, 0, new MemorySegment[] {null, h.ints(4, 5, 6)}));
            default -> h.array(3, 0, 0, new MemorySegment[] {null, h.ints(4, 5, 6)});
        };
        MemorySegment schema = HandBuilt.rootSchema(h.schema("+s", "", 0, Map.of(), h.schema(format, "u", h.schema(f0, n0), c1Schema)));
        MemorySegment array = HandBuilt.rootArray(h.array(3, 0, 0, new MemorySegment[] {null},
                h.array(3, 0, 0, new MemorySegment[] {h.bytes(id0, id1, id0)},
                        f0.equals("n") ? h.array(3, 3, 0, new MemorySegment[0])
                                : h.array(3, 0, 0, new MemorySegment[] {null, h.ints(1, 2, 3)}), c1)));
        if (peer) {
            try (CDataDictionaryProvider p = new CDataDictionaryProvider();
                 VectorSchemaRoot r = Data.importVectorSchemaRoot(allocator, org.apache.arrow.c.ArrowArray.wrap(array.address()),
                         org.apache.arrow.c.ArrowSchema.wrap(schema.address()), p)) {
                return values(r.getVector(0));
            }
        }
        try (ImportedSchema s = ArrowC.importSchema(schema)) {
            ImportedArray a = ArrowC.importArray(s.root(), array, ValidationLevel.FULL);
            try (VectorSchemaRoot r = ArrowJava.importVectorSchemaRoot(allocator, a, null)) {
                assertFalse(a.isLive());
                assertEquals(format.substring(4), joinIds((ArrowType.Union) r.getSchema().getFields().get(0).getType()),
                        "the schema keeps the declared type ids");
                List<String> values = values(r.getVector(0));
                // exported alone, with the vector's own field (minor-type numbers as ids), the ids are rewritten
                // to match it; exported with the root's schema, they stay the declared ones, zero-copy
                assertEquals(values, roundTrip(r.getVector(0)), "exportVector with the vector's own field");
                assertEquals(values, rootRoundTrip(r), "exportRoot with the declared ids");
                return values;
            } finally {
                assertFalse(a.isLive(), "consumed or released, never left live");
            }
        }
    }

    private static String joinIds(ArrowType.Union u) {
        StringBuilder sb = new StringBuilder();
        for (int id : u.getTypeIds()) {
            sb.append(sb.isEmpty() ? "" : ",").append(id);
        }
        return sb.toString();
    }

    static List<String> values(FieldVector v) {
        List<String> out = new ArrayList<>(v.getValueCount());
        for (int i = 0; i < v.getValueCount(); i++) {
            out.add(String.valueOf(v.getObject(i)));
        }
        return out;
    }

    /** The first column of {@code r} exported by this library as a root and imported back at DEFAULT. */
    private List<String> rootRoundTrip(VectorSchemaRoot r) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            MemorySegment schema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
            ArrowJava.exportRoot(r, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.DEFAULT), null)) {
                return values(back.getVector(0));
            }
        }
    }

    /** The values of {@code v} exported by this library and imported back by it (the copy is closed here). */
    private List<String> roundTrip(FieldVector v) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            MemorySegment schema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
            ArrowJava.exportVector(v, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 FieldVector back = ArrowJava.importFieldVector(allocator,
                         ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
                return values(back);
            }
        }
    }
}
