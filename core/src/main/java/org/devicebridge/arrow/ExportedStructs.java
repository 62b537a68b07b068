package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.NativeHandle;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.Native;

/** The release step shared by the library-allocated export handles. */
final class ExportedStructs {
    static final long STREAM_RELEASE_OFF = ArrowArrayStream.release$offset();
    static final long DEVICE_STREAM_RELEASE_OFF = ArrowDeviceArrayStream.release$offset();

    private ExportedStructs() {}

    /**
     * Calls the struct's release callback if it is still set (no consumer released or moved the struct),
     * then frees the struct's memory. Captures only the address, never the handle.
     */
    static NativeHandle.ReleaseAction releaseAction(long address, long releaseOffset) {
        return () -> {
            MemorySegment s = MemorySegment.ofAddress(address).reinterpret(releaseOffset + 8);
            try {
                long fn = s.get(ValueLayout.JAVA_LONG, releaseOffset);
                if (fn != 0) {
                    Callbacks.invokeVoidPointer(MemorySegment.ofAddress(fn), s);
                }
            } finally {
                Native.free(s);
            }
        };
    }
}
