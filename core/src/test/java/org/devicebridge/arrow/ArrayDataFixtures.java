package org.devicebridge.arrow;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Arrays described in Java ({@link ArrayData}) over buffers written by hand in an arena, each with its field and
 * the values it holds, for the view and the FFM-only export; plus readers of those values from an
 * {@link ArrayNode}, written from the Arrow format, not from the library's code.
 */
final class ArrayDataFixtures {
    private ArrayDataFixtures() {}

    /** A field, an array of it, and its values ({@code null} for a null), element by element. */
    record Case(String name, SchemaNode schema, ArrayData data, List<Object> values) {
        @Override
        public String toString() {
            return name;
        }
    }

    static final String SHORT = "short";
    static final String LONG_A = "a string longer than twelve";
    static final String LONG_B = "another long string, here";

    /** Every case, its buffers in {@code arena}. */
    static List<Case> all(Arena arena) {
        return List.of(int64WithNulls(arena), utf8(arena), listOfInt32(arena), struct(arena), dictionary(arena),
                utf8View(arena), sliced(arena));
    }

    static Case int64WithNulls(Arena arena) {
        SchemaNode schema = SchemaNode.of("n", "l", List.of()).withFlags(SchemaNode.FLAG_NULLABLE)
                .withMetadata(Map.of("unit", "metres"));
        ArrayData data = ArrayData.of(5, 1, List.of(bits(arena, 1, 1, 0, 1, 1), longs(arena, 1, 2, 0, 4, 5)));
        return new Case("int64 with nulls", schema, data, Arrays.asList(1L, 2L, null, 4L, 5L));
    }

    static Case utf8(Arena arena) {
        SchemaNode schema = SchemaNode.of("s", "u", List.of()).withFlags(SchemaNode.FLAG_NULLABLE);
        return new Case("utf8", schema, utf8Data(arena), Arrays.asList("a", "bc", null, "déf"));
    }

    /** {@code ["a", "bc", null, "déf"]}: offsets into 7 bytes of data. */
    static ArrayData utf8Data(Arena arena) {
        return ArrayData.of(4, 1, List.of(bits(arena, 1, 1, 0, 1), ints(arena, 0, 1, 3, 3, 7), utf8Bytes(arena, "abcdéf")));
    }

    static Case listOfInt32(Arena arena) {
        SchemaNode schema = SchemaNode.of("l", "+l", List.of(SchemaNode.of("item", "i", List.of())));
        ArrayData child = ArrayData.of(3, 0, List.of(MemorySegment.NULL, ints(arena, 1, 2, 3)));
        ArrayData data = ArrayData.of(3, 0, List.of(MemorySegment.NULL, ints(arena, 0, 2, 2, 3)))
                .withChildren(List.of(child));
        return new Case("list<int32>", schema, data, List.of(List.of(1, 2), List.of(), List.of(3)));
    }

    static Case struct(Arena arena) {
        SchemaNode schema = SchemaNode.of("st", "+s", List.of(
                SchemaNode.of("a", "l", List.of()).withFlags(SchemaNode.FLAG_NULLABLE),
                SchemaNode.of("b", "u", List.of()).withFlags(SchemaNode.FLAG_NULLABLE)));
        ArrayData a = ArrayData.of(4, 0, List.of(MemorySegment.NULL, longs(arena, 7, 8, 9, 10)));
        ArrayData data = ArrayData.of(4, 0, List.of(MemorySegment.NULL)).withChildren(List.of(a, utf8Data(arena)));
        return new Case("struct", schema, data, List.of(List.of(7L, "a"), List.of(8L, "bc"),
                Arrays.asList(9L, null), List.of(10L, "déf")));
    }

