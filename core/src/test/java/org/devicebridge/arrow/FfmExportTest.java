package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.testing.CountingLoggerFinder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link ArrowC#exportArray} and {@link ArrowC#exportSchema}: round trips through this library's importer at FULL,
 * and the release contract (once per tree, children movable, the owner closed once, nothing held after a throw).
 */
class FfmExportTest {
    private final Arena arena = Arena.ofConfined();
    private int liveBefore;
    private Allocations.Snapshot before;

    /** An owner that counts its closes. */
    static final class Owner implements AutoCloseable {
        final AtomicInteger closes = new AtomicInteger();

        @Override
        public void close() {
            closes.incrementAndGet();
        }
    }

    @BeforeEach
    void baseline() {
        liveBefore = ExportTree.liveNodes();
        before = Allocations.inUse();
    }

    @AfterEach
    void closeArena() {
        arena.close();
    }

    private void assertNothingHeld() {
        assertEquals(liveBefore, ExportTree.liveNodes(), "every exported node released exactly once");
        assertFalse(Allocations.inUse().minus(before).hasGrowth(), () -> Allocations.inUse().minus(before).describe(true));
    }

    static Stream<String> caseNames() {
        return ArrayDataViewTest.caseNames();
    }

    private ArrayDataFixtures.Case named(String name) {
        return ArrayDataFixtures.all(arena).stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow();
    }

    /** Calls the {@code release} callback at {@code releaseOffset} of {@code struct} through native code. */
    private static void release(MemorySegment struct, long releaseOffset) {
        MemorySegment fn = struct.get(ValueLayout.ADDRESS, releaseOffset);
        Callbacks.invokeVoidPointer(fn, struct);
    }

    /**
     * Moves child {@code k} of the exported array {@code parent} (which has {@code count} children) into a new
     * struct of {@code into}, as the C Data Interface describes a move: copied, then released in place.
     */
    private static MemorySegment moveChildOut(MemorySegment parent, int count, int k, Arena into) {
        MemorySegment inPlace = ArrowArray.children(parent).reinterpret(8L * count).getAtIndex(ValueLayout.ADDRESS, k)
                .reinterpret(ArrowArray.sizeof());
        MemorySegment moved = ArrowC.allocateArray(into);
        moved.copyFrom(inPlace);
        ArrowArray.release(inPlace, MemorySegment.NULL);
        return moved;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("caseNames")
    void roundTripsThroughTheImporterAtFull(String name) {
        ArrayDataFixtures.Case c = named(name);
        Owner owner = new Owner();
        MemorySegment schemaOut = ArrowC.allocateSchema(arena);
        MemorySegment arrayOut = ArrowC.allocateArray(arena);
        ArrowC.exportSchema(c.schema(), schemaOut);
        ArrowC.exportArray(c.schema(), c.data(), arrayOut, owner);
        try (ImportedSchema schema = ArrowC.importSchema(schemaOut);
             ImportedArray array = ArrowC.importArray(schema.root(), arrayOut, ValidationLevel.FULL)) {
            assertSameField(c.schema(), schema.root());
            ArrayNode root = array.root();
            assertEquals(c.data().offset(), root.offset());
            assertEquals(c.data().nullCount(), root.nullCount());
            assertEquals(c.values(), ArrayDataFixtures.values(root));
            for (int i = 0; i < root.bufferCount(); i++) {
                assertEquals(c.data().buffers().get(i).address(), root.bufferPointer(i).address(), "zero-copy " + i);
            }
            assertEquals(0, owner.closes.get(), "closed before the consumer released");
        }
        assertEquals(1, owner.closes.get());
        assertEquals(MemorySegment.NULL, ArrowArray.release(arrayOut));
        assertNothingHeld();
    }

    private static void assertSameField(SchemaNode want, SchemaNode got) {
        assertEquals(want.name(), got.name());
        assertEquals(want.format(), got.format());
        assertEquals(want.flags(), got.flags());
        assertEquals(want.metadata(), got.metadata());
        assertEquals(want.path(), got.path());
        assertEquals(want.children().size(), got.children().size());
        for (int i = 0; i < want.children().size(); i++) {
            assertSameField(want.children().get(i), got.children().get(i));
        }
        assertEquals(want.dictionary() == null, got.dictionary() == null);
        if (want.dictionary() != null) {
            assertSameField(want.dictionary(), got.dictionary());
        }
    }

    @Test
    void aSchemaRoundTripsWithNullNamesMetadataInOrderAndNestedPaths() {
        SchemaNode schema = SchemaNode.of(null, "+s", List.of(
                SchemaNode.of("x", "+l", List.of(SchemaNode.of("é", "i", List.of()).withFlags(SchemaNode.FLAG_NULLABLE))),
                SchemaNode.of("y", "+w:2", List.of(SchemaNode.of("item", "u", List.of())))
                        .withMetadata(Map.of("k", "v"))))
                .withMetadata(inOrder("b", "2", "a", "1"));
        MemorySegment out = ArrowC.allocateSchema(arena);
        ArrowC.exportSchema(schema, out);
        try (ImportedSchema imported = ArrowC.importSchema(out)) {
            assertSameField(schema, imported.root());
            assertNull(imported.root().name());
            assertEquals(List.of("b", "a"), List.copyOf(imported.root().metadata().keySet()));
            assertEquals("children[0].children[0]", imported.root().children().get(0).children().get(0).path());
        }
        assertNothingHeld();
    }

    private static Map<String, String> inOrder(String... keysAndValues) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            m.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }

