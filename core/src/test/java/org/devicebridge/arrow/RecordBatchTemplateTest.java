package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.devicebridge.ValidationException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.junit.jupiter.api.Test;

/**
 * The record-batch template must accept and reject exactly what the general reader does, fill the same table,
 * and leave every message to the general reader: each malformed batch below is read both ways and must give
 * the same table or the same category, path and message.
 */
class RecordBatchTemplateTest {
    private static final String[] LEAVES = {"l", "b", "n", "w:3", "i", "tdD"};
    private static final long ROWS = 20;
    private static final long[] NUMBERS = {-2, -1, 0, 1, 2, 3, 7, ROWS - 1, ROWS, ROWS + 1, 1L << 61, Long.MAX_VALUE,
        Long.MIN_VALUE};

    /** A struct batch of {@link #LEAVES} with real buffers: the root, then its children. */
    private static MemorySegment[] batch(Arena arena) {
        MemorySegment[] nodes = new MemorySegment[LEAVES.length + 1];
        for (int i = 0; i < LEAVES.length; i++) {
            MemorySegment[] buffers = LEAVES[i].equals("n") ? new MemorySegment[0]
                    : new MemorySegment[] {arena.allocate(8), arena.allocate(8 * ROWS)};
            nodes[i + 1] = HandMade.array(arena, ROWS, buffers);
        }
        MemorySegment[] children = java.util.Arrays.copyOfRange(nodes, 1, nodes.length);
        nodes[0] = HandMade.array(arena, ROWS, new MemorySegment[] {arena.allocate(8)}, children);
        ArrowArray.null_count(nodes[0], 1);
        ArrowArray.null_count(nodes[1], 2);
        return nodes;
    }

    private static MemorySegment schema(Arena arena) {
        MemorySegment[] fields = new MemorySegment[LEAVES.length];
        for (int i = 0; i < LEAVES.length; i++) {
            fields[i] = HandMade.schema(arena, LEAVES[i]);
        }
        return HandMade.root(HandMade.schema(arena, "+s", fields));
    }

    /** The table as text, or the exception's category, path and message. */
    private static String outcome(MemorySegment root, SchemaNode schema, ValidationLevel level, boolean general) {
        try {
            ArrayTable t = new ArrayTable(schema.layout(), true);
            if (general) {
                ArrayReader.readGeneral(root, root.address(), t, level, null);
            } else {
                ArrayReader.read(root, root.address(), t, level);
            }
            StringBuilder s = new StringBuilder();
            for (int n = 0; n < t.size(); n++) {
                s.append(n).append(": ").append(t.length(n)).append(' ').append(t.nullCount(n)).append(' ')
                        .append(t.offset(n));
                for (int b = 0; b < t.bufferCount(n); b++) {
                    s.append(" [").append(t.bufferAddress(n, b)).append(", ").append(t.bufferLength(n, b)).append(']');
                }
                s.append('\n');
            }
            return s.toString();
        } catch (ValidationException e) {
            return e.category() + " at '" + e.path() + "': " + e.getMessage();
        }
    }

    /** One change to one struct of the batch: a field offset and the value written there. */
    private record Change(int node, long field, long value) {}

