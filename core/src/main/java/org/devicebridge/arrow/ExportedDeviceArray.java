package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/** An exported {@code struct ArrowDeviceArray} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedDeviceArray extends ExportedStruct {
    ExportedDeviceArray(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_DEVICE_ARRAY, struct);
    }
}
