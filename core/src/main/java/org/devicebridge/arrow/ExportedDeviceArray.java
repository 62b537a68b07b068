package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/** An exported {@code struct ArrowDeviceArray} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedDeviceArray extends ExportedStruct {
    ExportedDeviceArray(MemorySegment struct) {
        super("ArrowDeviceArray", struct, ExportRuntime.ARRAY_RELEASE_OFF);
    }
}
