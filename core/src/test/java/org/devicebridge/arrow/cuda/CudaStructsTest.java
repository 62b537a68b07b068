package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.foreign.CudaStructs;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.internal.Callbacks;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The struct-tree writer behind CUDA exports, on the CPU: a tree written over host buffers
 * reads back with the same values through the validator and Arrow Java, and its memory is freed exactly
 * once whatever order (or threads) its nodes are released in.
 */
class CudaStructsTest {
    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private int treesBefore;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        treesBefore = CudaStructs.TREES.size();
    }

    @AfterEach
    void tearDown() {
        assertEquals(treesBefore, CudaStructs.TREES.size(), "every written tree freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    /** A CPU import of a table of struct, strings and lists: its nodes give the tree to write. */
    private record Source(List<FieldVector> vectors, VectorSchemaRoot root, SchemaNode schema, ImportedArray array)
            implements AutoCloseable {
        @Override
        public void close() {
            array.close();
            root.close();
        }
    }

    private Source source(int rows) {
        List<FieldVector> vectors = ExportTestSupport.family("nested", allocator, rows, true,
                new DictionaryProvider.MapDictionaryProvider());
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        SchemaNode schema;
        try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), null, out));
             ImportedSchema is = ArrowC.importSchema(es.segment())) {
            schema = is.root();
        }
        try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null))) {
            return new Source(vectors, root, schema, ArrowC.importArray(schema, ea.segment(), ValidationLevel.DEFAULT));
        }
    }

    @Test
    void writtenTreeValidatesAtFullAndReadsBackTheSameValues() {
        AtomicInteger freed = new AtomicInteger();
        try (Source src = source(41); Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ArrowArray.layout());
            Nodes.write(src.array().root(), Nodes::address, out, freed::incrementAndGet);
            assertEquals(treesBefore + 1, CudaStructs.TREES.size());
            ImportedArray again = ArrowC.importArray(src.schema(), out, ValidationLevel.FULL);
            try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, again, null)) {
                assertEquals(41, back.getRowCount());
                for (int i = 0; i < src.vectors().size(); i++) {
                    assertTrue(VectorEqualsVisitor.vectorEquals(src.vectors().get(i), back.getVector(i)),
                            "column " + i + " has the same values");
                }
                assertEquals(0, freed.get(), "not freed while Arrow Java holds the buffers");
            }
            assertEquals(1, freed.get(), "freed exactly once when the last Arrow buffer was released");
        }
    }

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> families() {
        java.util.List<org.junit.jupiter.params.provider.Arguments> out = new java.util.ArrayList<>();
        for (String family : ExportTestSupport.FAMILIES) {
            for (boolean nulls : new boolean[] {false, true}) {
                for (int rows : new int[] {0, 37}) {
                    out.add(org.junit.jupiter.params.provider.Arguments.of(family, nulls, rows));
                }
            }
        }
        return out.stream();
    }

    /**
     * The host half of the CUDA round trip, on the CPU: the tree a CUDA export writes (here
     * over the host buffers themselves) validates at FULL and reads back through Arrow Java with the same
     * values, for every family the GPU test uses.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0} nulls={1} rows={2}: a written tree reads back the same values")
    @org.junit.jupiter.params.provider.MethodSource("families")
    void everyFamilyReadsBackFromAWrittenTree(String family, boolean nulls, int rows) {
        org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry.register(org.apache.arrow.vector.extension.UuidType.INSTANCE);
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        DictionaryProvider.MapDictionaryProvider back = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, allocator, rows, nulls, dictionaries);
        AtomicInteger freed = new AtomicInteger();
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors); Arena arena = Arena.ofConfined()) {
            root.setRowCount(rows);
            SchemaNode schema;
            try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), dictionaries, out));
                 ImportedSchema is = ArrowC.importSchema(es.segment())) {
                schema = is.root();
            }
            try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, dictionaries, out, null));
                 ImportedArray host = ArrowC.importArray(schema, ea.segment(), ValidationLevel.DEFAULT)) {
                MemorySegment out = arena.allocate(ArrowArray.layout());
                Nodes.write(host.root(), Nodes::address, out, freed::incrementAndGet);
                ImportedArray again = ArrowC.importArray(schema, out, ValidationLevel.FULL);
                try (VectorSchemaRoot down = ArrowJava.importVectorSchemaRoot(allocator, again, back)) {
                    assertEquals(rows, down.getRowCount());
                    for (int i = 0; i < vectors.size(); i++) {
                        FieldVector o = vectors.get(i);
                        FieldVector c = down.getVector(i);
                        CudaArrowRoundTripTest.assertSameFieldOrStorage(o.getField(), c.getField());
                        for (int r = 0; r < rows; r++) {
                            final int row = r;
                            assertTrue(java.util.Objects.deepEquals(CudaArrowRoundTripTest.valueOf(o, r),
                                    CudaArrowRoundTripTest.valueOf(c, r)),
                                    () -> o.getName() + "[" + row + "]");
                        }
                    }
                }
            }
            ExportTestSupport.closeDictionaries(back); // imported dictionaries share the tree too
            assertEquals(1, freed.get(), "freed exactly once, when the last vector and dictionary were closed");
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
            ExportTestSupport.closeDictionaries(back);
        }
    }

    @Test
    void childMovedOutKeepsTheTreeAliveUntilItIsReleasedToo() {
        AtomicInteger freed = new AtomicInteger();
        try (Source src = source(9); Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ArrowArray.layout());
            Nodes.write(src.array().root(), Nodes::address, out, freed::incrementAndGet);
            MemorySegment moved = moveFirstChild(arena, out);
            Callbacks.invokeVoidPointer(ArrowArray.release(out), out);
            assertEquals(MemorySegment.NULL, ArrowArray.release(out), "root marked released");
            assertEquals(0, freed.get(), "the moved child still uses the tree");
            Callbacks.invokeVoidPointer(ArrowArray.release(moved), moved);
            assertEquals(1, freed.get(), "freed once the last node was released");
        }
    }

    @Test
    void concurrentReleaseOfRootAndMovedChildFreesExactlyOnce() throws Exception {
        for (int round = 0; round < 50; round++) {
            AtomicInteger freed = new AtomicInteger();
            try (Source src = source(5); Arena arena = Arena.ofShared()) {
                MemorySegment out = arena.allocate(ArrowArray.layout());
                Nodes.write(src.array().root(), Nodes::address, out, freed::incrementAndGet);
                MemorySegment moved = moveFirstChild(arena, out);
                CountDownLatch start = new CountDownLatch(1);
                Thread a = new Thread(() -> await(start, () -> Callbacks.invokeVoidPointer(ArrowArray.release(out), out)));
                Thread b = new Thread(() -> await(start, () -> Callbacks.invokeVoidPointer(ArrowArray.release(moved), moved)));
                a.start();
                b.start();
                start.countDown();
                a.join();
                b.join();
                assertEquals(1, freed.get(), "round " + round + ": freed exactly once");
            }
        }
    }

    /** Moves children[0] of {@code parent} into new memory, as a consumer may: the original is marked released. */
    private static MemorySegment moveFirstChild(Arena arena, MemorySegment parent) {
        MemorySegment ptrs = ArrowArray.children(parent).reinterpret(ArrowArray.n_children(parent) * 8);
        MemorySegment child = ptrs.getAtIndex(ValueLayout.ADDRESS, 0).reinterpret(ArrowArray.sizeof());
        MemorySegment moved = arena.allocate(ArrowArray.layout());
        moved.copyFrom(child);
        ArrowArray.release(child, MemorySegment.NULL);
        return moved;
    }

    private static void await(CountDownLatch latch, Runnable r) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        r.run();
    }
}
