package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/** An exported {@code struct ArrowArray} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedArray extends ExportedStruct {
    ExportedArray(MemorySegment struct) {
        super("ArrowArray", struct, ExportRuntime.ARRAY_RELEASE_OFF);
    }
}
