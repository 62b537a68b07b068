package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.devicebridge.arrow.ArrayData;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;

public class FfmOnly {
    public static void main(String[] args) {
        // An int64 column [10, null, 30] in memory this program owns: no Arrow Java.
        Arena memory = Arena.ofShared();
        MemorySegment validity = memory.allocate(1);
        validity.set(ValueLayout.JAVA_BYTE, 0, (byte) 0b101);
        MemorySegment values = memory.allocate(ValueLayout.JAVA_LONG, 3);
        values.setAtIndex(ValueLayout.JAVA_LONG, 0, 10);
        values.setAtIndex(ValueLayout.JAVA_LONG, 2, 30);
        SchemaNode id = SchemaNode.of("id", "l", List.of()).withFlags(SchemaNode.FLAG_NULLABLE);
        ArrayData column = ArrayData.of(3, 1, List.of(validity, values));

        // A checked view that borrows the segments: nothing to release.
        ArrayNode view = ArrowC.viewArray(id, column, ValidationLevel.FULL);
        System.out.println("id[2] = " + view.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, 2));

        // A zero-copy export: the consumer's release closes `memory`, once.
        try (ExportedStruct schema = ExportedStruct.allocateSchema(out -> ArrowC.exportSchema(id, out));
             ExportedStruct array = ExportedStruct.allocateArray(out -> ArrowC.exportArray(id, column, out, memory))) {
            // A native consumer takes both structs; here devicebridge imports them.
            try (ImportedSchema s = ArrowC.importSchema(schema.segment());
                 ImportedArray a = ArrowC.importArray(s.root(), array.segment(), ValidationLevel.FULL)) {
                System.out.println("nulls: " + a.root().nullCount());
            }
            System.out.println("memory released: " + !memory.scope().isAlive());
        }
    }
}