    static Case dictionary(Arena arena) {
        SchemaNode schema = SchemaNode.of("d", "i", List.of()).withDictionary(SchemaNode.of(null, "u", List.of()))
                .withFlags(SchemaNode.FLAG_DICTIONARY_ORDERED);
        ArrayData values = ArrayData.of(3, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 2, 3),
                utf8Bytes(arena, "xyz")));
        ArrayData data = ArrayData.of(4, 0, List.of(MemorySegment.NULL, ints(arena, 0, 1, 0, 2)))
                .withDictionary(values);
        return new Case("dictionary", schema, data, List.of("x", "y", "x", "z"));
    }

    /** A utf8 view: one inline string and two in two variadic buffers. */
    static Case utf8View(Arena arena) {
        SchemaNode schema = SchemaNode.of("v", "vu", List.of());
        return new Case("utf8 view", schema, utf8ViewData(arena), List.of(SHORT, LONG_A, LONG_B));
    }

    static ArrayData utf8ViewData(Arena arena) {
        MemorySegment a = utf8Bytes(arena, LONG_A);
        MemorySegment b = utf8Bytes(arena, "xx" + LONG_B);
        MemorySegment views = arena.allocate(3 * 16L);
        inline(views, 0, SHORT);
        outOfLine(views, 1, LONG_A, 0, 0);
        outOfLine(views, 2, LONG_B, 1, 2);
        return ArrayData.of(3, 0, List.of(MemorySegment.NULL, views, a, b, longs(arena, a.byteSize(), b.byteSize())));
    }

    /** int64 {@code [10..15]} seen from offset 2, length 3. */
    static Case sliced(Arena arena) {
        SchemaNode schema = SchemaNode.of("sl", "l", List.of());
        ArrayData data = ArrayData.of(3, 0, List.of(MemorySegment.NULL, longs(arena, 10, 11, 12, 13, 14, 15)))
                .withOffset(2);
        return new Case("sliced int64", schema, data, List.of(12L, 13L, 14L));
    }

    // ---- buffers ----

    static MemorySegment longs(Arena arena, long... v) {
        return arena.allocateFrom(ValueLayout.JAVA_LONG, v);
    }

    static MemorySegment ints(Arena arena, int... v) {
        return arena.allocateFrom(ValueLayout.JAVA_INT, v);
    }

    static MemorySegment utf8Bytes(Arena arena, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        return arena.allocateFrom(ValueLayout.JAVA_BYTE, b);
    }

    /** A validity bitmap, one {@code 0}/{@code 1} per element, least significant bit first. */
    static MemorySegment bits(Arena arena, int... valid) {
        MemorySegment s = arena.allocate((valid.length + 7) / 8);
        for (int i = 0; i < valid.length; i++) {
            if (valid[i] != 0) {
                s.set(ValueLayout.JAVA_BYTE, i / 8, (byte) (s.get(ValueLayout.JAVA_BYTE, i / 8) | (1 << (i % 8))));
            }
        }
        return s;
    }

    private static void inline(MemorySegment views, int i, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        views.set(ValueLayout.JAVA_INT_UNALIGNED, 16L * i, b.length);
        MemorySegment.copy(b, 0, views, ValueLayout.JAVA_BYTE, 16L * i + 4, b.length);
    }

    private static void outOfLine(MemorySegment views, int i, String s, int buffer, int offset) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        views.set(ValueLayout.JAVA_INT_UNALIGNED, 16L * i, b.length);
        MemorySegment.copy(b, 0, views, ValueLayout.JAVA_BYTE, 16L * i + 4, 4);
        views.set(ValueLayout.JAVA_INT_UNALIGNED, 16L * i + 8, buffer);
        views.set(ValueLayout.JAVA_INT_UNALIGNED, 16L * i + 12, offset);
    }

    // ---- values read back from a view, by the Arrow format ----

    /** The values of {@code node}, element by element, as the case lists them. */
    static List<Object> values(ArrayNode node) {
        List<Object> out = new ArrayList<>();
        for (long j = 0; j < node.length(); j++) {
            out.add(value(node, j));
        }
        return out;
    }

    private static Object value(ArrayNode n, long j) {
        long at = n.offset() + j;
        if (n.dictionary() != null) {
            return value(n.dictionary(), n.buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at));
        }
        ArrowDataType.TypeId id = n.type().id();
        if (!n.isBufferNull(0)
                && (n.buffer(0).get(ValueLayout.JAVA_BYTE, at / 8) & (1 << (at % 8))) == 0) {
            return null;
        }
        return switch (id) {
            case INT64 -> n.buffer(1).getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, at);
            case INT32 -> n.buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at);
            case UTF8 -> {
                int from = n.buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at);
                int to = n.buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at + 1);
                yield string(n.buffer(2).asSlice(from, to - from));
            }
            case UTF8_VIEW -> {
                MemorySegment view = n.buffer(1).asSlice(16 * at, 16);
                int length = view.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                yield length <= 12 ? string(view.asSlice(4, length))
                        : string(n.buffer(2 + view.get(ValueLayout.JAVA_INT_UNALIGNED, 8))
                                .asSlice(view.get(ValueLayout.JAVA_INT_UNALIGNED, 12), length));
            }
            case LIST -> {
                int from = n.buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at);
                int to = n.buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, at + 1);
                List<Object> items = new ArrayList<>();
                for (int k = from; k < to; k++) {
                    items.add(value(n.children().get(0), k)); // offsets index the child's elements
                }
                yield items;
            }
            case STRUCT -> {
                List<Object> fields = new ArrayList<>();
                for (ArrayNode c : n.children()) {
                    fields.add(value(c, at)); // a child spans the parent's offset + length
                }
                yield fields;
            }
            default -> throw new AssertionError("no reader for " + n.type());
        };
    }

    private static String string(MemorySegment s) {
        return new String(s.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
    }
}
