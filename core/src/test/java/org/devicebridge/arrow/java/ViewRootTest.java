package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayData;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link ArrowJava#viewRoot} describes a root as {@link ArrowJava#exportRoot} writes it: node by node the same
 * lengths, null counts, offsets and buffers (the same addresses; equal bytes where the export makes a buffer of its
 * own), each buffer's segment at least as large as the size the import derives; its references live exactly as
 * long as the caller's arena. The independent side is the C struct tree of {@code exportRoot}, imported at FULL.
 */
class ViewRootTest extends ArrowTestSupport {
    private static final int ROWS = 7;
    private final ExportTestSupport.Baseline exports = new ExportTestSupport.Baseline();
    private final DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();

    @Override
    @AfterEach
    protected void checkNothingLeaked() {
        ExportTestSupport.closeDictionaries(dictionaries);
        exports.assertNothingLeaked(allocator);
        super.checkNothingLeaked();
    }

    /** A column, and the buffers (as {@code path.buffers[i]}) the export and the view each make themselves. */
    private record Column(String name, Set<String> made) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Arguments> columns() {
        return Stream.of(
                Arguments.of(new Column("int64 with nulls", Set.of())),
                Arguments.of(new Column("utf8", Set.of())),
                Arguments.of(new Column("list", Set.of())),
                Arguments.of(new Column("struct", Set.of())),
                Arguments.of(new Column("dictionary", Set.of())),
                // the sizes of the variadic buffers: in the export's block, in the arena for the view
                Arguments.of(new Column("utf8view", Set.of("children[0].buffers[" + (2 + variadicBuffers()) + "]"))),
                // Arrow Java's 16-byte values narrowed into 4 bytes: a buffer of the export's, another of the view's
                Arguments.of(new Column("decimal32", Set.of("children[0].buffers[1]"))),
                Arguments.of(new Column("dense union", Set.of())));
    }

    /** How many variadic buffers the utf8view column has (each long string of {@link ExportTestSupport#text}). */
    private static int variadicBuffers() {
        try (BufferAllocator a = ExportTestSupport.allocator();
             FieldVector v = ExportTestSupport.variable(a, "v", ArrowType.Utf8View.INSTANCE, ROWS, true)) {
            return ((org.apache.arrow.vector.BaseVariableWidthViewVector) v).getDataBuffers().size();
        }
    }

    private FieldVector column(String name) {
        return switch (name) {
            case "int64 with nulls" -> ExportTestSupport.fixed(allocator, "i64", new ArrowType.Int(64, true), ROWS, true);
            case "utf8" -> ExportTestSupport.variable(allocator, "utf8", ArrowType.Utf8.INSTANCE, ROWS, true);
            case "list" -> ExportTestSupport.list(ListVector.empty("list", allocator), ROWS, true);
            case "struct" -> ExportTestSupport.struct(allocator, "struct", ROWS, true);
            case "dictionary" -> ExportTestSupport.dictionaryEncoded(allocator, ROWS, true, dictionaries);
            case "utf8view" -> ExportTestSupport.variable(allocator, "v", ArrowType.Utf8View.INSTANCE, ROWS, true);
            case "decimal32" -> decimal32(ROWS, 999_999_999L);
            case "dense union" -> ExportTestSupport.denseUnion(allocator, ROWS, true);
            default -> throw new IllegalArgumentException(name);
        };
    }

    /** A decimal32 column as Arrow Java holds it (16-byte values); row 2 holds {@code big}, row 1 is null. */
    private DecimalVector decimal32(int rows, long big) {
        DecimalVector v = new DecimalVector(new Field("d32", FieldType.nullable(new ArrowType.Decimal(9, 2, 32)), null),
                allocator);
        v.allocateNew(rows);
        for (int i = 0; i < rows; i++) {
            v.setSafe(i, BigDecimal.valueOf(-12_345L * i, 2));
        }
        // written as Arrow Java lays it out (setSafe would refuse a value beyond the precision)
        v.getDataBuffer().setLong(2 * 16, big);
        v.getDataBuffer().setLong(2 * 16 + 8, big >> 63);
        v.setNull(1);
        v.setValueCount(rows);
        return v;
    }

