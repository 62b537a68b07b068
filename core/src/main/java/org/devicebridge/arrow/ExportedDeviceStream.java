package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/** An exported {@code struct ArrowDeviceArrayStream} in memory this library allocated; see {@link ExportedStruct}. */
public final class ExportedDeviceStream extends ExportedStruct {
    ExportedDeviceStream(MemorySegment struct) {
        super("ArrowDeviceArrayStream", struct, ExportedStructs.DEVICE_STREAM_RELEASE_OFF);
    }
}