    @Test
    void rootReleaseFreesTheWholeTreeOnceAndClosesTheOwnerOnce() {
        ArrayDataFixtures.Case c = ArrayDataFixtures.struct(arena);
        Owner owner = new Owner();
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(c.schema(), c.data(), out, owner);
        assertEquals(liveBefore + 3, ExportTree.liveNodes(), "the root and its two children");
        MemorySegment fn = ArrowArray.release(out);
        release(out, ArrowArray.release$offset());
        assertEquals(MemorySegment.NULL, ArrowArray.release(out));
        assertEquals(1, owner.closes.get());
        assertNothingHeld();
        // a second call of the saved callback (a consumer's bug) is counted, logged and touches nothing
        long stale = ExportTree.staleReleases();
        Callbacks.invokeVoidPointer(fn, out);
        assertEquals(stale + 1, ExportTree.staleReleases());
        assertEquals(1, owner.closes.get());
        assertNothingHeld();
    }

    @Test
    void aChildMovedOutOutlivesTheRootAndItsReleaseClosesTheOwner() {
        ArrayDataFixtures.Case c = ArrayDataFixtures.struct(arena);
        Owner owner = new Owner();
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(c.schema(), c.data(), out, owner);
        MemorySegment moved = moveChildOut(out, 2, 1, arena);
        release(out, ArrowArray.release$offset());
        assertEquals(0, owner.closes.get(), "the moved child still holds the export");
        assertEquals(liveBefore + 1, ExportTree.liveNodes(), "the moved child alone");
        // the moved child is still readable as an array: import it and read its strings
        SchemaNode b = c.schema().children().get(1);
        try (ImportedArray child = ArrowC.importArray(b, moved, ValidationLevel.FULL)) {
            assertEquals(Arrays.asList("a", "bc", null, "déf"), ArrayDataFixtures.values(child.root()));
        }
        assertEquals(1, owner.closes.get());
        assertEquals(MemorySegment.NULL, ArrowArray.release(moved));
        assertNothingHeld();
    }

