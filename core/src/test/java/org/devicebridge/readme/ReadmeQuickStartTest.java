package org.devicebridge.readme;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ArrowStructs;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowExport;
import org.devicebridge.arrow.java.ArrowJavaImport;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.junit.jupiter.api.Test;

/** The README's quick start, verbatim between the BEGIN/END markers: if it stops compiling or working, this fails. */
class ReadmeQuickStartTest {

    @Test
    void arrowQuickStart() {
        try (BufferAllocator allocator = new RootAllocator();
             BigIntVector ids = new BigIntVector("id", allocator)) {
            ids.allocateNew(3);
            ids.set(0, 10);
            ids.set(1, 20);
            ids.setNull(2);
            ids.setValueCount(3);
            try (VectorSchemaRoot table = VectorSchemaRoot.of(ids)) {
                // BEGIN arrow
                try (Arena arena = Arena.ofConfined()) {
                    // Export: zero-copy; the structs now own references to the table's buffers,
                    // and whoever calls their release (a native engine, or the import below) frees them.
                    MemorySegment schema = ArrowStructs.allocateSchema(arena);
                    MemorySegment array = ArrowStructs.allocateArray(arena);
                    ArrowExport.exportRoot(table, array, schema);

                    // Import: takes ownership, validates every offset and index (FULL), releases exactly once.
                    try (ImportedSchema s = ArrowImport.importSchema(schema);
                         ImportedArray batch = ArrowImport.importArray(s, array, ValidationLevel.FULL)) {
                        ArrayNode id = batch.root().children().get(0);
                        long second = id.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, id.offset() + 1); // 20
                        assertEquals(20, second);
                    }
                }
                // END arrow
                // BEGIN arrow-java
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment schema = ArrowStructs.allocateSchema(arena);
                    MemorySegment array = ArrowStructs.allocateArray(arena);
                    ArrowExport.exportRoot(table, array, schema);
                    try (ImportedSchema s = ArrowImport.importSchema(schema);
                         VectorSchemaRoot back = ArrowJavaImport.importVectorSchemaRoot(allocator,
                                 ArrowImport.importArray(s, array, ValidationLevel.FULL), null)) {
                        // zero-copy: the C struct is released when the last Arrow buffer is
                        assertEquals(table.contentToTSVString(), back.contentToTSVString());
                    }
                }
                // END arrow-java
            }
        }
    }

    @Test
    void dlpackQuickStart() {
        // BEGIN dlpack
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(ValueLayout.JAVA_FLOAT, 6);
            for (int i = 0; i < 6; i++) {
                data.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
            }
            // Export a 2x3 float32 tensor (NULL strides: row-major); no copy.
            ExportedTensor exported = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 2, 3));
            // Hand the DLManagedTensorVersioned* to a consumer: from now on only its deleter frees it.
            MemorySegment managed = exported.transferOwnership();
            // Here the consumer is this library: import validates version, dtype, shape and strides.
            try (ImportedTensor t = DLPack.importVersioned(managed, ImportOptions.any())) {
                float f = t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 1 * 3 + 2); // element [1][2] = 5.0
                assertEquals(5.0f, f);
                assertArrayEquals(new long[] {2, 3}, t.shape());
            } // the deleter runs here, exactly once
        }
        // END dlpack
    }
}
