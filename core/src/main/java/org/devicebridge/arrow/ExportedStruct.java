package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.NativeHandle;

/**
 * An exported Arrow C struct in memory this library allocated; one subclass per struct kind.
 *
 * <p>The handle owns the struct's memory (library-allocated, off the Java heap) until {@link #close()}.
 * Hand {@link #address()} or {@link #segment()} to a consumer: it may read the struct in place, or
 * <em>move</em> it (copy it and set the original's {@code release} to NULL), and releases it by calling
 * its {@code release} callback. {@code close()} then calls {@code release} only if no consumer released or
 * moved the struct, and frees the struct's memory; it is idempotent and thread-safe. Do not close the
 * handle while a consumer still reads the struct in place.
 */
public abstract sealed class ExportedStruct extends NativeHandle
        permits ExportedArray, ExportedDeviceArray, ExportedDeviceStream, ExportedSchema, ExportedStream {
    private final MemorySegment struct;

    ExportedStruct(String cName, MemorySegment struct, long releaseOffset) {
        super("exported " + cName, ExportedStructs.releaseAction(struct.address(), releaseOffset));
        this.struct = struct;
    }

    /** The struct, for native code. Throws {@link org.devicebridge.HandleClosedException} after close. */
    public final MemorySegment segment() {
        ensureLive();
        return struct;
    }

    /** The struct's address, for native code. Throws {@link org.devicebridge.HandleClosedException} after close. */
    public final long address() {
        ensureLive();
        return struct.address();
    }
}
