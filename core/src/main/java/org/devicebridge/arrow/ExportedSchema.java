package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/** An exported {@code struct ArrowSchema} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedSchema extends ExportedStruct {
    ExportedSchema(MemorySegment struct) {
        super("ArrowSchema", struct, ExportRuntime.SCHEMA_RELEASE_OFF);
    }
}
