package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.generated.arrow.ArrowArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The null count an export writes for each column is Arrow Java's own {@code getNullCount()}, which the
 * export counts itself for the vectors whose count is their validity bitmap's zero bits: with and without
 * nulls, at lengths that end inside a byte and a word, and with set bits past the vector's length (which
 * neither may count).
 */
class ExportNullCountTest {
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

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String family : List.of("integers", "bool", "strings", "views", "lists", "listViews", "struct", "map",
                "nested", "fixedSizeBinary")) {
            for (boolean nulls : new boolean[] {false, true}) {
                for (int rows : new int[] {1, 37, 64, 1003}) {
                    for (boolean bitsPastLength : new boolean[] {false, true}) {
                        out.add(Arguments.of(family, nulls, rows, bitsPastLength));
                    }
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} nulls={1} rows={2} set bits past the length={3}")
    @MethodSource("cases")
    void everyColumnExportsArrowJavasNullCount(String family, boolean nulls, int rows, boolean bitsPastLength) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, allocator, rows, nulls, dictionaries);
        try (VectorSchemaRoot root = root(vectors, rows, bitsPastLength); Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ArrowArray.layout());
            MemorySegment schema = arena.allocate(org.devicebridge.generated.arrow.ArrowSchema.layout());
            ArrowJava.exportRoot(root, dictionaries, array, schema);
            try {
                for (int i = 0; i < vectors.size(); i++) {
                    MemorySegment child = child(array, vectors.size(), i);
                    assertEquals(vectors.get(i).getNullCount(), ArrowArray.null_count(child), vectors.get(i).getName());
                }
            } finally {
                ExportTestSupport.releaseIfLive(array, schema);
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    /** The batch of {@code vectors} with {@code rows} rows, with every bitmap bit past them set if asked. */
    private static VectorSchemaRoot root(List<FieldVector> vectors, int rows, boolean bitsPastLength) {
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        if (bitsPastLength) {
            for (FieldVector v : vectors) {
                setBitsPastLength(v, rows);
            }
        }
        return root;
    }

    /** Child {@code i} of the exported struct array {@code array}, which has {@code count} children. */
    private static MemorySegment child(MemorySegment array, int count, int i) {
        MemorySegment children = ArrowArray.children(array).reinterpret(8L * count);
        return children.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(ArrowArray.layout().byteSize());
    }

    /** Sets every bit of {@code v}'s validity bitmap past its first {@code rows}, where it has one. */
    private static void setBitsPastLength(FieldVector v, int rows) {
        org.apache.arrow.memory.ArrowBuf validity;
        try {
            validity = v.getValidityBuffer();
        } catch (UnsupportedOperationException e) {
            return; // no bitmap (unions)
        }
        if (validity == null) {
            return;
        }
        long bits = validity.capacity() * 8;
        for (long bit = rows; bit < bits; bit++) {
            BitVectorHelper.setBit(validity, bit);
        }
    }
}
