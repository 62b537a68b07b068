package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/**
 * An exported {@code struct ArrowSchema} in memory this library allocated; see {@link ExportedStruct}.
 *
 * <p>Thread safety and ownership as for every {@link ExportedStruct}: the handle owns the struct's memory
 * until {@code close()}, which is idempotent and thread-safe.
 */
public final class ExportedSchema extends ExportedStruct {
    ExportedSchema(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_SCHEMA, struct);
    }
}
