package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/** An exported {@code struct ArrowArrayStream} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedStream extends ExportedStruct {
    ExportedStream(MemorySegment struct) {
        super("ArrowArrayStream", struct, ExportedStructs.STREAM_RELEASE_OFF);
    }
}