    private static List<Change> changes(Random r, MemorySegment[] nodes) {
        long[] numeric = {ArrowArray.length$offset(), ArrowArray.null_count$offset(), ArrowArray.offset$offset(),
            ArrowArray.n_buffers$offset(), ArrowArray.n_children$offset()};
        List<Change> out = new ArrayList<>();
        int count = 1 + r.nextInt(2);
        for (int k = 0; k < count; k++) {
            int node = r.nextInt(nodes.length);
            MemorySegment s = nodes[node];
            switch (r.nextInt(6)) {
                case 0, 1 -> out.add(new Change(node, numeric[r.nextInt(numeric.length)], NUMBERS[r.nextInt(NUMBERS.length)]));
                case 2 -> out.add(new Change(node, ArrowArray.release$offset(), 0));
                case 3 -> out.add(new Change(node, ArrowArray.dictionary$offset(), r.nextBoolean() ? 0 : nodes[1].address()));
                case 4 -> out.add(new Change(node, ArrowArray.buffers$offset(),
                        r.nextBoolean() ? 0 : ArrowArray.buffers(s).address()));
                default -> {
                    if (node == 0 && r.nextBoolean()) { // the root's validity buffer: NULL
                        out.add(new Change(-1, ArrowArray.buffers(s).address(), 0));
                    } else if (node == 0) { // a child pointer: NULL, misaligned, the root itself or another child
                        long[] pointers = {0, nodes[2].address() + 4, nodes[0].address(), nodes[3].address()};
                        long at = ArrowArray.children(s).address() + 8L * r.nextInt(LEAVES.length);
                        out.add(new Change(-1, at, pointers[r.nextInt(pointers.length)]));
                    } else if (ArrowArray.n_buffers(s) > 0) { // a buffer pointer: NULL
                        out.add(new Change(-1, ArrowArray.buffers(s).address() + 8L * r.nextInt(2), 0));
                    }
                }
            }
        }
        return out;
    }

    @Test
    void everyChangedBatchIsReadAsTheGeneralReaderReadsIt() {
        Random r = new Random(28);
        int rejected = 0;
        try (Arena arena = Arena.ofConfined(); ImportedSchema imported = ArrowC.importSchema(schema(arena))) {
            SchemaNode schema = imported.root();
            assertNotNull(schema.layout().template());
            for (int round = 0; round < 3000; round++) {
                MemorySegment[] nodes = batch(arena);
                for (Change c : changes(r, nodes)) {
                    MemorySegment at = c.node() < 0 ? MemorySegment.ofAddress(c.field()).reinterpret(8)
                            : nodes[c.node()].asSlice(c.field(), 8);
                    at.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, c.value());
                }
                for (ValidationLevel level : new ValidationLevel[] {ValidationLevel.MINIMAL, ValidationLevel.DEFAULT}) {
                    String general = outcome(nodes[0], schema, level, true);
                    assertEquals(general, outcome(nodes[0], schema, level, false), "round " + round + " at " + level);
                    rejected += general.contains(" at '") ? 1 : 0;
                }
            }
        }
        assertTrue(rejected > 1000 && rejected < 5800, "the changes must give both outcomes: " + rejected + " rejected");
    }

    @Test
    void aWellFormedBatchIsAcceptedByTheTemplateItself() {
        try (Arena arena = Arena.ofConfined(); ImportedSchema imported = ArrowC.importSchema(schema(arena))) {
            SchemaLayout layout = imported.root().layout();
            MemorySegment root = batch(arena)[0];
            ArrayTable table = new ArrayTable(layout, true);
            assertTrue(layout.template().read(root.address(), root.address(), table));
            assertEquals(2, table.nullCount(1));
            assertEquals(8 * ROWS, table.bufferLength(1, 1));
            assertEquals(3 * ROWS, table.bufferLength(4, 1)); // w:3
            assertEquals(3, table.bufferLength(2, 1)); // 20 booleans
        }
    }

    @Test
    void onlyRecordBatchesOfLeavesWithoutDictionaryHaveATemplate() {
        try (Arena arena = Arena.ofConfined()) {
            String[][] without = {{"+l", "l"}, {"+s", "u"}, {"+s", "+s"}};
            for (String[] formats : without) {
                MemorySegment leaf = formats[1].equals("+s") ? HandMade.schema(arena, "+s", HandMade.schema(arena, "l"))
                        : HandMade.schema(arena, formats[1]);
                try (ImportedSchema s = ArrowC.importSchema(HandMade.root(HandMade.schema(arena, formats[0], leaf)))) {
                    assertNull(s.root().layout().template(), String.join(" of ", formats));
                }
            }
            try (ImportedSchema s = ArrowC.importSchema(HandMade.root(HandMade.schema(arena, "l")))) {
                assertNull(s.root().layout().template(), "a leaf root");
            }
        }
    }
}