    @Test
    void aChildMovedOutOfASixteenColumnExportIsReleasedOnceAfterTheRootAndThenClosesTheOwnerOnce() {
        // 17 nodes: the root's release claims its 15 children in place at once, and must leave the moved one
        int columns = 16;
        List<SchemaNode> fields = new ArrayList<>();
        List<ArrayData> children = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            fields.add(SchemaNode.of("c" + c, "l", List.of()));
            children.add(ArrayData.of(2, 0, List.of(MemorySegment.NULL, ArrayDataFixtures.longs(arena, c, -c))));
        }
        SchemaNode schema = SchemaNode.of(null, "+s", fields);
        ArrayData data = ArrayData.of(2, 0, List.of(MemorySegment.NULL)).withChildren(children);
        Owner owner = new Owner();
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(schema, data, out, owner);
        assertEquals(liveBefore + columns + 1, ExportTree.liveNodes());
        MemorySegment moved = moveChildOut(out, columns, 9, arena);
        long releases = ExportTree.ARRAY.releases();
        long stale = ExportTree.staleReleases();
        release(out, ArrowArray.release$offset());
        assertEquals(columns, ExportTree.ARRAY.releases() - releases, "the root and the 15 children in place");
        assertEquals(0, owner.closes.get(), "the moved child still holds the export");
        assertEquals(liveBefore + 1, ExportTree.liveNodes(), "the moved child alone");
        assertEquals(-9L, ArrowArray.buffers(moved).reinterpret(16).getAtIndex(ValueLayout.ADDRESS, 1)
                .reinterpret(16).getAtIndex(ValueLayout.JAVA_LONG, 1), "the moved child's data is still there");
        MemorySegment copy = ArrowC.allocateArray(arena);
        copy.copyFrom(moved);
        release(moved, ArrowArray.release$offset());
        assertEquals(columns + 1, ExportTree.ARRAY.releases() - releases, "the moved child released once");
        assertEquals(1, owner.closes.get());
        assertEquals(MemorySegment.NULL, ArrowArray.release(moved));
        assertEquals(stale, ExportTree.staleReleases());
        // a copy of the released child released again (a consumer's bug) is stale and touches nothing
        release(copy, ArrowArray.release$offset());
        assertEquals(stale + 1, ExportTree.staleReleases());
        assertEquals(columns + 1, ExportTree.ARRAY.releases() - releases);
        assertEquals(1, owner.closes.get());
        assertNothingHeld();
    }

    @Test
    void theRootAndAMovedChildReleasedAtOnceOnTwoThreadsCloseTheOwnerExactlyOnce() throws Exception {
        ArrayDataFixtures.Case c = ArrayDataFixtures.struct(arena);
        try (Arena structs = Arena.ofShared(); ExecutorService pool = Executors.newFixedThreadPool(2)) {
            for (int round = 0; round < 200; round++) {
                Owner owner = new Owner();
                MemorySegment out = ArrowC.allocateArray(structs);
                ArrowC.exportArray(c.schema(), c.data(), out, owner);
                MemorySegment moved = moveChildOut(out, 2, 0, structs);
                CyclicBarrier start = new CyclicBarrier(2);
                Future<?> root = pool.submit(() -> {
                    start.await();
                    release(out, ArrowArray.release$offset());
                    return null;
                });
                Future<?> child = pool.submit(() -> {
                    start.await();
                    release(moved, ArrowArray.release$offset());
                    return null;
                });
                root.get();
                child.get();
                assertEquals(1, owner.closes.get(), "round " + round);
                assertEquals(liveBefore, ExportTree.liveNodes(), "round " + round);
            }
        }
        assertNothingHeld();
    }

    @Test
    void aSchemaChildMovedOutOutlivesTheRoot() {
        SchemaNode schema = ArrayDataFixtures.struct(arena).schema();
        MemorySegment out = ArrowC.allocateSchema(arena);
        ArrowC.exportSchema(schema, out);
        MemorySegment inPlace = ArrowSchema.children(out).reinterpret(16).getAtIndex(ValueLayout.ADDRESS, 0)
                .reinterpret(ArrowSchema.sizeof());
        MemorySegment moved = ArrowC.allocateSchema(arena);
        moved.copyFrom(inPlace);
        ArrowSchema.release(inPlace, MemorySegment.NULL);
        release(out, ArrowSchema.release$offset());
        assertEquals(liveBefore + 1, ExportTree.liveNodes(), "the moved child alone");
        try (ImportedSchema child = ArrowC.importSchema(moved)) {
            assertEquals("a", child.root().name());
            assertEquals("l", child.root().format());
        }
        assertNothingHeld();
    }

    @Test
    void theDictionaryIsReleasedWithItsParent() {
        ArrayDataFixtures.Case c = ArrayDataFixtures.dictionary(arena);
        Owner owner = new Owner();
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(c.schema(), c.data(), out, owner);
        MemorySegment dictionary = ArrowArray.dictionary(out).reinterpret(ArrowArray.sizeof());
        assertFalse(ArrowArray.release(dictionary).equals(MemorySegment.NULL));
        release(out, ArrowArray.release$offset());
        assertEquals(1, owner.closes.get());
        assertNothingHeld();
    }

    @Test
    void aSharedArenaOwnerIsClosedByTheConsumersRelease() {
        Arena shared = Arena.ofShared();
        ArrayDataFixtures.Case c = ArrayDataFixtures.utf8View(shared);
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(c.schema(), c.data(), out, shared);
        try (ImportedArray array = ArrowC.importArray(c.schema(), out, ValidationLevel.FULL)) {
            assertEquals(c.values(), ArrayDataFixtures.values(array.root()));
        }
        assertFalse(shared.scope().isAlive());
        assertNothingHeld();
    }

    @Test
    void anOwnerWhoseCloseFailsIsLoggedNeverThrownIntoNativeCode() {
        ArrayDataFixtures.Case c = ArrayDataFixtures.sliced(arena);
        AtomicInteger closes = new AtomicInteger();
        AutoCloseable failing = () -> {
            closes.incrementAndGet();
            throw new IllegalStateException("owner failed on purpose");
        };
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(c.schema(), c.data(), out, failing);
        long errors = CountingLoggerFinder.loggedErrors();
        release(out, ArrowArray.release$offset());
        assertEquals(1, closes.get());
        assertEquals(errors + 1, CountingLoggerFinder.loggedErrors());
        CountingLoggerFinder.acknowledge(1);
        assertEquals(MemorySegment.NULL, ArrowArray.release(out));
        assertNothingHeld();
    }

    @Test
    void anExportThatThrowsLeavesOutUntouchedTheOwnerOpenAndNothingHeld() {
        MemorySegment out = ArrowC.allocateArray(arena);
        out.fill((byte) 0x5A);
        ArrowArray.release(out, MemorySegment.NULL);
        byte[] image = out.toArray(ValueLayout.JAVA_BYTE);
        Owner owner = new Owner();
        ArrayDataFixtures.Case c = ArrayDataFixtures.struct(arena);
        ArrayData broken = ArrayData.of(4, 0, List.of(MemorySegment.NULL)).withChildren(List.of(c.data().children().get(0)));
        ValidationException e = assertThrows(ValidationException.class,
                () -> ArrowC.exportArray(c.schema(), broken, out, owner));
        assertEquals(Category.STRUCTURE, e.category());
        ArrayData tooShort = ArrayData.of(5, 0, List.of(MemorySegment.NULL, ArrayDataFixtures.longs(arena, 1, 2)));
        e = assertThrows(ValidationException.class,
                () -> ArrowC.exportArray(SchemaNode.of("n", "l", List.of()), tooShort, out, owner));
        assertEquals("buffers[1]", e.path());
        assertArrayEquals(image, out.toArray(ValueLayout.JAVA_BYTE));
        assertEquals(0, owner.closes.get());
        assertNothingHeld();
    }

    @Test
    void anExportReadsNoBufferContents() {
        // offsets that FULL would refuse (and a data buffer they overrun) pass the MINIMAL check of an export
        ArrayData data = ArrayData.of(2, 0, List.of(MemorySegment.NULL, ArrayDataFixtures.ints(arena, 0, 9, 1),
                ArrayDataFixtures.utf8Bytes(arena, "ab")));
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(SchemaNode.of("s", "u", List.of()), data, out, null);
        assertEquals(2, ArrowArray.length(out));
        assertEquals(3, ArrowArray.n_buffers(out));
        release(out, ArrowArray.release$offset());
        assertNothingHeld();
    }

    @Test
    void aHeapOrNullOutStructIsRefused() {
        ArrayDataFixtures.Case c = ArrayDataFixtures.sliced(arena);
        MemorySegment heap = MemorySegment.ofArray(new long[10]);
        assertEquals("out", assertThrows(ValidationException.class,
                () -> ArrowC.exportArray(c.schema(), c.data(), heap, null)).path());
        assertEquals(Category.NULL_POINTER, assertThrows(ValidationException.class,
                () -> ArrowC.exportSchema(c.schema(), MemorySegment.NULL)).category());
        assertNothingHeld();
    }

    @Test
    void anExportedArrayKeepsTheOffsetAndTheBufferAddressesAsGiven() {
        ArrayDataFixtures.Case c = ArrayDataFixtures.sliced(arena);
        MemorySegment out = ArrowC.allocateArray(arena);
        ArrowC.exportArray(c.schema(), c.data(), out, null);
        assertEquals(2, ArrowArray.offset(out));
        assertEquals(3, ArrowArray.length(out));
        MemorySegment buffers = ArrowArray.buffers(out).reinterpret(16);
        assertEquals(0, buffers.getAtIndex(ValueLayout.JAVA_LONG, 0));
        assertEquals(c.data().buffers().get(1).address(), buffers.getAtIndex(ValueLayout.JAVA_LONG, 1));
        assertTrue(ArrowArray.children(out).equals(MemorySegment.NULL));
        release(out, ArrowArray.release$offset());
        assertNothingHeld();
    }
}
