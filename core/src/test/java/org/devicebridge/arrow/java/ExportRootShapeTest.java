package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A root exported again reuses what the export learnt of its columns (its shape) and must still export what
 * the vectors hold now: new buffers after a reallocation or a reload, new null and value counts; and a column
 * whose vector changed class under the same fields must be planned anew, with the error a first export gives.
 */
class ExportRootShapeTest {
    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
    }

    @AfterEach
    void tearDown() {
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    /** Fills every column of {@code root} with {@code rows} values derived from {@code seed}, every {@code k}-th null. */
    private static void fill(VectorSchemaRoot root, int rows, int seed, int k) {
        BigIntVector a = (BigIntVector) root.getVector(0);
        IntVector b = (IntVector) root.getVector(1);
        BitVector c = (BitVector) root.getVector(2);
        Float8Vector d = (Float8Vector) root.getVector(3);
        FixedSizeBinaryVector e = (FixedSizeBinaryVector) root.getVector(4);
        for (int r = 0; r < rows; r++) {
            if (r % k == 0) {
                a.setNull(r);
                b.setNull(r);
                c.setNull(r);
                d.setNull(r);
                e.setNull(r);
            } else {
                a.setSafe(r, (long) seed * r);
                b.setSafe(r, seed + r);
                c.setSafe(r, (seed + r) & 1);
                d.setSafe(r, seed * 0.5 + r);
                e.setSafe(r, new byte[] {(byte) r, (byte) seed, 7});
            }
        }
        root.setRowCount(rows);
    }

    private static VectorSchemaRoot newRoot(BufferAllocator allocator) {
        BigIntVector a = new BigIntVector("a", allocator);
        IntVector b = new IntVector("b", allocator);
        BitVector c = new BitVector("c", allocator);
        Float8Vector d = new Float8Vector("d", allocator);
        FixedSizeBinaryVector e = new FixedSizeBinaryVector("e", allocator, 3);
        return new VectorSchemaRoot(List.<FieldVector>of(a, b, c, d, e));
    }

    /** Exports {@code root}, reads it back through arrow-c-data and compares every column, null counts included. */
    private void exportAndCompare(VectorSchemaRoot root, String when) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            MemorySegment schema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
            ArrowExport.exportRoot(root, array, schema);
            try (VectorSchemaRoot back = Data.importVectorSchemaRoot(allocator, ArrowArray.wrap(array.address()),
                    ArrowSchema.wrap(schema.address()), null)) {
                assertEquals(root.getRowCount(), back.getRowCount(), when);
                for (int i = 0; i < root.getFieldVectors().size(); i++) {
                    FieldVector want = root.getVector(i);
                    FieldVector got = back.getVector(i);
                    assertEquals(want.getNullCount(), got.getNullCount(), when + ": nulls of " + want.getName());
                    assertTrue(VectorEqualsVisitor.vectorEquals(want, got), when + ": values of " + want.getName());
                }
            }
        }
    }

    private static boolean threadHasAFittingShape() {
        ArrayExportPlan p = ArrayExportPlan.take();
        try {
            return p.shape != null && p.shape.fits();
        } finally {
            ArrayExportPlan.done(p);
        }
    }

    @Test
    void aRootExportedAgainExportsWhatItsVectorsHoldNow() {
        try (VectorSchemaRoot root = newRoot(allocator); VectorSchemaRoot other = newRoot(allocator)) {
            fill(root, 10, 3, 4);
            exportAndCompare(root, "first export");
            assertTrue(threadHasAFittingShape(), "the first export leaves its shape for the next");
            fill(root, 5000, 5, 7); // the vectors reallocate their buffers
            exportAndCompare(root, "after a reallocation");
            fill(root, 3, 9, 1); // every row null
            exportAndCompare(root, "all null");
            fill(other, 300, 11, 2);
            VectorUnloader unloader = new VectorUnloader(other);
            try (ArrowRecordBatch batch = unloader.getRecordBatch()) {
                new VectorLoader(root).load(batch); // the root's buffers replaced by other's
            }
            exportAndCompare(root, "after a reload");
            root.setRowCount(0);
            exportAndCompare(root, "empty");
        }
    }

    @Test
    void aVectorOfAnotherClassUnderTheSameFieldsIsPlannedAnew() {
        try (VectorSchemaRoot first = newRoot(allocator);
             VarCharVector text = new VarCharVector("b", allocator);
             Arena arena = Arena.ofConfined()) {
            fill(first, 10, 3, 4);
            exportAndCompare(first, "first export");
            Schema same = first.getSchema();
            List<FieldVector> vectors = new java.util.ArrayList<>(first.getFieldVectors());
            vectors.set(1, text); // a string vector under the int32 field
            text.allocateNew();
            text.setValueCount(10);
            VectorSchemaRoot swapped = new VectorSchemaRoot(same, vectors, 10);
            assertTrue(swapped.getSchema().getFields() == first.getSchema().getFields(), "the same field list");
            MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class,
                    () -> ArrowExport.exportRoot(swapped, null, array, arena.allocate(
                            org.devicebridge.generated.arrow.ArrowSchema.layout())));
            assertEquals("children[1]", e.path());
            assertTrue(e.getMessage().contains("does not have the buffer layout"), e.getMessage());
            assertEquals(0L, org.devicebridge.generated.arrow.ArrowArray.release(array).address(), "nothing written");
        }
    }

    @Test
    void aColumnWhoseValueCountIsNotTheRootsIsRefusedAsInAFirstExport() {
        try (VectorSchemaRoot root = newRoot(allocator); Arena arena = Arena.ofConfined()) {
            fill(root, 10, 3, 4);
            exportAndCompare(root, "first export");
            root.getVector(3).setValueCount(4);
            MemorySegment array = arena.allocate(org.devicebridge.generated.arrow.ArrowArray.layout());
            ValidationException e = assertThrows(ValidationException.class, () -> ArrowExport.exportRoot(root, null,
                    array, arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout())));
            assertEquals(ValidationException.Category.LENGTH, e.category());
            assertEquals("children[3]", e.path());
        }
    }
}
