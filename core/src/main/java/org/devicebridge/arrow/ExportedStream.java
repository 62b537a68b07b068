package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/** An exported {@code struct ArrowArrayStream} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedStream extends ExportedStruct {
    ExportedStream(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_ARRAY_STREAM, struct);
    }
}