    private static VectorSchemaRoot rootOf(FieldVector v) {
        VectorSchemaRoot root = new VectorSchemaRoot(List.of(v));
        root.setRowCount(v.getValueCount());
        return root;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("columns")
    void describesEveryNodeAsTheExportWritesIt(Column column) {
        try (VectorSchemaRoot root = rootOf(column(column.name()));
             Arena structs = Arena.ofConfined();
             Arena view = Arena.ofConfined()) {
            MemorySegment array = structs.allocate(ArrowArray.layout());
            MemorySegment schema = structs.allocate(ArrowSchema.layout());
            ArrowJava.exportSchema(root.getSchema(), dictionaries, schema);
            ArrowJava.exportRoot(root, dictionaries, array, null);
            ArrayData data = ArrowJava.viewRoot(root, dictionaries, view);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 ImportedArray exported = ArrowC.importArray(s.root(), array, ValidationLevel.FULL)) {
                List<String> made = new ArrayList<>();
                assertSameNode(exported.root(), data, made);
                assertEquals(column.made().stream().sorted().toList(), made.stream().sorted().toList(),
                        "the buffers that differ in address are exactly those the export makes");
            }
        }
    }

    /**
     * Compares node {@code want} (the export's, imported) with {@code got} (the view) and their subtrees; adds to
     * {@code made} the path of each buffer found at another address with equal bytes.
     */
    private static void assertSameNode(ArrayNode want, ArrayData got, List<String> made) {
        String at = want.path().isEmpty() ? "root" : want.path();
        assertEquals(want.length(), got.length(), at + " length");
        assertEquals(want.nullCount(), got.nullCount(), at + " null count");
        assertEquals(want.offset(), got.offset(), at + " offset");
        assertEquals(want.bufferCount(), got.buffers().size(), at + " buffer count");
        for (int i = 0; i < want.bufferCount(); i++) {
            String buffer = (want.path().isEmpty() ? "" : want.path() + ".") + "buffers[" + i + "]";
            MemorySegment segment = got.buffers().get(i);
            if (want.isBufferNull(i)) {
                assertEquals(MemorySegment.NULL, segment, buffer + " is NULL in both");
                continue;
            }
            assertNotEquals(0L, segment.address(), buffer + " is not NULL in the view");
            long exact = want.bufferLength(i);
            assertTrue(exact >= 0, buffer + ": the import at FULL knows its size");
            assertTrue(segment.byteSize() >= exact, buffer + ": the view's " + segment.byteSize()
                    + " bytes hold the " + exact + " the import derives");
            if (want.bufferPointer(i).address() != segment.address()) {
                made.add(buffer);
            }
            assertArrayEquals(want.buffer(i).toArray(ValueLayout.JAVA_BYTE),
                    segment.asSlice(0, exact).toArray(ValueLayout.JAVA_BYTE), buffer + " bytes");
        }
        assertEquals(want.children().size(), got.children().size(), at + " children");
        for (int c = 0; c < want.children().size(); c++) {
            assertSameNode(want.children().get(c), got.children().get(c), made);
        }
        if (want.dictionary() == null) {
            assertNull(got.dictionary(), at + " has no dictionary");
        } else {
            assertTrue(got.dictionary() != null, at + " has a dictionary");
            assertSameNode(want.dictionary(), got.dictionary(), made);
        }
    }

    @Test
    void theDescriptionStaysReadableAfterTheRootClosesAndTheArenaDropsEveryReference() {
        List<byte[]> before = new ArrayList<>();
        List<MemorySegment> segments = new ArrayList<>();
        try (Arena view = Arena.ofConfined()) {
            try (VectorSchemaRoot root = new VectorSchemaRoot(List.of(
                    ExportTestSupport.variable(allocator, "utf8", ArrowType.Utf8.INSTANCE, ROWS, true),
                    ExportTestSupport.variable(allocator, "v", ArrowType.Utf8View.INSTANCE, ROWS, true),
                    decimal32(ROWS, 999_999_999L),
                    ExportTestSupport.dictionaryEncoded(allocator, ROWS, true, dictionaries)))) {
                root.setRowCount(ROWS);
                collect(ArrowJava.viewRoot(root, dictionaries, view), segments);
                for (MemorySegment s : segments) {
                    before.add(s.toArray(ValueLayout.JAVA_BYTE));
                }
            }
            ExportTestSupport.closeDictionaries(dictionaries); // closed again after the test: a no-op
            assertTrue(allocator.getAllocatedMemory() > 0, "the arena still holds the buffers");
            for (int k = 0; k < segments.size(); k++) {
                assertArrayEquals(before.get(k), segments.get(k).toArray(ValueLayout.JAVA_BYTE), "buffer " + k);
            }
        }
        assertEquals(0, allocator.getAllocatedMemory(), "the arena's close dropped every reference");
    }

    private static void collect(ArrayData node, List<MemorySegment> out) {
        for (MemorySegment s : node.buffers()) {
            if (s.address() != 0) {
                out.add(s);
            }
        }
        node.children().forEach(c -> collect(c, out));
        if (node.dictionary() != null) {
            collect(node.dictionary(), out);
        }
    }

