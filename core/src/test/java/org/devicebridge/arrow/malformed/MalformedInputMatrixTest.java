package org.devicebridge.arrow.malformed;

import static org.devicebridge.ValidationException.Category.ALIGNMENT;
import static org.devicebridge.ValidationException.Category.CONTENT;
import static org.devicebridge.ValidationException.Category.DEPTH;
import static org.devicebridge.ValidationException.Category.DEVICE;
import static org.devicebridge.ValidationException.Category.FORMAT;
import static org.devicebridge.ValidationException.Category.LENGTH;
import static org.devicebridge.ValidationException.Category.METADATA;
import static org.devicebridge.ValidationException.Category.NULL_POINTER;
import static org.devicebridge.ValidationException.Category.RELEASED;
import static org.devicebridge.ValidationException.Category.SCHEMA;
import static org.devicebridge.ValidationException.Category.SIZE;
import static org.devicebridge.ValidationException.Category.STRUCTURE;
import static org.devicebridge.arrow.ValidationLevel.DEFAULT;
import static org.devicebridge.arrow.ValidationLevel.FULL;
import static org.devicebridge.arrow.ValidationLevel.MINIMAL;
import static org.devicebridge.arrow.ValidationLevel.NONE;
import static org.devicebridge.arrow.malformed.Fx.bufs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The malformed-input matrix for schema, array and device-array import, one row per case (see
 * {@link #cases()}; scripted stream, close and C-producer rows live in {@link ScriptedCasesTest} and
 * {@link NativeProducerTest}). Every row asserts the exception's type, category and path, the exact number
 * of release calls of the root struct (1, or 0 for input that was already released), that no child or
 * dictionary struct was released directly, and that no handle leaked. Array rows run at every
 * {@link ValidationLevel}: the row's {@code lowest} level and every level above reject it, every level
 * below accepts it (and the accepted array, once closed, was released exactly once).
 */
class MalformedInputMatrixTest {
    static final MemorySegment NULL = MemorySegment.NULL;
    static final int CPU = 1;
    static final int CUDA = 2;

    // ---- the table ----

    static List<Case> cases() {
        List<Case> t = new ArrayList<>();
        released(t);
        ownership(t);
        cyclesAndDepth(t);
        formats(t);
        schemaSemantics(t);
        metadata(t);
        buffers(t);
        scalars(t);
        lengths(t);
        offsetsContent(t);
        nonZeroOffset(t);
        alignment(t);
        device(t);
        ParityCases.add(t);
        return t;
    }

    private static void released(List<Case> t) {
        String g = "released/NULL struct";
        t.add(schema(g, "NULL ArrowSchema pointer is RELEASED, nothing to release", RELEASED, "", 0, fx -> NULL));
        t.add(schema(g, "ArrowSchema with NULL release is RELEASED and untouched", RELEASED, "", 0,
                fx -> released(fx.schema("i"))));
        t.add(array(g, "NULL ArrowArray pointer is RELEASED", RELEASED, "", NONE, 0, fx -> fx.type("i"), fx -> NULL));
        t.add(array(g, "ArrowArray with NULL release is RELEASED and untouched", RELEASED, "", NONE, 0, fx -> fx.type("i"),
                fx -> releasedArray(i32(fx, 2))));
        t.add(device(g, "NULL ArrowDeviceArray pointer is RELEASED", RELEASED, "", NONE, 0, fx -> fx.type("i"), fx -> NULL));
        t.add(device(g, "ArrowDeviceArray with NULL release is RELEASED and untouched", RELEASED, "", NONE, 0,
                fx -> fx.type("i"), fx -> fx.device(releasedArray(i32(fx, 2)), CPU, -1, NULL)));
        t.add(schema(g, "released schema child is RELEASED at children[0], root released once", RELEASED, "children[0]", 1,
                fx -> fx.schema("+s", released(fx.schema("i")))));
        t.add(schema(g, "released schema dictionary is RELEASED at dictionary", RELEASED, "dictionary", 1,
                fx -> fx.dict(fx.schema("i"), released(fx.schema("u")))));
        t.add(schema(g, "released grandchild is RELEASED at children[0].children[0]", RELEASED,
                "children[0].children[0]", 1, fx -> fx.schema("+s", fx.schema("+l", released(fx.schema("i"))))));
        t.add(array(g, "released array child is RELEASED at children[0]", RELEASED, "children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))),
                fx -> fx.array(2, 0, 0, bufs(NULL), releasedArray(i32(fx, 2)))));
        t.add(array(g, "released array dictionary is RELEASED at dictionary", RELEASED, "dictionary", NONE, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.ints(0))), releasedArray(utf8(fx, "a")))));
        t.add(device(g, "device array whose child is released is RELEASED at children[0]", RELEASED, "children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))),
                fx -> fx.device(fx.root(fx.array(2, 0, 0, bufs(NULL), releasedArray(i32(fx, 2)))), CPU, -1, NULL)));
    }

    private static void ownership(List<Case> t) {
        String g = "child/dictionary ownership";
        t.add(schema(g, "NULL format is NULL_POINTER at format", NULL_POINTER, "format", 1, fx -> fx.schema(null)));
        t.add(schema(g, "NULL child format is NULL_POINTER at children[0].format", NULL_POINTER, "children[0].format", 1,
                fx -> fx.schema("+l", fx.schema(null))));
        t.add(schema(g, "NULL children array with n_children 2 is NULL_POINTER", NULL_POINTER, "children", 1,
                fx -> nChildren(fx.schema("+s"), 2)));
        t.add(schema(g, "NULL children[0] is NULL_POINTER", NULL_POINTER, "children[0]", 1,
                fx -> fx.schema("+s", NULL)));
        t.add(schema(g, "NULL children[1] of 2 is NULL_POINTER after children[0] validated", NULL_POINTER, "children[1]", 1,
                fx -> fx.schema("+s", fx.schema("i"), NULL)));
        t.add(schema(g, "NULL grandchild is NULL_POINTER at children[0].children[0]", NULL_POINTER,
                "children[0].children[0]", 1, fx -> fx.schema("+s", fx.schema("+l", NULL))));
        t.add(array(g, "NULL children array with n_children 1 is NULL_POINTER", NULL_POINTER, "children", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> nChildrenA(fx.array(2, 0, 0, bufs(NULL)), 1)));
        t.add(array(g, "NULL array children[0] is NULL_POINTER", NULL_POINTER, "children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL), NULL)));
        t.add(array(g, "NULL array children[1] is NULL_POINTER", NULL_POINTER, "children[1]", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"), fx.schema("i"))),
                fx -> fx.array(2, 0, 0, bufs(NULL), i32(fx, 2), NULL)));
        t.add(array(g, "NULL dictionary where the schema has one is NULL_POINTER", NULL_POINTER, "dictionary", NONE, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(0)))));
        t.add(array(g, "dictionary where the schema has none is STRUCTURE", STRUCTURE, "dictionary", NONE, 1,
                fx -> fx.type("i"), fx -> fx.adict(i32(fx, 1), utf8(fx, "a"))));
        t.add(array(g, "fewer children than the schema is STRUCTURE", STRUCTURE, "n_children", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL))));
        t.add(array(g, "more children than the schema is STRUCTURE", STRUCTURE, "n_children", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL), i32(fx, 2), i32(fx, 2))));
        t.add(array(g, "NULL grandchildren array is NULL_POINTER at children[0].children", NULL_POINTER,
                "children[0].children", NONE, 1, fx -> fx.type(fx.schema("+s", fx.schema("+s", fx.schema("i")))),
                fx -> fx.array(2, 0, 0, bufs(NULL), nChildrenA(fx.array(2, 0, 0, bufs(NULL)), 1))));
        t.add(array(g, "accepted struct with dictionary child: root release releases all, no child release called", null,
                null, NONE, 1, fx -> fx.type(fx.schema("+s", fx.dict(fx.schema("c"), fx.schema("u")))),
                fx -> fx.array(1, 0, 0, bufs(NULL), fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.bytes(0))), utf8(fx, "x")))));
    }

    private static void cyclesAndDepth(List<Case> t) {
        String g = "cycles and depth";
        t.add(schema(g, "schema child pointing at the root is DEPTH (cycle)", DEPTH, "children[0]", 1, fx -> {
            MemorySegment root = fx.rootSchema(fx.schema("+l", NULL));
            setChild(root, 0, root);
            return root;
        }));
        t.add(schema(g, "schema child pointing at itself is DEPTH", DEPTH, "children[0].children[0]", 1, fx -> {
            MemorySegment c = fx.schema("+l", NULL);
            setChild(c, 0, c);
            return fx.schema("+l", c);
        }));
        t.add(schema(g, "schema dictionary pointing at the root is DEPTH", DEPTH, "dictionary", 1, fx -> {
            MemorySegment root = fx.rootSchema(fx.schema("i"));
            ArrowSchema.dictionary(root, root);
            return root;
        }));
        t.add(schema(g, "two-node schema cycle below the root is DEPTH", DEPTH, "children[0].children[0].children[0]", 1, fx -> {
            MemorySegment a = fx.schema("+l", NULL);
            MemorySegment b = fx.schema("+l", a);
            setChild(a, 0, b);
            return fx.schema("+s", a);
        }));
        t.add(schema(g, "65 nested lists (66 levels) is DEPTH", DEPTH, null, 1, fx -> nestedLists(fx, 65)));
        t.add(schema(g, "64 nested lists (65 levels) is accepted", null, null, 1, fx -> nestedLists(fx, 64)));
        t.add(schema(g, "dictionary of a dictionary 65 deep is DEPTH", DEPTH, null, 1, fx -> {
            MemorySegment s = fx.schema("u");
            for (int i = 0; i < 65; i++) {
                s = fx.dict(fx.schema("i"), s);
            }
            return s;
        }));
        t.add(array(g, "array child pointing at the root is DEPTH", DEPTH, "children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("+l", fx.schema("i")))), fx -> {
                    MemorySegment root = fx.root(fx.array(0, 0, 0, bufs(NULL, NULL), NULL));
                    setChildA(root, 0, root);
                    return root;
                }));
        t.add(array(g, "array child pointing at itself is DEPTH", DEPTH, "children[0].children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("+l", fx.schema("i")))), fx -> {
                    MemorySegment c = fx.array(0, 0, 0, bufs(NULL, NULL), NULL);
                    setChildA(c, 0, c);
                    return fx.array(0, 0, 0, bufs(NULL, NULL), c);
                }));
        t.add(array(g, "array dictionary pointing at the root is DEPTH", DEPTH, "dictionary", NONE, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("i"))), fx -> {
                    MemorySegment root = fx.root(i32(fx, 1));
                    ArrowArray.dictionary(root, root);
                    return root;
                }));
        t.add(device(g, "device array child pointing at its own array is DEPTH", DEPTH, "children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("+l", fx.schema("i")))), fx -> {
                    MemorySegment d = fx.device(fx.root(fx.array(0, 0, 0, bufs(NULL, NULL), NULL)), CPU, -1, NULL);
                    setChildA(d, 0, d.asSlice(ArrowDeviceArray.array$offset()));
                    return d;
                }));
    }

    private static void formats(List<Case> t) {
        String g = "format strings";
        String[][] bad = {
            {"", "empty"}, {"q", "unknown letter"}, {"ii", "trailing character"}, {"i ", "trailing space"},
            {"w:", "fixed-size binary without width"}, {"w:-1", "negative width"}, {"w:x", "non-numeric width"},
            {"w:99999999999", "width beyond int"}, {"+w:", "fixed-size list without size"}, {"+w:-2", "negative list size"},
            {"d:", "decimal without parameters"}, {"d:5", "decimal without scale"}, {"d:5,2,7", "decimal bit width 7"},
            {"d:0,2", "decimal precision 0"}, {"d:39,2", "decimal128 precision 39"}, {"d:10,2,32", "decimal32 precision 10"},
            {"d:19,2,64", "decimal64 precision 19"}, {"d:77,2,256", "decimal256 precision 77"}, {"d:5,x", "decimal scale x"},
            {"d:5,-", "decimal scale '-'"}, {"d:5,2,128,1", "decimal with four parts"}, {"tsx:", "timestamp unit x"},
            {"ts", "timestamp without unit"}, {"tdX", "date unit X"}, {"tt", "time without unit"}, {"tD", "duration without unit"},
            {"ti", "interval without unit"}, {"+", "bare +"}, {"+x", "unknown nested"}, {"+us:a", "union type id a"},
            {"+ud:128", "union type id 128"}, {"+ud:1,1", "duplicate union type id"}, {"+us:,", "empty union type ids"},
            {"vx", "unknown view"}, {"\u00e9", "non-ASCII"},
        };
        for (String[] b : bad) {
            t.add(schema(g, b[1] + " '" + b[0] + "' is FORMAT", FORMAT, "format", 1, fx -> fx.schema(b[0])));
        }
        t.add(schema(g, "bad second child format is FORMAT at children[1].format", FORMAT, "children[1].format", 1,
                fx -> fx.schema("+s", fx.schema("i"), fx.schema("q"))));
        t.add(schema(g, "bad dictionary format is FORMAT at dictionary.format", FORMAT, "dictionary.format", 1,
                fx -> fx.dict(fx.schema("i"), fx.schema("d:99,1"))));
        t.add(schema(g, "decimal32 precision 9 is accepted", null, null, 1, fx -> fx.schema("d:9,2,32")));
        t.add(schema(g, "timestamp with time zone is accepted", null, null, 1, fx -> fx.schema("tsu:Europe/Paris")));
        t.add(schema(g, "union without members is accepted", null, null, 1, fx -> fx.schema("+ud:")));
    }

    private static void schemaSemantics(List<Case> t) {
        String g = "schema semantics";
        long nullable = SchemaNode.FLAG_NULLABLE;
        t.add(schema(g, "sparse union with 2 ids and 1 child is STRUCTURE", STRUCTURE, "n_children", 1,
                fx -> fx.schema("+us:0,1", fx.schema("i"))));
        t.add(schema(g, "dense union with 1 id and 2 children is STRUCTURE", STRUCTURE, "n_children", 1,
                fx -> fx.schema("+ud:0", fx.schema("i"), fx.schema("u"))));
        t.add(schema(g, "utf8 dictionary index is SCHEMA", SCHEMA, "format", 1, fx -> fx.dict(fx.schema("u"), fx.schema("u"))));
        t.add(schema(g, "float dictionary index is SCHEMA", SCHEMA, "format", 1, fx -> fx.dict(fx.schema("f"), fx.schema("u"))));
        t.add(schema(g, "struct dictionary index is SCHEMA", SCHEMA, "format", 1, fx -> fx.dict(fx.schema("+s"), fx.schema("u"))));
        t.add(schema(g, "child with a non-integer dictionary index is SCHEMA at children[0].format", SCHEMA,
                "children[0].format", 1, fx -> fx.schema("+s", fx.dict(fx.schema("g"), fx.schema("u")))));
        t.add(schema(g, "map whose entries are not a struct is SCHEMA", SCHEMA, "children[0]", 1,
                fx -> fx.schemaF("+m", nullable, fx.schemaF("i", 0))));
        t.add(schema(g, "map entries struct with 1 child is SCHEMA", SCHEMA, "children[0]", 1,
                fx -> fx.schemaF("+m", nullable, fx.schemaF("+s", 0, fx.schemaF("u", 0)))));
        t.add(schema(g, "nullable map entries is SCHEMA", SCHEMA, "children[0].flags", 1,
                fx -> fx.schemaF("+m", nullable, fx.schemaF("+s", nullable, fx.schemaF("u", 0), fx.schema("i")))));
        t.add(schema(g, "map with 2 children is STRUCTURE", STRUCTURE, "n_children", 1,
                fx -> fx.schemaF("+m", nullable, mapEntries(fx), mapEntries(fx))));
        t.add(schema(g, "map with keys-sorted flag and valid entries is accepted", null, null, 1,
                fx -> fx.schemaF("+m", SchemaNode.FLAG_MAP_KEYS_SORTED, mapEntries(fx))));
        t.add(schema(g, "float run ends is SCHEMA", SCHEMA, "children[0].format", 1,
                fx -> fx.schema("+r", fx.schemaF("f", 0), fx.schema("i"))));
        t.add(schema(g, "int8 run ends is SCHEMA", SCHEMA, "children[0].format", 1,
                fx -> fx.schema("+r", fx.schemaF("c", 0), fx.schema("i"))));
        t.add(schema(g, "uint32 run ends is SCHEMA", SCHEMA, "children[0].format", 1,
                fx -> fx.schema("+r", fx.schemaF("I", 0), fx.schema("i"))));
        t.add(schema(g, "nullable run ends is SCHEMA", SCHEMA, "children[0].flags", 1,
                fx -> fx.schema("+r", fx.schemaF("i", nullable), fx.schema("i"))));
        t.add(schema(g, "run-end encoded with 1 child is STRUCTURE", STRUCTURE, "n_children", 1,
                fx -> fx.schema("+r", fx.schemaF("i", 0))));
        t.add(schema(g, "int16 non-nullable run ends is accepted", null, null, 1,
                fx -> fx.schema("+r", fx.schemaF("s", 0), fx.schema("u"))));
        t.add(schema(g, "unknown flag 8 is SCHEMA", SCHEMA, "flags", 1, fx -> fx.schemaF("i", 8)));
        t.add(schema(g, "flag bit 40 is SCHEMA", SCHEMA, "flags", 1, fx -> fx.schemaF("i", 1L << 40)));
        t.add(schema(g, "negative flags is SCHEMA", SCHEMA, "flags", 1, fx -> fx.schemaF("i", -1)));
        t.add(schema(g, "keys-sorted on a struct is SCHEMA", SCHEMA, "flags", 1,
                fx -> fx.schemaF("+s", SchemaNode.FLAG_MAP_KEYS_SORTED)));
        t.add(schema(g, "dictionary-ordered without a dictionary is SCHEMA", SCHEMA, "flags", 1,
                fx -> fx.schemaF("i", SchemaNode.FLAG_DICTIONARY_ORDERED)));
        t.add(schema(g, "dictionary-ordered with a dictionary is accepted", null, null, 1,
                fx -> fx.dict(fx.schemaF("i", SchemaNode.FLAG_DICTIONARY_ORDERED), fx.schema("u"))));
        t.add(schema(g, "list without child is STRUCTURE", STRUCTURE, "n_children", 1, fx -> fx.schema("+l")));
        t.add(schema(g, "list with 2 children is STRUCTURE", STRUCTURE, "n_children", 1,
                fx -> fx.schema("+l", fx.schema("i"), fx.schema("i"))));
        t.add(schema(g, "int32 with a child is STRUCTURE", STRUCTURE, "n_children", 1, fx -> fx.schema("i", fx.schema("i"))));
        t.add(schema(g, "fixed-size list without child is STRUCTURE", STRUCTURE, "n_children", 1, fx -> fx.schema("+w:2")));
        t.add(schema(g, "list view with 2 children is STRUCTURE", STRUCTURE, "n_children", 1,
                fx -> fx.schema("+vl", fx.schema("i"), fx.schema("i"))));
    }

    private static void metadata(List<Case> t) {
        String g = "metadata blob";
        t.add(schema(g, "negative entry count is METADATA", METADATA, "metadata", 1, fx -> meta(fx, fx.metadata(-1))));
        t.add(schema(g, "negative key length is METADATA", METADATA, "metadata", 1, fx -> meta(fx, fx.metadata(1, -1))));
        t.add(schema(g, "negative value length is METADATA", METADATA, "metadata", 1,
                fx -> meta(fx, fx.metadata(1, 1, "k", -5))));
        t.add(schema(g, "duplicate keys is METADATA", METADATA, "metadata", 1,
                fx -> meta(fx, fx.metadata(2, 1, "k", 1, "a", 1, "k", 1, "b"))));
        t.add(schema(g, "key length 2^30 is METADATA (over the cap, never read)", METADATA, "metadata", 1,
                fx -> meta(fx, fx.metadata(1, 1 << 30))));
        t.add(schema(g, "value length Integer.MAX_VALUE is METADATA", METADATA, "metadata", 1,
                fx -> meta(fx, fx.metadata(1, 1, "k", Integer.MAX_VALUE))));
        t.add(schema(g, "bad child metadata is METADATA at children[0].metadata", METADATA, "children[0].metadata", 1,
                fx -> fx.schema("+s", meta(fx, fx.metadata(Integer.MIN_VALUE)))));
        t.add(schema(g, "bad dictionary metadata is METADATA at dictionary.metadata", METADATA, "dictionary.metadata", 1,
                fx -> fx.dict(fx.schema("i"), meta(fx, fx.metadata(1, -7)))));
        t.add(schema(g, "two entries are accepted and read", null, null, 1,
                fx -> meta(fx, fx.metadata(2, 1, "a", 2, "xy", 3, "key", 0)),
                n -> assertEquals(Map.of("a", "xy", "key", ""), ((SchemaNode) n).metadata())));
        t.add(schema(g, "zero entries are accepted", null, null, 1, fx -> meta(fx, fx.metadata(0)),
                n -> assertEquals(Map.of(), ((SchemaNode) n).metadata())));
        t.add(schema(g, "misaligned metadata blob is accepted and read", null, null, 1,
                fx -> meta(fx, fx.misaligned(fx.metadata(1, 1, "k", 1, "v"))),
                n -> assertEquals(Map.of("k", "v"), ((SchemaNode) n).metadata())));
    }

    private static void buffers(List<Case> t) {
        String g = "buffer count and presence";
        Object[][] counts = {
            {"i", 1}, {"i", 3}, {"i", 0}, {"u", 2}, {"n", 1}, {"b", 3}, {"vu", 2}, {"i", -1}, {"+l", 3},
        };
        for (Object[] c : counts) {
            String f = (String) c[0];
            int n = (Integer) c[1];
            Function<Fx, SchemaNode> type = f.equals("+l") ? fx -> fx.type(fx.schema("+l", fx.schema("i"))) : fx -> fx.type(f);
            t.add(array(g, "'" + f + "' with " + n + " buffers is STRUCTURE", STRUCTURE, "n_buffers", NONE, 1, type, fx -> {
                MemorySegment[] b = new MemorySegment[Math.max(0, n)];
                java.util.Arrays.fill(b, NULL);
                MemorySegment a = f.equals("+l") ? fx.array(0, 0, 0, b, i32(fx, 0)) : fx.array(0, 0, 0, b);
                ArrowArray.n_buffers(a, n);
                return a;
            }));
        }
        t.add(array(g, "struct with 2 buffers is STRUCTURE", STRUCTURE, "n_buffers", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, NULL), i32(fx, 1))));
        t.add(array(g, "dense union with 1 buffer is STRUCTURE", STRUCTURE, "n_buffers", NONE, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))), fx -> fx.array(0, 0, 0, bufs(NULL), i32(fx, 0))));
        t.add(array(g, "sparse union with 2 buffers is STRUCTURE", STRUCTURE, "n_buffers", NONE, 1,
                fx -> fx.type(fx.schema("+us:0", fx.schema("i"))), fx -> fx.array(0, 0, 0, bufs(NULL, NULL), i32(fx, 0))));
        t.add(array(g, "run-end encoded with 1 buffer is STRUCTURE", STRUCTURE, "n_buffers", NONE, 1, MalformedInputMatrixTest::reeType,
                fx -> fx.array(0, 0, 0, bufs(NULL), i32(fx, 0), i32(fx, 0))));
        t.add(array(g, "NULL buffers array with 2 buffers is NULL_POINTER", NULL_POINTER, "buffers", NONE, 1,
                fx -> fx.type("i"), fx -> { MemorySegment a = i32(fx, 2); ArrowArray.buffers(a, NULL); return a; }));
        t.add(array(g, "NULL int32 values with length 3 is NULL_POINTER", NULL_POINTER, "buffers[1]", NONE, 1,
                fx -> fx.type("i"), fx -> fx.array(3, 0, 0, bufs(NULL, NULL))));
        t.add(array(g, "NULL utf8 offsets with length 2 is NULL_POINTER", NULL_POINTER, "buffers[1]", NONE, 1,
                fx -> fx.type("u"), fx -> fx.array(2, 0, 0, bufs(NULL, NULL, fx.bytes(65)))));
        t.add(array(g, "NULL utf8 data with last offset 5 is NULL_POINTER from DEFAULT (size unknown below)", NULL_POINTER,
                "buffers[2]", DEFAULT, 1, fx -> fx.type("u"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(0, 5), NULL))));
        t.add(array(g, "NULL list offsets with length 1 is NULL_POINTER", NULL_POINTER, "buffers[1]", NONE, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, NULL), i32(fx, 0))));
        t.add(array(g, "NULL bool values with length 3 is NULL_POINTER", NULL_POINTER, "buffers[1]", NONE, 1,
                fx -> fx.type("b"), fx -> fx.array(3, 0, 0, bufs(NULL, NULL))));
        t.add(array(g, "NULL fixed-size binary values is NULL_POINTER", NULL_POINTER, "buffers[1]", NONE, 1,
                fx -> fx.type("w:4"), fx -> fx.array(1, 0, 0, bufs(NULL, NULL))));
        t.add(array(g, "NULL views with length 1 is NULL_POINTER", NULL_POINTER, "buffers[1]", NONE, 1,
                fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, NULL, fx.longs()))));
        t.add(array(g, "NULL dense union type ids is NULL_POINTER", NULL_POINTER, "buffers[0]", NONE, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(0)), i32(fx, 1))));
        t.add(array(g, "NULL validity with null_count 2 is NULL_POINTER from MINIMAL", NULL_POINTER, "buffers[0]", MINIMAL, 1,
                fx -> fx.type("i"), fx -> fx.array(3, 2, 0, bufs(NULL, fx.ints(1, 2, 3)))));
        t.add(array(g, "sparse union with null_count 1 is STRUCTURE from MINIMAL", STRUCTURE, "null_count", MINIMAL, 1,
                fx -> fx.type(fx.schema("+us:0", fx.schema("i"))), fx -> fx.array(1, 1, 0, bufs(fx.bytes(0)), i32(fx, 1))));
        t.add(array(g, "empty utf8 with every buffer NULL is accepted", null, null, NONE, 1, fx -> fx.type("u"),
                fx -> fx.array(0, 0, 0, bufs(NULL, NULL, NULL))));
        t.add(array(g, "NULL validity with null_count 0 is accepted", null, null, NONE, 1, fx -> fx.type("i"), fx -> i32(fx, 3),
                n -> assertTrue(((ArrayNode) n).isBufferNull(0))));
        t.add(array(g, "null_count -1 (unknown) is accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(2, -1, 0, bufs(fx.bytes(3), fx.ints(1, 2)))));
    }

    private static void scalars(List<Case> t) {
        String g = "negative/overflowing scalar fields";
        t.add(array(g, "length -1 is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("i"), fx -> fx.array(-1, 0, 0, bufs(NULL, NULL))));
        t.add(array(g, "length Long.MIN_VALUE is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(Long.MIN_VALUE, 0, 0, bufs(NULL, NULL))));
        t.add(array(g, "offset -1 is SIZE", SIZE, "offset", NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(1, 0, -1, bufs(NULL, fx.ints(1)))));
        t.add(array(g, "null_count -2 is SIZE from MINIMAL", SIZE, "null_count", MINIMAL, 1, fx -> fx.type("i"),
                fx -> fx.array(2, -2, 0, bufs(fx.bytes(0), fx.ints(1, 2)))));
        t.add(array(g, "null_count above length is SIZE from MINIMAL", SIZE, "null_count", MINIMAL, 1, fx -> fx.type("i"),
                fx -> fx.array(2, 3, 0, bufs(fx.bytes(0), fx.ints(1, 2)))));
        t.add(array(g, "offset + length overflowing is SIZE", SIZE, "offset", NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(Long.MAX_VALUE, 0, 2, bufs(NULL, fx.ints(1)))));
        t.add(array(g, "int32 length 2^62 (bytes overflow) is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(1L << 62, 0, 0, bufs(NULL, fx.ints(1)))));
        t.add(array(g, "utf8 length Long.MAX_VALUE (offsets + 1 overflow) is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("u"),
                fx -> fx.array(Long.MAX_VALUE, 0, 0, bufs(NULL, fx.ints(0), fx.bytes(0)))));
        t.add(array(g, "large utf8 length 2^61 (8-byte offsets overflow) is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("U"),
                fx -> fx.array(1L << 61, 0, 0, bufs(NULL, fx.longs(0), fx.bytes(0)))));
        t.add(array(g, "fixed-size binary w:1000000 with length 2^50 is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("w:1000000"),
                fx -> fx.array(1L << 50, 0, 0, bufs(NULL, fx.bytes(0)))));
        t.add(array(g, "utf8 view length 2^60 (views overflow) is SIZE", SIZE, "length", NONE, 1, fx -> fx.type("vu"),
                fx -> fx.array(1L << 60, 0, 0, bufs(NULL, fx.zeros(16), fx.longs()))));
        t.add(array(g, "fixed-size list +w:1000 with length 2^60 is SIZE", SIZE, "length", NONE, 1,
                fx -> fx.type(fx.schema("+w:1000", fx.schema("i"))), fx -> fx.array(1L << 60, 0, 0, bufs(NULL), i32(fx, 0))));
        t.add(array(g, "dense union length 2^62 (offsets overflow) is SIZE", SIZE, "length", NONE, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))), fx -> fx.array(1L << 62, 0, 0, bufs(fx.bytes(0), fx.ints(0)),
                        i32(fx, 0))));
        t.add(array(g, "child length -1 is SIZE at children[0].length", SIZE, "children[0].length", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(0, 0, 0, bufs(NULL), fx.array(-1, 0, 0, bufs(NULL, NULL)))));
        t.add(array(g, "negative variadic buffer size is SIZE from DEFAULT", SIZE, "buffers[3]", DEFAULT, 1, fx -> fx.type("vu"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{3, 0x636261, 0, 0}}), fx.bytes(0), fx.longs(-4)))));
        t.add(schema(g, "schema n_children -1 is SIZE", SIZE, "n_children", 1, fx -> nChildren(fx.schema("+s"), -1)));
        t.add(schema(g, "schema n_children 2^40 is SIZE", SIZE, "n_children", 1, fx -> nChildren(fx.schema("+s"), 1L << 40)));
        t.add(schema(g, "schema n_children Long.MIN_VALUE is SIZE", SIZE, "n_children", 1,
                fx -> nChildren(fx.schema("+s"), Long.MIN_VALUE)));
    }

    private static void lengths(List<Case> t) {
        String g = "parent vs child lengths";
        t.add(array(g, "struct child shorter than parent is LENGTH from MINIMAL", LENGTH, "children[0].length", MINIMAL, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(3, 0, 0, bufs(NULL), i32(fx, 2))));
        t.add(array(g, "second struct child shorter is LENGTH at children[1].length", LENGTH, "children[1].length", MINIMAL, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"), fx.schema("i"))),
                fx -> fx.array(3, 0, 0, bufs(NULL), i32(fx, 3), i32(fx, 1))));
        t.add(array(g, "sparse union child shorter than parent is LENGTH from MINIMAL", LENGTH, "children[0].length", MINIMAL, 1,
                fx -> fx.type(fx.schema("+us:0", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(fx.bytes(0, 0)), i32(fx, 1))));
        t.add(array(g, "fixed-size list child shorter than size x length is LENGTH from MINIMAL", LENGTH, "children[0].length",
                MINIMAL, 1, fx -> fx.type(fx.schema("+w:2", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL), i32(fx, 3))));
        t.add(array(g, "list last offset beyond child length is LENGTH from DEFAULT", LENGTH, "children[0].length", DEFAULT, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1, 4)), i32(fx, 3))));
        t.add(array(g, "large list last offset beyond child length is LENGTH from DEFAULT", LENGTH, "children[0].length",
                DEFAULT, 1, fx -> fx.type(fx.schema("+L", fx.schema("i"))),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(0, 9)), i32(fx, 3))));
        t.add(array(g, "map last offset beyond entries length is LENGTH from DEFAULT", LENGTH, "children[0].length", DEFAULT, 1,
                fx -> fx.type(fx.schemaF("+m", SchemaNode.FLAG_NULLABLE, mapEntries(fx))),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(0, 2)),
                        fx.array(1, 0, 0, bufs(NULL), utf8(fx, "k"), i32(fx, 1)))));
        t.add(array(g, "run-end values length differing from run ends is LENGTH from MINIMAL", LENGTH, "children[1].length",
                MINIMAL, 1, MalformedInputMatrixTest::reeType, fx -> fx.array(3, 0, 0, bufs(), i32(fx, 3), i32(fx, 2))));
        t.add(array(g, "run-end length 3 with no runs is LENGTH from MINIMAL", LENGTH, "children[0].length", MINIMAL, 1,
                MalformedInputMatrixTest::reeType, fx -> fx.array(3, 0, 0, bufs(), i32(fx, 0), i32(fx, 0))));
        t.add(array(g, "struct child longer than parent is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL), i32(fx, 4))));
        t.add(array(g, "list child longer than the last offset is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1, 2)), i32(fx, 5))));
    }

    private static void offsetsContent(List<Case> t) {
        String g = "offsets content";
        t.add(array(g, "utf8 negative first offset is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1, fx -> fx.type("u"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(-1, 0, 1), fx.bytes(65)))));
        t.add(array(g, "utf8 last offset below the first is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1,
                fx -> fx.type("u"), fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(3, 4, 2), fx.bytes(65, 66, 67, 68)))));
        t.add(array(g, "utf8 middle offset decreasing is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("u"),
                fx -> fx.array(3, 0, 0, bufs(NULL, fx.ints(0, 3, 1, 4), fx.bytes(65, 66, 67, 68)))));
        t.add(array(g, "utf8 middle offset beyond the last is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("u"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 9, 2), fx.bytes(65, 66)))));
        t.add(array(g, "binary negative first offset is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1, fx -> fx.type("z"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(-5, 0), fx.bytes(0)))));
        t.add(array(g, "large utf8 negative first offset is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1,
                fx -> fx.type("U"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(Long.MIN_VALUE, 0), fx.bytes(0)))));
        t.add(array(g, "large binary middle offset decreasing is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("Z"), fx -> fx.array(3, 0, 0, bufs(NULL, fx.longs(0, 2, 1, 3), fx.bytes(1, 2, 3)))));
        t.add(array(g, "list negative first offset is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(-1, 1)), i32(fx, 2))));
        t.add(array(g, "list last offset below the first is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(2, 1)), i32(fx, 2))));
        t.add(array(g, "list middle offset decreasing is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+l", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 2, 1)), i32(fx, 2))));
        t.add(array(g, "equal offsets (empty strings) are accepted", null, null, NONE, 1, fx -> fx.type("u"),
                fx -> fx.array(3, 0, 0, bufs(NULL, fx.ints(0, 0, 0, 0), NULL))));
        t.add(array(g, "utf8 view with negative length is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("vu"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{-1, 0, 0, 0}}), fx.longs()))));
        t.add(array(g, "utf8 view with buffer index out of range is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{20, 0, 1, 0}}),
                        fx.zeros(32), fx.longs(32)))));
        t.add(array(g, "utf8 view beyond its variadic buffer is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{20, 0, 0, 16}}),
                        fx.zeros(32), fx.longs(32)))));
        t.add(array(g, "binary view with negative buffer offset is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vz"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{20, 0, 0, -4}}),
                        fx.zeros(32), fx.longs(32)))));
        t.add(array(g, "garbage view in a null slot is accepted", null, null, NONE, 1, fx -> fx.type("vu"),
                fx -> fx.array(2, 1, 0, bufs(fx.bytes(0b01), fx.views(new int[][] {{1, 65, 0, 0}, {-7, 1, 99, -3}}), fx.longs()))));
        t.add(array(g, "list view beyond its child is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+vl", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(1), fx.ints(3)),
                        i32(fx, 3))));
        t.add(array(g, "large list view with negative size is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+vL", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(0), fx.longs(-1)),
                        i32(fx, 3))));
        t.add(array(g, "sparse union undeclared type id is CONTENT from FULL", CONTENT, "buffers[0]", FULL, 1,
                fx -> fx.type(fx.schema("+us:3,5", fx.schema("i"), fx.schema("i"))),
                fx -> fx.array(2, 0, 0, bufs(fx.bytes(3, 4)), i32(fx, 2), i32(fx, 2))));
        t.add(array(g, "dense union undeclared type id is CONTENT from FULL", CONTENT, "buffers[0]", FULL, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(fx.bytes(1), fx.ints(0)), i32(fx, 1))));
        t.add(array(g, "dense union offset at child length is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(fx.bytes(0), fx.ints(1)), i32(fx, 1))));
        t.add(array(g, "dense union negative offset is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(fx.bytes(0), fx.ints(-1)), i32(fx, 1))));
        t.add(array(g, "last run end below length is CONTENT from DEFAULT", CONTENT, "children[0].buffers[1]", DEFAULT, 1,
                MalformedInputMatrixTest::reeType, fx -> fx.array(5, 0, 0, bufs(), i32(fx, 2, 4), i32(fx, 2))));
        t.add(array(g, "int64 last run end below length is CONTENT from DEFAULT", CONTENT, "children[0].buffers[1]", DEFAULT, 1,
                fx -> fx.type(fx.schema("+r", fx.schemaF("l", 0), fx.schema("i"))),
                fx -> fx.array(5, 0, 0, bufs(), fx.array(1, 0, 0, bufs(NULL, fx.longs(4))), i32(fx, 1))));
        t.add(array(g, "run ends not increasing is CONTENT from FULL", CONTENT, "children[0].buffers[1]", FULL, 1,
                MalformedInputMatrixTest::reeType, fx -> fx.array(5, 0, 0, bufs(), i32(fx, 3, 2, 5), i32(fx, 3))));
        t.add(array(g, "int16 run ends repeating is CONTENT from FULL", CONTENT, "children[0].buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+r", fx.schemaF("s", 0), fx.schema("i"))),
                fx -> fx.array(4, 0, 0, bufs(), fx.array(3, 0, 0, bufs(NULL, fx.shorts((short) 2, (short) 2, (short) 4))),
                        i32(fx, 3))));
        t.add(array(g, "run ends with nulls is CONTENT from MINIMAL", CONTENT, "children[0].null_count", MINIMAL, 1,
                MalformedInputMatrixTest::reeType,
                fx -> fx.array(2, 0, 0, bufs(), fx.array(1, 1, 0, bufs(fx.bytes(0), fx.ints(2))), i32(fx, 1))));
        t.add(array(g, "dictionary index at dictionary length is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1))), utf8(fx, "a"))));
        t.add(array(g, "negative dictionary index is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.dict(fx.schema("s"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.shorts((short) -1))), utf8(fx, "a"))));
        t.add(array(g, "uint8 dictionary index 255 is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.dict(fx.schema("C"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.bytes(255))), utf8(fx, "a"))));
        t.add(array(g, "uint64 dictionary index 2^63 is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.dict(fx.schema("L"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.longs(Long.MIN_VALUE))), utf8(fx, "a"))));
        t.add(array(g, "bad dictionary index in a null slot is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(2, 1, 0, bufs(fx.bytes(0b10), fx.ints(77, 0))), utf8(fx, "a"))));
    }

    private static void nonZeroOffset(List<Case> t) {
        String g = "non-zero offset and bitmaps";
        t.add(array(g, "bool offset 3 length 6: 9 bits need 2 bitmap bytes", null, null, NONE, 1, fx -> fx.type("b"),
                fx -> fx.array(6, 0, 3, bufs(fx.bytes(0xff, 0x01), fx.bytes(0xff, 0x01))), n -> {
                    assertEquals(2, ((ArrayNode) n).bufferLength(0));
                    assertEquals(2, ((ArrayNode) n).bufferLength(1));
                }));
        t.add(array(g, "int32 offset 5 length 3: 8 bits need 1 bitmap byte, 32 value bytes", null, null, NONE, 1,
                fx -> fx.type("i"), fx -> fx.array(3, 1, 5, bufs(fx.bytes(0x7f), fx.ints(0, 0, 0, 0, 0, 1, 2, 3))), n -> {
                    assertEquals(1, ((ArrayNode) n).bufferLength(0));
                    assertEquals(32, ((ArrayNode) n).bufferLength(1));
                }));
        t.add(array(g, "int32 offset 7 length 2: 9 bits need 2 bitmap bytes", null, null, NONE, 1,
                fx -> fx.type("i"), fx -> fx.array(2, 1, 7, bufs(fx.bytes(0xff, 0), fx.ints(new int[9]))),
                n -> assertEquals(2, ((ArrayNode) n).bufferLength(0))));
        t.add(array(g, "utf8 offset 2 length 2 sizes offsets as 5 entries", null, null, NONE, 1, fx -> fx.type("u"),
                fx -> fx.array(2, 0, 2, bufs(NULL, fx.ints(0, 1, 2, 3, 4), fx.bytes(1, 2, 3, 4))),
                n -> assertEquals(20, ((ArrayNode) n).bufferLength(1))));
        t.add(array(g, "struct offset 2 length 3 with a 4-long child is LENGTH from MINIMAL", LENGTH, "children[0].length",
                MINIMAL, 1, fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(3, 0, 2, bufs(NULL), i32(fx, 4))));
        t.add(array(g, "sparse union offset 2 length 2 with a 3-long child is LENGTH from MINIMAL", LENGTH, "children[0].length",
                MINIMAL, 1, fx -> fx.type(fx.schema("+us:0", fx.schema("i"))),
                fx -> fx.array(2, 0, 2, bufs(fx.bytes(0, 0, 0, 0)), i32(fx, 3))));
        t.add(array(g, "fixed-size list offset 1 length 2 size 2 with a 5-long child is LENGTH from MINIMAL", LENGTH,
                "children[0].length", MINIMAL, 1, fx -> fx.type(fx.schema("+w:2", fx.schema("i"))),
                fx -> fx.array(2, 0, 1, bufs(NULL), i32(fx, 5))));
        t.add(array(g, "offset 5 with NULL validity and null_count 1 is NULL_POINTER from MINIMAL", NULL_POINTER, "buffers[0]",
                MINIMAL, 1, fx -> fx.type("i"), fx -> fx.array(2, 1, 5, bufs(NULL, fx.ints(new int[7])))));
        t.add(array(g, "utf8 offset 3: offsets[3] above offsets[5] is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1,
                fx -> fx.type("u"), fx -> fx.array(2, 0, 3, bufs(NULL, fx.ints(0, 1, 2, 9, 3, 4), fx.bytes(new int[16])))));
        t.add(array(g, "utf8 offset 1: decreasing inside the slice is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("u"), fx -> fx.array(3, 0, 1, bufs(NULL, fx.ints(0, 1, 3, 2, 4), fx.bytes(1, 2, 3, 4)))));
        t.add(array(g, "utf8 offset 2: decreasing only before the slice is accepted", null, null, NONE, 1, fx -> fx.type("u"),
                fx -> fx.array(2, 0, 2, bufs(NULL, fx.ints(7, 0, 1, 2, 3), fx.bytes(1, 2, 3, 4)))));
        t.add(array(g, "dictionary index bad only before the slice is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 1, bufs(NULL, fx.ints(99, 0))), utf8(fx, "a"))));
        t.add(array(g, "dictionary index bad inside the slice is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 1, bufs(NULL, fx.ints(0, 99))), utf8(fx, "a"))));
        t.add(array(g, "union type id bad only before the slice is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))),
                fx -> fx.array(1, 0, 1, bufs(fx.bytes(9, 0), fx.ints(0, 0)), i32(fx, 1))));
        t.add(array(g, "run-end offset 2 length 4 with last run end 5 is CONTENT from DEFAULT", CONTENT, "children[0].buffers[1]",
                DEFAULT, 1, MalformedInputMatrixTest::reeType,
                fx -> fx.array(4, 0, 2, bufs(), fx.array(1, 0, 0, bufs(NULL, fx.ints(5))), i32(fx, 1))));
        t.add(array(g, "bool offset 9 length 7 with NULL validity and null_count 0 is accepted", null, null, NONE, 1,
                fx -> fx.type("b"), fx -> fx.array(7, 0, 9, bufs(NULL, fx.bytes(0, 0))),
                n -> assertEquals(2, ((ArrayNode) n).bufferLength(1))));
    }

    private static void alignment(List<Case> t) {
        String g = "misaligned buffers and structs";
        t.add(array(g, "misaligned utf8 offsets are read unaligned and accepted", null, null, NONE, 1, fx -> fx.type("u"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.misaligned(fx.ints(0, 1, 3)), fx.bytes(65, 66, 67))),
                n -> assertEquals(3, ((ArrayNode) n).buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, 2))));
        t.add(array(g, "misaligned utf8 offsets decreasing is still CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("u"), fx -> fx.array(2, 0, 0, bufs(NULL, fx.misaligned(fx.ints(0, 2, 1)), fx.bytes(65, 66)))));
        t.add(array(g, "misaligned large utf8 offsets with negative first is CONTENT from DEFAULT", CONTENT, "buffers[1]",
                DEFAULT, 1, fx -> fx.type("U"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.misaligned(fx.longs(-1, 0)), fx.bytes(0)))));
        t.add(array(g, "misaligned int32 values are accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.misaligned(fx.ints(1, 2))))));
        t.add(array(g, "misaligned run ends are accepted", null, null, NONE, 1, MalformedInputMatrixTest::reeType,
                fx -> fx.array(3, 0, 0, bufs(), fx.array(2, 0, 0, bufs(NULL, fx.misaligned(fx.ints(1, 3)))), i32(fx, 2))));
        t.add(array(g, "misaligned dense union offsets with a bad offset is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))),
                fx -> fx.array(1, 0, 0, bufs(fx.bytes(0), fx.misaligned(fx.ints(5))), i32(fx, 1))));
        t.add(array(g, "misaligned int32 dictionary indices with a bad index is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.misaligned(fx.ints(3)))), utf8(fx, "a"))));
        t.add(array(g, "misaligned views and variadic sizes are accepted", null, null, NONE, 1, fx -> fx.type("vu"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.misaligned(fx.views(new int[][] {{20, 0, 0, 0}})), fx.zeros(32),
                        fx.misaligned(fx.longs(32))))));
        t.add(array(g, "misaligned buffers pointer array is accepted", null, null, NONE, 1, fx -> fx.type("i"), fx -> {
            MemorySegment a = i32(fx, 2);
            ArrowArray.buffers(a, fx.misaligned(ArrowArray.buffers(a).reinterpret(16)));
            return a;
        }));
        t.add(array(g, "misaligned children pointer array is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> {
                    MemorySegment a = fx.array(2, 0, 0, bufs(NULL), i32(fx, 2));
                    ArrowArray.children(a, fx.misaligned(ArrowArray.children(a).reinterpret(8)));
                    return a;
                }));
        t.add(array(g, "misaligned root ArrowArray struct is moved and accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.misaligned(fx.root(i32(fx, 2)))));
        t.add(device(g, "misaligned root ArrowDeviceArray struct is moved and accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.misaligned(fx.device(fx.root(i32(fx, 2)), CPU, -1, NULL))));
        t.add(schema(g, "misaligned root ArrowSchema struct is moved and accepted", null, null, 1,
                fx -> fx.misaligned(fx.rootSchema(fx.schema("+s", fx.schema("i"))))));
        t.add(array(g, "misaligned child ArrowArray struct is ALIGNMENT", ALIGNMENT, "children[0]", NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("i"))), fx -> fx.array(2, 0, 0, bufs(NULL), fx.misaligned(i32(fx, 2)))));
        t.add(array(g, "misaligned dictionary ArrowArray struct is ALIGNMENT", ALIGNMENT, "dictionary", NONE, 1,
                fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.ints(0))), fx.misaligned(utf8(fx, "a")))));
        t.add(schema(g, "misaligned child ArrowSchema struct is ALIGNMENT", ALIGNMENT, "children[0]", 1,
                fx -> fx.schema("+s", fx.misaligned(fx.schema("i")))));
        t.add(schema(g, "misaligned dictionary ArrowSchema struct is ALIGNMENT", ALIGNMENT, "dictionary", 1,
                fx -> fx.dict(fx.schema("i"), fx.misaligned(fx.schema("u")))));
    }

    private static void device(List<Case> t) {
        String g = "device fields";
        for (int type : new int[] {0, 5, 6, 17, -1, Integer.MAX_VALUE}) {
            t.add(device(g, "unknown device type " + type + " is DEVICE", Category.DEVICE, "device_type", NONE, 1,
                    fx -> fx.type("i"), fx -> fx.device(fx.root(i32(fx, 2)), type, 0, NULL)));
        }
        t.add(device(g, "CPU array with a sync event is DEVICE", DEVICE, "sync_event", NONE, 1, fx -> fx.type("i"),
                fx -> fx.device(fx.root(i32(fx, 2)), CPU, -1, fx.zeros(8))));
        t.add(device(g, "CPU array with device id 3 is DEVICE", DEVICE, "device_id", NONE, 1, fx -> fx.type("i"),
                fx -> fx.device(fx.root(i32(fx, 2)), CPU, 3, NULL)));
        t.add(device(g, "CPU array with device id -2 is DEVICE", DEVICE, "device_id", NONE, 1, fx -> fx.type("i"),
                fx -> fx.device(fx.root(i32(fx, 2)), CPU, -2, NULL)));
        for (int r = 0; r < 3; r++) {
            int ri = r;
            t.add(device(g, "non-zero reserved[" + r + "] is DEVICE", DEVICE, "reserved[" + r + "]", NONE, 1, fx -> fx.type("i"),
                    fx -> {
                        MemorySegment d = fx.device(fx.root(i32(fx, 2)), CPU, 0, NULL);
                        d.set(ValueLayout.JAVA_LONG, ArrowDeviceArray.reserved$offset() + 8L * ri, 1);
                        return d;
                    }));
        }
        t.add(device(g, "CUDA array asked for DEFAULT is DEVICE (contents unreadable), accepted at MINIMAL", DEVICE,
                "device_type", DEFAULT, 1, fx -> fx.type("u"),
                fx -> fx.device(fx.root(fx.array(1, 0, 0, bufs(NULL, fx.ints(0, 1), fx.bytes(65)))), CUDA, 0, fx.zeros(8))));
        t.add(device(g, "CPU array with bad offsets is CONTENT from DEFAULT", CONTENT, "buffers[1]", DEFAULT, 1, fx -> fx.type("u"),
                fx -> fx.device(fx.root(fx.array(1, 0, 0, bufs(NULL, fx.ints(1, 0), fx.bytes(0)))), CPU, -1, NULL)));
        t.add(device(g, "CPU array with device id -1 is accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.device(fx.root(i32(fx, 2)), CPU, -1, NULL)));
        t.add(device(g, "CPU array with device id 0 is accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.device(fx.root(i32(fx, 2)), CPU, 0, NULL)));
    }

    // ---- builders ----

    static MemorySegment i32(Fx fx, int... values) {
        if (values.length == 1) {
            int n = values[0];
            int[] v = new int[n];
            for (int i = 0; i < n; i++) {
                v[i] = i + 1;
            }
            return fx.array(n, 0, 0, bufs(NULL, fx.ints(v)));
        }
        return fx.array(values.length, 0, 0, bufs(NULL, fx.ints(values)));
    }

    static MemorySegment utf8(Fx fx, String s) {
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int[] v = new int[b.length];
        for (int i = 0; i < b.length; i++) {
            v[i] = b[i];
        }
        return fx.array(1, 0, 0, bufs(NULL, fx.ints(0, b.length), fx.bytes(v)));
    }

    static SchemaNode reeType(Fx fx) {
        return fx.type(fx.schema("+r", fx.schemaF("i", 0), fx.schema("i")));
    }

    static MemorySegment mapEntries(Fx fx) {
        return fx.schemaF("+s", 0, fx.schemaF("u", 0), fx.schema("i"));
    }

    static MemorySegment nestedLists(Fx fx, int lists) {
        MemorySegment s = fx.schema("i");
        for (int i = 0; i < lists; i++) {
            s = fx.schema("+l", s);
        }
        return s;
    }

    static MemorySegment meta(Fx fx, MemorySegment blob) {
        MemorySegment s = fx.schema("i");
        ArrowSchema.metadata(s, blob);
        return s;
    }

    static MemorySegment released(MemorySegment schema) {
        ArrowSchema.release(schema, NULL);
        return schema;
    }

    static MemorySegment releasedArray(MemorySegment array) {
        ArrowArray.release(array, NULL);
        return array;
    }

    static MemorySegment nChildren(MemorySegment schema, long n) {
        ArrowSchema.n_children(schema, n);
        return schema;
    }

    static MemorySegment nChildrenA(MemorySegment array, long n) {
        ArrowArray.n_children(array, n);
        return array;
    }

    static void setChild(MemorySegment schema, int i, MemorySegment child) {
        ArrowSchema.children(schema).reinterpret(8L * (i + 1)).setAtIndex(ValueLayout.ADDRESS, i, child);
    }

    static void setChildA(MemorySegment array, int i, MemorySegment child) {
        ArrowArray.children(array).reinterpret(8L * (i + 1)).setAtIndex(ValueLayout.ADDRESS, i, child);
    }

    // ---- row factories ----

    static Case schema(String g, String name, Category cat, String path, int releases, Function<Fx, MemorySegment> in) {
        return schema(g, name, cat, path, releases, in, null);
    }

    static Case schema(String g, String name, Category cat, String path, int releases, Function<Fx, MemorySegment> in,
                       Consumer<Object> check) {
        return new Case(g, name, Case.Kind.SCHEMA, null, in, cat, path, null, releases, check, null);
    }

    static Case array(String g, String name, Category cat, String path, ValidationLevel lowest, int releases,
                      Function<Fx, SchemaNode> type, Function<Fx, MemorySegment> in) {
        return array(g, name, cat, path, lowest, releases, type, in, null);
    }

    static Case array(String g, String name, Category cat, String path, ValidationLevel lowest, int releases,
                      Function<Fx, SchemaNode> type, Function<Fx, MemorySegment> in, Consumer<Object> check) {
        return new Case(g, name, Case.Kind.ARRAY, type, in, cat, path, lowest, releases, check, null);
    }

    static Case device(String g, String name, Category cat, String path, ValidationLevel lowest, int releases,
                       Function<Fx, SchemaNode> type, Function<Fx, MemorySegment> in) {
        return new Case(g, name, Case.Kind.DEVICE_ARRAY, type, in, cat, path, lowest, releases, null, null);
    }

    // ---- the runner ----

    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("cases")
    void matrixRow(Case c) {
        if (c.kind() == Case.Kind.SCHEMA) {
            runOnce(c, null);
        } else {
            for (ValidationLevel level : ValidationLevel.values()) {
                runOnce(c, level);
            }
        }
    }

    private static void runOnce(Case c, ValidationLevel level) {
        String where = c + (level == null ? "" : " @" + level);
        long handles = HandleTracker.liveHandles();
        int childReleases = Fx.CHILD_RELEASES.get();
        try (Fx fx = new Fx()) {
            SchemaNode type = c.type() == null ? null : c.type().apply(fx);
            MemorySegment p = prepare(fx, c, c.input().apply(fx));
            boolean rejects = c.expected() != null && (level == null || level.compareTo(c.lowest()) >= 0);
            if (rejects) {
                ValidationException e = assertThrows(ValidationException.class, () -> importAndClose(c, fx, type, p, level),
                        where + ": expected a ValidationException");
                assertEquals(c.expected(), e.category(), where + ": category of '" + e.getMessage() + "'");
                if (c.path() != null) {
                    assertEquals(c.path(), e.path(), where + ": path of '" + e.getMessage() + "'");
                }
            } else {
                importAndClose(c, fx, type, p, level);
            }
            assertEquals(c.releases(), fx.releases.get(), where + ": release calls of the root struct");
            assertEquals(0, fx.producedReleases.get(), where + ": schema release of the type");
        }
        assertEquals(childReleases, Fx.CHILD_RELEASES.get(), where + ": a child/dictionary release was called directly");
        assertEquals(handles, HandleTracker.liveHandles(), where + ": live handles");
    }

    /** Gives a freshly built root its counting release (builders that made it a root themselves are left alone). */
    private static MemorySegment prepare(Fx fx, Case c, MemorySegment p) {
        if (p.equals(NULL)) {
            return p;
        }
        long releaseOffset = c.kind() == Case.Kind.SCHEMA ? ArrowSchema.release$offset() : ArrowArray.release$offset();
        MemorySegment release = p.reinterpret(releaseOffset + 8).get(ValueLayout.ADDRESS_UNALIGNED, releaseOffset);
        if (release.equals(Fx.CHILD_RELEASE)) {
            if (c.kind() == Case.Kind.SCHEMA) {
                fx.rootSchema(p);
            } else {
                fx.root(p);
            }
        }
        return p;
    }

    private static void importAndClose(Case c, Fx fx, SchemaNode type, MemorySegment p, ValidationLevel level) {
        switch (c.kind()) {
            case SCHEMA -> {
                try (ImportedSchema s = ArrowC.importSchema(p)) {
                    assertEquals(0, fx.releases.get(), c + ": released before close");
                    if (c.check() != null) {
                        c.check().accept(s.root());
                    }
                }
            }
            case ARRAY, DEVICE_ARRAY -> {
                try (ImportedArray a = c.kind() == Case.Kind.ARRAY ? ArrowC.importArray(type, p, level)
                        : ArrowC.importDeviceArray(type, p, level)) {
                    assertEquals(0, fx.releases.get(), c + ": released before close");
                    if (c.check() != null) {
                        c.check().accept(a.root());
                    }
                }
            }
            default -> throw new IllegalStateException(c.kind().toString());
        }
    }

    // ---- the summary ----

    @Test
    void matrixHasAtLeast150RowsAndEveryCategoryOfTheIssue() {
        List<Case> all = new ArrayList<>(cases());
        all.addAll(ScriptedCasesTest.cases());
        all.addAll(NativeProducerTest.cases());
        Map<String, Long> perGroup = all.stream().collect(Collectors.groupingBy(Case::group, TreeMap::new, Collectors.counting()));
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "malformed-input matrix: %d rows%n", all.size()));
        perGroup.forEach((k, v) -> b.append(String.format(Locale.ROOT, "  %-40s %d%n", k, v)));
        Map<String, Long> lowest = all.stream().filter(c -> c.expected() != null && c.lowest() != null)
                .collect(Collectors.groupingBy(c -> c.lowest().name(), TreeMap::new, Collectors.counting()));
        b.append("  rejected rows by lowest detecting level: ").append(lowest).append(System.lineSeparator());
        for (ValidationLevel level : List.of(MINIMAL, DEFAULT, FULL)) {
            b.append("  first detected at ").append(level).append(" (accepted below):").append(System.lineSeparator());
            all.stream().filter(c -> c.expected() != null && c.lowest() == level).forEach(c -> b.append(String.format(
                    Locale.ROOT, "    %-11s %s%n", c.expected(), c.name())));
        }
        System.out.print(b);
        assertTrue(all.size() >= 150, b.toString());
        for (String g : List.of("released/NULL struct", "release exactly once", "release on failed import",
                "child/dictionary ownership", "cycles and depth", "format strings", "schema semantics", "metadata blob",
                "buffer count and presence", "negative/overflowing scalar fields", "parent vs child lengths",
                "offsets content", "non-zero offset and bitmaps", "misaligned buffers and structs", "device fields",
                "stream errors", "Java callbacks that throw")) {
            assertTrue(perGroup.getOrDefault(g, 0L) > 0, "no row in category " + g + "\n" + b);
        }
    }
}
