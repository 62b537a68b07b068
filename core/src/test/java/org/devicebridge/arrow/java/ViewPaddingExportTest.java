package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ViewVarBinaryVector;
import org.apache.arrow.vector.ViewVarCharVector;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowTestSupport;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.Test;

/**
 * Inline views (12 bytes or fewer) must be zero after their bytes (Arrow columnar format; Arrow C++
 * ValidateFull, and FULL here). Arrow Java 19 does not always keep that: its split (what
 * {@code VectorSchemaRoot.slice} uses) writes each inline view's length and bytes into a view buffer it
 * allocates without zeroing, so the rest of the 16 bytes is whatever the allocator handed out. The export
 * hands out zero-padded views: the vector's own buffer where it is already clean (zero copy), else a copy the
 * export owns and frees in its release; the vector itself is never written. The GPU failure this reproduces:
 * {@code CudaArrowRoundTripTest.slicedTablesRoundTripWithTheirOwnValues} ("views" family) at FULL.
 */
class ViewPaddingExportTest extends ArrowTestSupport {
    private final ExportTestSupport.Baseline exports = new ExportTestSupport.Baseline();

    @Override
    @org.junit.jupiter.api.AfterEach
    protected void checkNothingLeaked() {
        exports.assertNothingLeaked(allocator);
        super.checkNothingLeaked();
    }

    private static final List<String> VALUES = java.util.Arrays.asList("ab", null, "a value longer than twelve", "", "x",
            "twelve bytes");

    private ViewVarCharVector strings() {
        ViewVarCharVector v = new ViewVarCharVector("s", allocator);
        v.allocateNew();
        for (int i = 0; i < VALUES.size(); i++) {
            if (VALUES.get(i) == null) {
                v.setNull(i);
            } else {
                v.setSafe(i, VALUES.get(i).getBytes(StandardCharsets.UTF_8));
            }
        }
        v.setValueCount(VALUES.size());
        return v;
    }

    /** Writes 0x5A after the inline bytes of every valid inline view, as an unzeroed allocation leaves them. */
    private static void poison(FieldVector v) {
        ArrowBuf views = v.getDataBuffer();
        for (int i = 0; i < v.getValueCount(); i++) {
            int size = views.getInt(i * 16L);
            if (!v.isNull(i) && size < 12) {
                for (long b = 4 + size; b < 16; b++) {
                    views.setByte(i * 16L + b, 0x5A);
                }
            }
        }
    }

    private static MemorySegment exportedViews(MemorySegment array) {
        return ArrowArray.buffers(array).reinterpret(16).getAtIndex(ValueLayout.ADDRESS, 1);
    }

    private void assertImportsAtFullWithTheSameValues(FieldVector original, MemorySegment array, MemorySegment schema) {
        try (ImportedSchema s = ArrowC.importSchema(schema);
             FieldVector back = ArrowJava.importFieldVector(allocator,
                     ArrowC.importArray(s.root(), array, ValidationLevel.FULL), null)) {
            assertEquals(original.getValueCount(), back.getValueCount());
            for (int i = 0; i < original.getValueCount(); i++) {
                assertEquals(original.getObject(i), back.getObject(i), "row " + i);
            }
        }
    }

    @Test
    void aCleanViewBufferIsExportedWithoutACopy() {
        try (ViewVarCharVector v = strings(); Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportVector(v, null, array, schema);
            assertEquals(v.getDataBuffer().memoryAddress(), exportedViews(array).address(), "zero copy");
            assertImportsAtFullWithTheSameValues(v, array, schema);
        }
    }

    @Test
    void nonZeroInlinePaddingIsExportedZeroedFromACopyAndTheVectorIsNotWritten() {
        try (ViewVarCharVector v = strings(); Arena arena = Arena.ofConfined()) {
            poison(v);
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(ArrowSchema.layout());
            ArrowJava.exportVector(v, null, array, schema);
            MemorySegment views = exportedViews(array).reinterpret(16L * VALUES.size());
            boolean copied = v.getDataBuffer().memoryAddress() != views.address();
            for (int i = 0; i < VALUES.size(); i++) {
                int size = views.get(ValueLayout.JAVA_INT_UNALIGNED, i * 16L);
                if (VALUES.get(i) != null && size <= 12) {
                    for (long b = 4 + size; b < 16; b++) {
                        assertEquals(0, views.get(ValueLayout.JAVA_BYTE, i * 16L + b), "view " + i + " byte " + b);
                    }
                }
            }
            assertEquals(0x5A, v.getDataBuffer().getByte(6), "the vector's own buffer is left as it was");
            assertImportsAtFullWithTheSameValues(v, array, schema);
            assertTrue(copied, "a copy the export owns");
        }
    }

    @Test
    void slicedViewVectorsOverUnzeroedMemoryImportAtFull() {
        for (int round = 0; round < 8; round++) {
            // leave non-zero bytes where the slice's view buffer is likely to be allocated
            try (ArrowBuf dirty = allocator.buffer(16 * 5)) {
                dirty.setOne(0, 16 * 5);
            }
            ViewVarCharVector s = strings();
            ViewVarBinaryVector b = new ViewVarBinaryVector("b", allocator);
            b.allocateNew();
            for (int i = 0; i < 40; i++) {
                b.setSafe(i, ("v" + i).repeat(1 + i % 7).getBytes(StandardCharsets.UTF_8));
            }
            b.setValueCount(40);
            try (VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(s, b))) {
                root.setRowCount(VALUES.size());
                try (VectorSchemaRoot slice = root.slice(1, 5); Arena arena = Arena.ofConfined()) {
                    MemorySegment array = arena.allocate(ArrowArray.layout());
                    MemorySegment schema = arena.allocate(ArrowSchema.layout());
                    ArrowJava.exportRoot(slice, null, array, schema);
                    try (ImportedSchema is = ArrowC.importSchema(schema);
                         VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator,
                                 ArrowC.importArray(is.root(), array, ValidationLevel.FULL), null)) {
                        for (int i = 0; i < slice.getRowCount(); i++) {
                            assertEquals(slice.getVector(0).getObject(i), back.getVector(0).getObject(i), "row " + i);
                            assertArrayEquals((byte[]) slice.getVector(1).getObject(i),
                                    (byte[]) back.getVector(1).getObject(i), "row " + i);
                        }
                    }
                }
            }
        }
    }
}
