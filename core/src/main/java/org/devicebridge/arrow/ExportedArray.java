package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/** An exported {@code struct ArrowArray} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedArray extends ExportedStruct {
    ExportedArray(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_ARRAY, struct);
    }
}
