package org.devicebridge.arrow;

import static org.devicebridge.arrow.ArrayDataFixtures.bits;
import static org.devicebridge.arrow.ArrayDataFixtures.ints;
import static org.devicebridge.arrow.ArrayDataFixtures.longs;
import static org.devicebridge.arrow.ArrayDataFixtures.utf8Bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.stream.Stream;
import org.devicebridge.HandleClosedException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/** {@link ArrowC#viewArray}: arrays described in Java, checked as imports are, sized within their segments. */
class ArrayDataViewTest {
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void closeArena() {
        arena.close();
    }

    static Stream<String> caseNames() {
        try (Arena a = Arena.ofConfined()) {
            return ArrayDataFixtures.all(a).stream().map(ArrayDataFixtures.Case::name).toList().stream();
        }
    }

    private ArrayDataFixtures.Case named(String name) {
        return ArrayDataFixtures.all(arena).stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("caseNames")
    void everyCaseViewsAtFullWithItsValuesAndBuffersThatAreTheCallersMemory(String name) {
        ArrayDataFixtures.Case c = named(name);
        ArrayNode root = ArrowC.viewArray(c.schema(), c.data(), ValidationLevel.FULL);
        assertTrue(root.isHostAccessible());
        assertEquals(c.data().length(), root.length());
        assertEquals(c.data().offset(), root.offset());
        assertEquals(c.values(), ArrayDataFixtures.values(root));
        for (int i = 0; i < root.bufferCount(); i++) {
            MemorySegment given = c.data().buffers().get(i);
            assertEquals(given.address(), root.bufferPointer(i).address(), "buffer " + i);
            if (!given.equals(MemorySegment.NULL)) {
                assertEquals(given.address(), root.buffer(i).address(), "zero-copy buffer " + i);
                assertTrue(root.buffer(i).byteSize() <= given.byteSize(), "within the segment " + i);
            }
        }
    }

    @Test
    void buffersAreSizedFromMetadataIncludingTheOffset() {
        ArrayNode root = ArrowC.viewArray(ArrayDataFixtures.sliced(arena).schema(),
                ArrayDataFixtures.sliced(arena).data(), ValidationLevel.MINIMAL);
        assertEquals(5 * 8, root.bufferLength(1)); // offset 2 + length 3 elements of a 48-byte segment
        assertEquals(5 * 8, root.buffer(1).byteSize());
        assertTrue(root.buffer(1).isReadOnly());
    }

    @Test
    void belowDefaultTheDataOfAStringIsItsWholeSegmentAndAtDefaultItEndsAtTheLastOffset() {
        SchemaNode schema = SchemaNode.of("s", "u", List.of());
        ArrayData data = ArrayData.of(2, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 3), utf8Bytes(arena, "abcdefgh")));
        assertEquals(8, ArrowC.viewArray(schema, data, ValidationLevel.MINIMAL).bufferLength(2));
        assertEquals(8, ArrowC.viewArray(schema, data, ValidationLevel.NONE).bufferLength(2));
        assertEquals(3, ArrowC.viewArray(schema, data, ValidationLevel.DEFAULT).bufferLength(2));
    }

    @Test
    void closingTheCallersArenaMakesTheViewsBuffersUnreadable() {
        Arena own = Arena.ofConfined();
        ArrayDataFixtures.Case c = ArrayDataFixtures.int64WithNulls(own);
        ArrayNode root = ArrowC.viewArray(c.schema(), c.data(), ValidationLevel.FULL);
        MemorySegment values = root.buffer(1);
        assertEquals(2L, values.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 1));
        own.close();
        assertThrows(IllegalStateException.class, () -> values.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, 1));
        assertThrows(HandleClosedException.class, () -> root.buffer(1));
        assertThrows(HandleClosedException.class, () -> ArrowC.viewArray(c.schema(), c.data(), ValidationLevel.MINIMAL));
    }

    // ---- refusals: each a typed error naming the field ----

    private static ValidationException refused(SchemaNode schema, ArrayData data, ValidationLevel level, Category category,
                                               String path) {
        ValidationException e = assertThrows(ValidationException.class, () -> ArrowC.viewArray(schema, data, level));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        return e;
    }

    /** A struct of an int64 and a utf8 whose second child is {@code b}. */
    private ArrayData structWith(ArrayData b) {
        ArrayData a = ArrayData.of(4, 0, List.of(MemorySegment.NULL, longs(arena, 7, 8, 9, 10)));
        return ArrayData.of(4, 0, List.of(MemorySegment.NULL)).withChildren(List.of(a, b));
    }

    private SchemaNode structSchema() {
        return ArrayDataFixtures.struct(arena).schema();
    }

    @Test
    void aWrongBufferCountIsRefusedAtItsPath() {
        ArrayData b = ArrayData.of(4, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 2, 3, 4)));
        refused(structSchema(), structWith(b), ValidationLevel.MINIMAL, Category.STRUCTURE, "children[1].n_buffers");
    }

    @Test
    void aViewTypeNeedsAtLeastThreeBuffers() {
        ArrayData data = ArrayData.of(1, 0, List.of(MemorySegment.NULL, arena.allocate(16)));
        refused(SchemaNode.of("v", "vu", List.of()), data, ValidationLevel.MINIMAL, Category.STRUCTURE, "n_buffers");
    }

    @Test
    void aWrongChildCountIsRefused() {
        ArrayData a = ArrayData.of(4, 0, List.of(MemorySegment.NULL, longs(arena, 7, 8, 9, 10)));
        ArrayData data = ArrayData.of(4, 0, List.of(MemorySegment.NULL)).withChildren(List.of(a));
        refused(structSchema(), data, ValidationLevel.MINIMAL, Category.STRUCTURE, "n_children");
    }

    @Test
    void aMissingDictionaryIsRefusedAndAnUnexpectedOneToo() {
        ArrayDataFixtures.Case d = ArrayDataFixtures.dictionary(arena);
        ArrayData indices = ArrayData.of(4, 0, d.data().buffers());
        refused(d.schema(), indices, ValidationLevel.MINIMAL, Category.NULL_POINTER, "dictionary");
        ArrayDataFixtures.Case plain = ArrayDataFixtures.sliced(arena);
        refused(plain.schema(), plain.data().withDictionary(d.data().dictionary()), ValidationLevel.MINIMAL,
                Category.STRUCTURE, "dictionary");
    }

    @ParameterizedTest
    @EnumSource(ValidationLevel.class)
    void aNegativeLengthIsRefusedAtEveryLevel(ValidationLevel level) {
        ArrayData b = ArrayData.of(-1, 0, List.of(MemorySegment.NULL, ints(arena, 0), utf8Bytes(arena, "x")));
        refused(structSchema(), structWith(b), level, Category.SIZE, "children[1].length");
    }

    @Test
    void aNullCountAboveTheLengthIsRefused() {
        ArrayData data = ArrayData.of(2, 3, List.of(bits(arena, 0, 0), longs(arena, 1, 2)));
        refused(SchemaNode.of("n", "l", List.of()), data, ValidationLevel.MINIMAL, Category.SIZE, "null_count");
    }

    @Test
    void offsetsPastTheDataSegmentAreRefusedAtDefault() {
        ArrayData b = ArrayData.of(4, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 3, 3, 60), utf8Bytes(arena, "abcdef")));
        ValidationException e = refused(structSchema(), structWith(b), ValidationLevel.DEFAULT, Category.SIZE,
                "children[1].buffers[2]");
        assertEquals("children[1].buffers[2]: expected at least 60 bytes but found 6", e.getMessage());
        // MINIMAL reads no offset: the data buffer is its segment
        ArrowC.viewArray(structSchema(), structWith(b), ValidationLevel.MINIMAL);
    }

    @Test
    void anOffsetsSegmentTooShortForTheLengthIsRefusedBeforeItIsRead() {
        ArrayData data = ArrayData.of(4, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 2), utf8Bytes(arena, "abcd")));
        for (ValidationLevel level : ValidationLevel.values()) {
            refused(SchemaNode.of("s", "u", List.of()), data, level, Category.SIZE, "buffers[1]");
        }
    }

    @Test
    void aSegmentShorterThanTheDerivedSizeIsRefusedAtMinimal() {
        ArrayData data = ArrayData.of(5, 0, List.of(MemorySegment.NULL, longs(arena, 1, 2, 3, 4)));
        ValidationException e = refused(SchemaNode.of("n", "l", List.of()), data, ValidationLevel.MINIMAL, Category.SIZE,
                "buffers[1]");
        assertEquals("buffers[1]: expected at least 40 bytes but found 32", e.getMessage());
        // an offset moves the end too
        refused(SchemaNode.of("n", "l", List.of()), ArrayData.of(4, 0, data.buffers()).withOffset(1),
                ValidationLevel.MINIMAL, Category.SIZE, "buffers[1]");
    }

    @Test
    void anUnsizedAddressSegmentIsRefused() {
        MemorySegment unsized = MemorySegment.ofAddress(longs(arena, 1, 2).address());
        refused(SchemaNode.of("n", "l", List.of()), ArrayData.of(2, 0, List.of(MemorySegment.NULL, unsized)),
                ValidationLevel.MINIMAL, Category.SIZE, "buffers[1]");
    }

    @Test
    void aNullSegmentWhereBytesAreNeededIsRefused() {
        refused(SchemaNode.of("n", "l", List.of()), ArrayData.of(2, 0, List.of(MemorySegment.NULL, MemorySegment.NULL)),
                ValidationLevel.MINIMAL, Category.NULL_POINTER, "buffers[1]");
        refused(SchemaNode.of("n", "l", List.of()), ArrayData.of(2, 1, List.of(MemorySegment.NULL, longs(arena, 1, 2))),
                ValidationLevel.MINIMAL, Category.NULL_POINTER, "buffers[0]");
    }

    @Test
    void aNullSegmentIsAcceptedWhereTheLengthIsZero() {
        ArrayNode root = ArrowC.viewArray(SchemaNode.of("s", "u", List.of()),
                ArrayData.of(0, 0, List.of(MemorySegment.NULL, MemorySegment.NULL, MemorySegment.NULL)),
                ValidationLevel.FULL);
        assertEquals(0, root.length());
        assertEquals(MemorySegment.NULL, root.buffer(1));
        assertEquals(0, root.bufferLength(2));
    }

    @Test
    void aHeapSegmentIsRefused() {
        MemorySegment heap = MemorySegment.ofArray(new long[] {1, 2});
        refused(SchemaNode.of("n", "l", List.of()), ArrayData.of(2, 0, List.of(MemorySegment.NULL, heap)),
                ValidationLevel.MINIMAL, Category.STRUCTURE, "buffers[1]");
    }

    @Test
    void fullReadsContentsDefaultDoesNot() {
        ArrayData b = ArrayData.of(4, 0, List.of(MemorySegment.NULL, ints(arena, 0, 3, 1, 3, 4), utf8Bytes(arena, "abcd")));
        refused(structSchema(), structWith(b), ValidationLevel.FULL, Category.CONTENT, "children[1].buffers[1]");
        ArrowC.viewArray(structSchema(), structWith(b), ValidationLevel.DEFAULT);
    }

    @Test
    void aViewPointingPastItsVariadicBufferIsRefusedAtFull() {
        ArrayData good = ArrayDataFixtures.utf8ViewData(arena);
        List<MemorySegment> buffers = new java.util.ArrayList<>(good.buffers());
        buffers.set(3, utf8Bytes(arena, "tiny")); // the second long string no longer fits
        buffers.set(4, longs(arena, buffers.get(2).byteSize(), 4));
        refused(SchemaNode.of("v", "vu", List.of()), ArrayData.of(3, 0, buffers), ValidationLevel.FULL,
                Category.CONTENT, "buffers[1]");
    }

    @Test
    void aVariadicSizeAboveItsSegmentIsRefusedAtDefault() {
        ArrayData good = ArrayDataFixtures.utf8ViewData(arena);
        List<MemorySegment> buffers = new java.util.ArrayList<>(good.buffers());
        buffers.set(4, longs(arena, buffers.get(2).byteSize(), 1000));
        refused(SchemaNode.of("v", "vu", List.of()), ArrayData.of(3, 0, buffers), ValidationLevel.DEFAULT,
                Category.SIZE, "buffers[3]");
    }

    @Test
    void aStructNodeIsCheckedAgainstItsChildrenLengths() {
        ArrayData b = ArrayData.of(2, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 2), utf8Bytes(arena, "ab")));
        refused(structSchema(), structWith(b), ValidationLevel.MINIMAL, Category.LENGTH, "children[1].length");
    }

    @Test
    void theViewKnowsItsSchemaAndDictionary() {
        ArrayDataFixtures.Case d = ArrayDataFixtures.dictionary(arena);
        ArrayNode root = ArrowC.viewArray(d.schema(), d.data(), ValidationLevel.FULL);
        assertEquals("dictionary", root.dictionary().path());
        assertNull(root.dictionary().dictionary());
        assertEquals(3, root.dictionary().length());
    }

    @Test
    void aWideStructViewsEveryColumnAsASliceOfItsOwnSegment() {
        // 300 string columns: 900 buffers at nearby aligned addresses, past every initial table size
        int columns = 300;
        List<SchemaNode> fields = new java.util.ArrayList<>();
        List<ArrayData> children = new java.util.ArrayList<>();
        for (int c = 0; c < columns; c++) {
            fields.add(SchemaNode.of("c" + c, "u", List.of()));
            children.add(ArrayData.of(2, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 1 + c % 7),
                    utf8Bytes(arena, "x".repeat(1 + c % 7)))));
        }
        ArrayData batch = ArrayData.of(2, 0, List.of(MemorySegment.NULL)).withChildren(children);
        ArrayNode root = ArrowC.viewArray(SchemaNode.of("", "+s", fields), batch, ValidationLevel.FULL);
        for (int c = 0; c < columns; c++) {
            ArrayNode column = root.children().get(c);
            for (int i = 1; i < 3; i++) {
                MemorySegment given = children.get(c).buffers().get(i);
                assertEquals(given.address(), column.buffer(i).address(), "column " + c + " buffer " + i);
            }
            assertEquals(1 + c % 7, column.bufferLength(2), "column " + c + ": the data ends at the last offset");
        }
    }

    @Test
    void twoNodesSharingOneBufferAreEachCheckedAgainstTheirOwnSegment() {
        MemorySegment offsets = ints(arena, 0, 2, 4);
        MemorySegment data = utf8Bytes(arena, "abcd");
        ArrayData a = ArrayData.of(2, 0, List.of(MemorySegment.NULL, offsets, data));
        // b names the same data address with a segment too short for its offsets
        ArrayData b = ArrayData.of(2, 0, List.of(MemorySegment.NULL, offsets, data.asSlice(0, 3)));
        SchemaNode schema = SchemaNode.of("", "+s", List.of(SchemaNode.of("a", "u", List.of()),
                SchemaNode.of("b", "u", List.of())));
        ValidationException e = assertThrows(ValidationException.class, () -> ArrowC.viewArray(schema,
                ArrayData.of(2, 0, List.of(MemorySegment.NULL)).withChildren(List.of(a, b)), ValidationLevel.DEFAULT));
        assertEquals(Category.SIZE, e.category());
        assertTrue(e.getMessage().contains("children[1].buffers[2]"), e.getMessage());
    }
}
