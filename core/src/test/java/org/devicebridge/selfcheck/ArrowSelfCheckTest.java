package org.devicebridge.selfcheck;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.junit.jupiter.api.Test;

/** The self-check's sample table survives every interface, column by column and whole. */
class ArrowSelfCheckTest {

    @Test
    void everySampleColumnRoundTripsThroughTheCDataInterface() {
        List<String> failures = new ArrayList<>();
        try (BufferAllocator allocator = new RootAllocator(); VectorSchemaRoot table = ArrowSelfCheck.sampleTable(allocator)) {
            for (FieldVector v : table.getFieldVectors()) {
                try (VectorSchemaRoot one = VectorSchemaRoot.of(v); Arena arena = Arena.ofConfined()) {
                    MemorySegment schema = ArrowSchema.allocate(arena);
                    MemorySegment array = ArrowArray.allocate(arena);
                    ArrowJava.exportRoot(one, null, array, schema);
                    try (ImportedSchema s = ArrowC.importSchema(schema)) {
                        ImportedArray a = ArrowC.importArray(s.root(), array, ValidationLevel.FULL);
                        try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, a, null)) {
                            if (!back.equals(one)) {
                                failures.add(v.getName() + ": values differ");
                            }
                        }
                    }
                } catch (RuntimeException e) {
                    failures.add(v.getName() + ": " + e);
                }
            }
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }

    @Test
    void theSectionPassesEveryCheck() {
        List<String> failed = new ArrayList<>();
        new ArrowSelfCheck().run(new SelfCheckSection.Report() {
            @Override
            public void line(String key, String value) {}

            @Override
            public void check(String name, boolean passed, String detail) {
                if (!passed) {
                    failed.add(name + ": " + detail);
                }
            }
        });
        assertTrue(failed.isEmpty(), failed.toString());
    }
}
