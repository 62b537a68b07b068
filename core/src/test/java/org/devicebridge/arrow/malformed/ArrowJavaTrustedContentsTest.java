package org.devicebridge.arrow.malformed;

import static org.devicebridge.arrow.malformed.Fx.bufs;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.NULL;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.i32;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.function.Function;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 item 2: the Arrow Java bridge never hands back a wrong value. An array imported at DEFAULT
 * whose contents FULL would refuse (and Arrow Java would read blindly) is refused by the bridge with a
 * typed {@link ValidationException} naming the field, and released exactly once; valid input loads
 * unchanged, and an array imported at FULL is not checked a second time.
 */
class ArrowJavaTrustedContentsTest extends ArrowTestSupport {

    /** Imports {@code array} against {@code type} at DEFAULT (which accepts it) and requires the bridge to refuse it. */
    private void refused(Function<Fx, SchemaNode> type, Function<Fx, MemorySegment> array, String path, String message) {
        try (Fx fx = new Fx()) {
            SchemaNode schema = type.apply(fx);
            ImportedArray imported = ArrowC.importArray(schema, fx.root(array.apply(fx)), ValidationLevel.DEFAULT);
            DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrowJava.importFieldVector(allocator, imported, dictionaries));
            assertEquals(Category.CONTENT, e.category(), e.getMessage());
            assertEquals(path, e.path(), e.getMessage());
            if (message != null) {
                assertEquals(message, e.getMessage());
            }
            assertFalse(imported.isLive(), "the array is released after the throw");
            assertEquals(1, fx.releases.get(), "release calls of the root struct");
            assertEquals(0, dictionaries.getDictionaryIds().size(), "no dictionary was added");
        }
    }

    private static Function<Fx, SchemaNode> listOfInt() {
        return fx -> fx.type(fx.schema("+l", fx.schema("i")));
    }

    @Test
    void nonMonotonicListOffsetsAtDefaultThrowATypedErrorAndReleaseTheArray() {
        // The example: offsets [0, 9, 3] over a 3-element child pass DEFAULT (first 0, last 3).
        refused(listOfInt(), fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 9, 3)), i32(fx, 1, 2, 3)), "buffers[1]",
                "buffers[1]: offsets not monotonic at index 2: expected at least 9 but found 3");
        // The same list as a column of a record batch, through importVectorSchemaRoot.
        try (Fx fx = new Fx()) {
            SchemaNode schema = fx.type(fx.schema("+s", fx.schema("+l", fx.schema("i"))));
            ImportedArray imported = ArrowC.importArray(schema, fx.root(fx.array(2, 0, 0, bufs(NULL),
                    fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 9, 3)), i32(fx, 1, 2, 3)))), ValidationLevel.DEFAULT);
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrowJava.importVectorSchemaRoot(allocator, imported, null));
            assertEquals("children[0].buffers[1]", e.path());
            assertFalse(imported.isLive());
            assertEquals(1, fx.releases.get());
        }
    }

    @Test
    void nonMonotonicUtf8OffsetsAtDefaultAreRefusedByTheBridge() {
        refused(fx -> fx.type("u"), fx -> fx.array(3, 0, 0, bufs(NULL, fx.ints(0, 3, 1, 4), fx.bytes(65, 66, 67, 68))),
                "buffers[1]", null);
        refused(fx -> fx.type("Z"), fx -> fx.array(2, 0, 1, bufs(NULL, fx.longs(0, 2, 1, 3), fx.bytes(1, 2, 3))),
                "buffers[1]", null);
        // A map's offsets, one level down.
        refused(fx -> fx.type(fx.schema("+l", fx.schemaF("+m", SchemaNode.FLAG_NULLABLE, MalformedInputMatrixTest.mapEntries(fx)))),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(0, 2)), fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 2, 1)),
                        fx.array(2, 0, 0, bufs(NULL), fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1, 2), fx.bytes(97, 98))),
                                i32(fx, 2)))), "children[0].buffers[1]", null);
    }

    @Test
    void badUnionTypeIdsAndOffsetsAtDefaultAreRefusedByTheBridge() {
        refused(fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))),
                fx -> fx.array(1, 0, 0, bufs(fx.bytes(1), fx.ints(0)), i32(fx, 1)), "buffers[0]", null);
        refused(fx -> fx.type(fx.schema("+ud:0", fx.schema("i"))),
                fx -> fx.array(1, 0, 0, bufs(fx.bytes(0), fx.ints(5)), i32(fx, 1)), "buffers[1]", null);
        refused(fx -> fx.type(fx.schema("+ud:0,1", fx.schema("i"), fx.schema("i"))),
                fx -> fx.array(3, 0, 0, bufs(fx.bytes(0, 1, 0), fx.ints(1, 0, 0)), i32(fx, 3), i32(fx, 3)), "buffers[1]", null);
        // Sparse: type id 4 is Arrow Java's own number for int32 (the only sparse ids its UnionVector holds).
        refused(fx -> fx.type(fx.schema("+us:4", fx.schema("i"))),
                fx -> fx.array(2, 0, 0, bufs(fx.bytes(4, 7)), i32(fx, 2)), "buffers[0]", null);
    }

    @Test
    void decreasingRunEndsAtDefaultAreRefusedByTheBridge() {
        refused(MalformedInputMatrixTest::reeType, fx -> fx.array(5, 0, 0, bufs(), i32(fx, 3, 2, 5), i32(fx, 3)),
                "children[0].buffers[1]", null);
    }

    @Test
    void outOfRangeDictionaryIndicesAtDefaultAreRefusedByTheBridge() {
        refused(fx -> fx.type(fx.dict(fx.schema("i"), fx.schema("u"))),
                fx -> fx.adict(fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1))), utf8(fx, "a")), "buffers[1]", null);
        refused(fx -> fx.type(fx.dict(fx.schema("s"), fx.schema("u"))),
                fx -> fx.adict(fx.array(1, 0, 0, bufs(NULL, fx.shorts((short) -1))), utf8(fx, "a")), "buffers[1]", null);
    }

    @Test
    void viewsAndListViewsOutOfBoundsAtDefaultAreRefusedByTheBridge() {
        refused(fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{20, 0, 1, 0}}), fx.zeros(32),
                fx.longs(32))), "buffers[1]", null);
        refused(fx -> fx.type("vz"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{20, 0, 0, 16}}), fx.zeros(32),
                fx.longs(32))), "buffers[1]", null);
        refused(fx -> fx.type(fx.schema("+vl", fx.schema("i"))),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(1), fx.ints(3)), i32(fx, 3)), "buffers[1]", null);
    }

    @Test
    void validInputAtDefaultLoadsAndFullImportsAreNotCheckedAgain() {
        try (Fx fx = new Fx()) {
            SchemaNode schema = listOfInt().apply(fx);
            ImportedArray imported = ArrowC.importArray(schema,
                    fx.root(fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1, 3)), i32(fx, 7, 8, 9))), ValidationLevel.DEFAULT);
            try (FieldVector v = ArrowJava.importFieldVector(allocator, imported, null)) {
                assertEquals(List.of(7), v.getObject(0));
                assertEquals(List.of(8, 9), v.getObject(1));
            }
            assertEquals(1, fx.releases.get());
        }
        // The checks run once: offsets changed after a FULL import are not read again (the level checked them),
        // while the same change after a DEFAULT import is caught by the bridge.
        for (ValidationLevel level : List.of(ValidationLevel.FULL, ValidationLevel.DEFAULT)) {
            try (Fx fx = new Fx()) {
                MemorySegment offsets = fx.ints(0, 1, 3);
                ImportedArray imported = ArrowC.importArray(listOfInt().apply(fx),
                        fx.root(fx.array(2, 0, 0, bufs(NULL, offsets), i32(fx, 7, 8, 9))), level);
                offsets.setAtIndex(ValueLayout.JAVA_INT, 1, 5);
                if (level == ValidationLevel.FULL) {
                    try (FieldVector v = ArrowJava.importFieldVector(allocator, imported, null)) {
                        assertEquals(2, v.getValueCount());
                    }
                } else {
                    ValidationException e = assertThrows(ValidationException.class,
                            () -> ArrowJava.importFieldVector(allocator, imported, null));
                    assertEquals("buffers[1]", e.path());
                }
                assertFalse(imported.isLive());
                assertEquals(1, fx.releases.get(), level + ": release calls");
            }
        }
        try (Fx fx = new Fx()) {
            ImportedArray imported = ArrowC.importArray(fx.type(fx.schema("+s", fx.schema("i"))),
                    fx.root(fx.array(2, 0, 0, bufs(NULL), i32(fx, 4, 5))), ValidationLevel.DEFAULT);
            try (VectorSchemaRoot root = ArrowJava.importVectorSchemaRoot(allocator, imported, null)) {
                assertEquals(5, root.getVector(0).getObject(1));
            }
            assertEquals(1, fx.releases.get());
        }
    }
}
