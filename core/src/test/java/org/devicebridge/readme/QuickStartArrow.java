package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.apache.arrow.memory.BufferAllocator;
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
import org.devicebridge.arrow.java.ArrowMemory;

public class QuickStartArrow {
    public static void main(String[] args) {
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             BigIntVector ids = new BigIntVector("id", allocator)) {
            ids.allocateNew(3);
            ids.set(0, 10);
            ids.set(1, 20);
            ids.setNull(2);
            ids.setValueCount(3);
            VectorSchemaRoot table = VectorSchemaRoot.of(ids);

            // The C structs live in an arena of ours; what a producer puts into them is not the arena's.
            try (Arena structs = Arena.ofConfined()) {
                MemorySegment schema = ArrowStructs.allocateSchema(structs);
                MemorySegment array = ArrowStructs.allocateArray(structs);

                // Export: zero-copy. The structs now hold references to the table's buffers, and whoever
                // calls their release (a native engine, or the import below) frees them.
                ArrowExport.exportRoot(table, array, schema);

                // Import: takes ownership (the struct is moved, then validated). Without an arena argument
                // the handle owns a scope confined to this thread: close() releases the struct; a native
                // call still holding one of its segments makes the close fail instead (nothing is freed).
                try (ImportedSchema s = ArrowImport.importSchema(schema);
                     ImportedArray batch = ArrowImport.importArray(s, array, ValidationLevel.FULL)) {
                    ArrayNode id = batch.root().children().get(0);
                    long second = id.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, id.offset() + 1);
                    System.out.println("id[1] = " + second);                     // 20
                }

                // Or into Arrow Java, still zero-copy: the struct is released with the last Arrow buffer.
                ArrowExport.exportRoot(table, array, schema);
                try (ImportedSchema s = ArrowImport.importSchema(schema);
                     VectorSchemaRoot back = ArrowJavaImport.importVectorSchemaRoot(allocator,
                             ArrowImport.importArray(s, array, ValidationLevel.DEFAULT), null)) {
                    System.out.print(back.contentToTSVString());
                }
            }
        }
    }
}