    @Test
    void aRootTheExportRefusesIsRefusedAndNothingIsHeld() {
        try (Arena view = Arena.ofConfined()) {
            // 10^10 does not fit in decimal32: refused after the view made its narrowed buffer
            try (VectorSchemaRoot root = rootOf(decimal32(ROWS, 10_000_000_000L))) {
                ValidationException e = assertThrows(ValidationException.class,
                        () -> ArrowJava.viewRoot(root, null, view));
                assertEquals(ValidationException.Category.CONTENT, e.category());
            }
            FieldVector utf8 = column("utf8");
            // a root whose row count its vector does not have (setRowCount would set the vector's too)
            try (VectorSchemaRoot root = new VectorSchemaRoot(List.of(utf8.getField()), List.of(utf8), ROWS + 1)) {
                ValidationException e = assertThrows(ValidationException.class,
                        () -> ArrowJava.viewRoot(root, null, view));
                assertEquals(ValidationException.Category.LENGTH, e.category());
            }
            assertEquals(0, allocator.getAllocatedMemory(), "no reference is held after a throw");
        }
    }

    @Test
    void aClosedArenaOrOneOfAnotherThreadIsRefusedAndNothingIsHeld() throws Exception {
        try (VectorSchemaRoot root = rootOf(column("utf8"))) {
            Arena closed = Arena.ofConfined();
            closed.close();
            assertThrows(HandleClosedException.class, () -> ArrowJava.viewRoot(root, null, closed));
            ExecutorService owner = Executors.newSingleThreadExecutor();
            try {
                Arena other = owner.submit(Arena::ofConfined).get();
                assertThrows(InvalidArgumentException.class, () -> ArrowJava.viewRoot(root, null, other));
                owner.submit(other::close).get();
            } finally {
                owner.shutdown();
            }
        }
        assertEquals(0, allocator.getAllocatedMemory(), "no reference is held after a throw");
    }

    /**
     * The upload's path: {@link ArrowC#viewArray} of the description gives the tree the import of the export gives.
     * Passes only once {@code viewArray} is built (until then it throws: this test fails on purpose).
     */
    @Test
    void viewArrayOfTheDescriptionGivesTheImportsTree() {
        try (VectorSchemaRoot root = new VectorSchemaRoot(List.of(
                ExportTestSupport.fixed(allocator, "i64", new ArrowType.Int(64, true), ROWS, true),
                ExportTestSupport.variable(allocator, "v", ArrowType.Utf8View.INSTANCE, ROWS, true),
                decimal32(ROWS, 999_999_999L),
                ExportTestSupport.denseUnion(allocator, ROWS, true),
                ExportTestSupport.dictionaryEncoded(allocator, ROWS, true, dictionaries)));
             Arena structs = Arena.ofConfined();
             Arena view = Arena.ofConfined()) {
            root.setRowCount(ROWS);
            MemorySegment array = structs.allocate(ArrowArray.layout());
            MemorySegment schema = structs.allocate(ArrowSchema.layout());
            ArrowJava.exportSchema(root.getSchema(), dictionaries, schema);
            ArrowJava.exportRoot(root, dictionaries, array, null);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 ImportedArray exported = ArrowC.importArray(s.root(), array, ValidationLevel.FULL)) {
                ArrayNode viewed = ArrowC.viewArray(s.root(), ArrowJava.viewRoot(root, dictionaries, view),
                        ValidationLevel.FULL);
                assertSameView(exported.root(), viewed);
            }
        }
    }

    private static void assertSameView(ArrayNode want, ArrayNode got) {
        String at = want.path().isEmpty() ? "root" : want.path();
        assertEquals(want.length(), got.length(), at + " length");
        assertEquals(want.nullCount(), got.nullCount(), at + " null count");
        assertEquals(want.offset(), got.offset(), at + " offset");
        assertEquals(want.bufferCount(), got.bufferCount(), at + " buffer count");
        for (int i = 0; i < want.bufferCount(); i++) {
            assertEquals(want.isBufferNull(i), got.isBufferNull(i), at + " buffers[" + i + "] NULL");
            assertEquals(want.bufferLength(i), got.bufferLength(i), at + " buffers[" + i + "] length");
            if (!want.isBufferNull(i)) {
                assertArrayEquals(want.buffer(i).toArray(ValueLayout.JAVA_BYTE),
                        got.buffer(i).toArray(ValueLayout.JAVA_BYTE), at + " buffers[" + i + "] bytes");
            }
        }
        assertEquals(want.children().size(), got.children().size(), at + " children");
        for (int c = 0; c < want.children().size(); c++) {
            assertSameView(want.children().get(c), got.children().get(c));
        }
        assertEquals(want.dictionary() == null, got.dictionary() == null, at + " dictionary");
        if (want.dictionary() != null) {
            assertSameView(want.dictionary(), got.dictionary());
        }
    }
}
