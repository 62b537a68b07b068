package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.foreign.ForeignImport;

/** An exported {@code struct ArrowDeviceArrayStream} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedDeviceStream extends ExportedStruct {
    ExportedDeviceStream(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM, struct);
    }
}
