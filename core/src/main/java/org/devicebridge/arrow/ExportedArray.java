package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.NativeHandle;

/**
 * An exported {@code struct ArrowArray} in memory this library allocated.
 *
 * <p>The handle owns the struct's memory (library-allocated, off the Java heap) until {@link #close()}.
 * Hand {@link #address()} or {@link #segment()} to a consumer: it may read the struct in place, or
 * <em>move</em> it (copy it and set the original's {@code release} to NULL), and releases it by calling
 * its {@code release} callback. {@code close()} then calls {@code release} only if no consumer released or
 * moved the struct, and frees the struct's memory; it is idempotent and thread-safe. Do not close the
 * handle while a consumer still reads the struct in place.
 */
public final class ExportedArray extends NativeHandle {
    private final MemorySegment struct;

    ExportedArray(MemorySegment struct) {
        super("exported ArrowArray", ExportedStructs.releaseAction(struct.address(), ExportRuntime.ARRAY_RELEASE_OFF));
        this.struct = struct;
    }

    /** The struct ({@code struct ArrowArray}), for native code. Throws {@link org.devicebridge.HandleClosedException} after close. */
    public MemorySegment segment() {
        ensureLive();
        return struct;
    }

    /** The struct's address, for native code. Throws {@link org.devicebridge.HandleClosedException} after close. */
    public long address() {
        ensureLive();
        return struct.address();
    }
}
