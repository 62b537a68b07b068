package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;

public class QuickStartArrow {
    public static void main(String[] args) {
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             BigIntVector ids = new BigIntVector("id", allocator);
             Arena structs = Arena.ofConfined()) {
            ids.allocateNew(3);
            ids.set(0, 10);
            ids.set(1, 20);
            ids.setNull(2);
            ids.setValueCount(3);
            VectorSchemaRoot table = VectorSchemaRoot.of(ids);
            MemorySegment schema = ArrowC.allocateSchema(structs);
            MemorySegment array = ArrowC.allocateArray(structs);

            // Export (zero-copy), then import: close() releases the structs.
            ArrowJava.exportRoot(table, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema);
                 ImportedArray batch = ArrowC.importArray(s.root(), array, ValidationLevel.FULL)) {
                ArrayNode id = batch.root().children().get(0);
                System.out.println("id[1] = " + id.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, id.offset() + 1));
            }

            // Or into Arrow Java in one call, zero-copy: released with the last Arrow buffer.
            ArrowJava.exportRoot(table, null, array, schema);
            try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, array, schema, null)) {
                System.out.print(back.contentToTSVString());
            }
        }
    }
}
