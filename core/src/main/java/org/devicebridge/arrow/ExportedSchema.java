package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/** An exported {@code struct ArrowSchema} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedSchema extends ExportedStruct {
    ExportedSchema(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_SCHEMA, struct);
    }
}
