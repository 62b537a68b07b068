package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.FieldPath;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One exported tree, one registry entry: every node is released exactly once whatever the order and the
 * thread, children moved out live on alone, and releases that name no live node (a copy released again, a
 * forged private_data) are counted and touch nothing. Trees of more than 64 nodes (a bit array) and more
 * than 65,536 (several registry keys) included.
 */
class ExportTreeTest {
    private BufferAllocator allocator;
    private Arena arena;
    private int liveBefore;
    private long staleBefore;

    @BeforeEach
    void setUp() {
        allocator = ExportTestSupport.allocator();
        arena = Arena.ofConfined();
        liveBefore = ExportTree.liveNodes();
        staleBefore = ExportTree.staleReleases();
    }

    @AfterEach
    void tearDown() {
        arena.close();
        assertEquals(liveBefore, ExportTree.liveNodes(), "every exported node released exactly once");
        assertEquals(0, allocator.getAllocatedMemory(), "Arrow allocator back to 0");
        allocator.close();
    }

    private VectorSchemaRoot longs(int columns, int rows) {
        List<FieldVector> vectors = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            BigIntVector v = new BigIntVector("c" + c, allocator);
            v.allocateNew(rows);
            for (int i = 0; i < rows; i++) {
                v.set(i, c * 1000L + i);
            }
            v.setValueCount(rows);
            vectors.add(v);
        }
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }

    private static VectorSchemaRoot nulls(int columns, int rows) {
        List<FieldVector> vectors = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            NullVector v = new NullVector("n" + c);
            v.setValueCount(rows);
            vectors.add(v);
        }
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }

    private static MemorySegment child(MemorySegment array, int i) {
        return ArrowArray.children(array).reinterpret(8L * (i + 1)).getAtIndex(ValueLayout.ADDRESS, i)
                .reinterpret(ArrowArray.sizeof());
    }

    private MemorySegment moveOut(MemorySegment struct) {
        MemorySegment moved = arena.allocate(ArrowArray.layout());
        moved.copyFrom(struct);
        ArrowArray.release(struct, MemorySegment.NULL);
        return moved;
    }

    private static void release(MemorySegment array) {
        Callbacks.invokeVoidPointer(ArrowArray.release(array), array);
    }

    private long stale() {
        return ExportTree.staleReleases() - staleBefore;
    }

    @Test
    void everyNodeOfOneExportCarriesItsOwnPrivateDataAndTheTreeIsOneExport() {
        MemorySegment array = arena.allocate(ArrowArray.layout());
        long exports = org.devicebridge.internal.ExportRegistry.outstandingExports();
        try (VectorSchemaRoot root = longs(3, 10)) {
            ArrowJava.exportRoot(root, null, array, null);
        }
        assertEquals(exports + 1, org.devicebridge.internal.ExportRegistry.outstandingExports(), "one registry entry");
        assertEquals(liveBefore + 4, ExportTree.liveNodes());
        Set<Long> keys = new HashSet<>();
        keys.add(ArrowArray.private_data(array).address());
        for (int i = 0; i < 3; i++) {
            keys.add(ArrowArray.private_data(child(array, i)).address());
        }
        assertEquals(4, keys.size(), "distinct private_data per node");
        release(array);
        assertEquals(exports, org.devicebridge.internal.ExportRegistry.outstandingExports());
        assertEquals(0, stale());
    }

    @Test
    void aCopyOfAReleasedStructReleasedAgainIsCountedAsStaleAndTouchesNothing() {
        MemorySegment array = arena.allocate(ArrowArray.layout());
        MemorySegment copy = arena.allocate(ArrowArray.layout());
        try (VectorSchemaRoot root = longs(2, 5)) {
            ArrowJava.exportRoot(root, null, array, null);
        }
        copy.copyFrom(array);
        release(array);
        assertEquals(MemorySegment.NULL, ArrowArray.release(array));
        ExportTree.release(ExportTree.ARRAY, copy);
        assertEquals(1, stale());
        assertEquals(MemorySegment.NULL, ArrowArray.release(copy), "marked released all the same");
        staleBefore += 1; // accounted for
    }

    @Test
    void aMovedChildReleasedTwiceIsReleasedOnceAndTheSecondIsStale() {
        MemorySegment array = arena.allocate(ArrowArray.layout());
        try (VectorSchemaRoot root = longs(3, 5)) {
            ArrowJava.exportRoot(root, null, array, null);
        }
        MemorySegment moved = moveOut(child(array, 1));
        MemorySegment copy = arena.allocate(ArrowArray.layout());
        copy.copyFrom(moved);
        long releases = ExportTestSupport.arrayReleases();
        release(array);
        assertEquals(3, ExportTestSupport.arrayReleases() - releases, "the parent and the two children in place");
        release(moved);
        assertEquals(4, ExportTestSupport.arrayReleases() - releases);
        ExportTree.release(ExportTree.ARRAY, copy);
        assertEquals(4, ExportTestSupport.arrayReleases() - releases, "nothing released twice");
        assertEquals(1, stale());
        staleBefore += 1;
    }

    @Test
    void forgedPrivateDataIsCountedAsStaleAndTouchesNothing() {
        MemorySegment array = arena.allocate(ArrowArray.layout());
        try (VectorSchemaRoot root = longs(2, 5)) {
            ArrowJava.exportRoot(root, null, array, null);
        }
        long live = ExportTree.liveNodes();
        long privateData = ArrowArray.private_data(array).address();
        long[] forged = {0L, -1L, privateData + 3, privateData + 65_535, privateData + (1L << 16), 0x7FFF_FFFF_FFFFL};
        for (long p : forged) {
            MemorySegment fake = arena.allocate(ArrowArray.layout());
            ArrowArray.release(fake, MemorySegment.ofAddress(ExportTree.ARRAY.stub));
            ArrowArray.private_data(fake, MemorySegment.ofAddress(p));
            release(fake);
            assertEquals(MemorySegment.NULL, ArrowArray.release(fake));
        }
        assertEquals(forged.length, stale());
        assertEquals(live, ExportTree.liveNodes(), "the live export untouched");
        staleBefore += forged.length;
        release(array);
    }

    @Test
    void childrenMovedOutAndReleasedOnOtherThreadsAfterTheParentAreEachReleasedOnce() throws Exception {
        int columns = 100; // more than 64 nodes: the released bits live in an array
        MemorySegment array = arena.allocate(ArrowArray.layout());
        try (Arena shared = Arena.ofShared()) {
            List<MemorySegment> moved = new ArrayList<>();
            try (VectorSchemaRoot root = longs(columns, 64)) {
                ArrowJava.exportRoot(root, null, array, null);
            }
            for (int i = 0; i < columns; i += 2) {
                MemorySegment m = shared.allocate(ArrowArray.layout());
                MemorySegment c = child(array, i);
                m.copyFrom(c);
                ArrowArray.release(c, MemorySegment.NULL);
                moved.add(m);
            }
            long releases = ExportTestSupport.arrayReleases();
            release(array);
            assertEquals(1 + columns / 2, ExportTestSupport.arrayReleases() - releases);
            assertNotEquals(0, allocator.getAllocatedMemory(), "the moved children hold their buffers");
            int threads = 4;
            CountDownLatch start = new CountDownLatch(1);
            AtomicBoolean failed = new AtomicBoolean();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int first = t;
                Thread w = new Thread(() -> {
                    try {
                        start.await();
                        for (int k = first; k < moved.size(); k += threads) {
                            MemorySegment m = moved.get(k);
                            if (ArrowArray.length(m) != 64) {
                                failed.set(true);
                            }
                            release(m);
                        }
                    } catch (Throwable e) {
                        failed.set(true);
                    }
                });
                w.start();
                workers.add(w);
            }
            start.countDown();
            for (Thread w : workers) {
                w.join();
            }
            assertFalse(failed.get());
            assertEquals(1 + columns, ExportTestSupport.arrayReleases() - releases, "every node exactly once");
        }
        assertEquals(0, stale());
    }

    @Test
    void aTreeOfMoreNodesThanOneKeyHoldsIsReleasedNodeByNodeAndMovedChildrenLiveOn() {
        int columns = (1 << 16) + 10; // node indices past 65,535 take a second registry key
        MemorySegment array = arena.allocate(ArrowArray.layout());
        MemorySegment schema = arena.allocate(ArrowSchema.layout());
        Schema s;
        try (VectorSchemaRoot root = nulls(columns, 3)) {
            s = root.getSchema();
            ArrowJava.exportRoot(root, null, array, schema);
        }
        assertEquals(liveBefore + 2 * (columns + 1), ExportTree.liveNodes());
        MemorySegment last = moveOut(child(array, columns - 1));
        MemorySegment low = moveOut(child(array, 5));
        long releases = ExportTestSupport.arrayReleases();
        release(array);
        assertEquals(columns - 1, ExportTestSupport.arrayReleases() - releases);
        assertEquals(3, ArrowArray.length(last));
        release(last);
        release(low);
        assertEquals(columns + 1, ExportTestSupport.arrayReleases() - releases);
        assertEquals(s.getFields().size(), ArrowSchema.n_children(schema));
        Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
        assertEquals(0, stale());
    }

    @Test
    void dataNestedDeeperThan64LevelsIsRefusedWithTheOutputsUntouchedAndDepth64IsExported() {
        MemorySegment array = arena.allocate(ArrowArray.layout());
        MemorySegment schema = arena.allocate(ArrowSchema.layout());
        try (FieldVector deepest = nestedLists(FieldPath.MAX_DEPTH)) { // its leaf 64 levels below the root
            ArrowJava.exportVector(deepest, null, array, schema);
            MemorySegment node = array;
            for (int level = 0; level < FieldPath.MAX_DEPTH; level++) {
                assertEquals(1, ArrowArray.n_children(node), "level " + level);
                node = child(node, 0);
            }
            assertEquals(0, ArrowArray.n_children(node), "the leaf");
            release(array);
            Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
        }
        try (FieldVector tooDeep = nestedLists(FieldPath.MAX_DEPTH + 1)) {
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrowJava.exportVector(tooDeep, null, array, null));
            assertEquals(ValidationException.Category.DEPTH, e.category(), e.getMessage());
            assertEquals(0L, ArrowArray.release(array).address(), "the array is untouched");
            e = assertThrows(ValidationException.class, () -> ArrowJava.exportField(tooDeep.getField(), null, schema));
            assertEquals(ValidationException.Category.DEPTH, e.category(), e.getMessage());
            assertEquals(0L, ArrowSchema.release(schema).address(), "the schema is untouched");
        }
        assertEquals(0, stale());
    }

    /** An empty list of lists, {@code levels} deep above a bigint leaf. */
    private FieldVector nestedLists(int levels) {
        Field f = Field.nullable("leaf", new ArrowType.Int(64, true));
        for (int i = 0; i < levels; i++) {
            f = new Field("l" + i, FieldType.nullable(ArrowType.List.INSTANCE), List.of(f));
        }
        FieldVector v = f.createVector(allocator);
        v.allocateNew();
        v.setValueCount(0);
        return v;
    }
}
