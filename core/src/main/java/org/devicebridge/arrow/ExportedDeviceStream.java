package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.devicebridge.foreign.ForeignImport;

/**
 * An exported {@code struct ArrowDeviceArrayStream} in memory this library allocated; see {@link ExportedStruct}.
 *
 * <p>Thread safety and ownership as for every {@link ExportedStruct}: the handle owns the struct's memory
 * until {@code close()}, which is idempotent and thread-safe.
 */
public final class ExportedDeviceStream extends ExportedStruct {
    ExportedDeviceStream(MemorySegment struct) {
        super(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM, struct);
    }

    /**
     * The FFM-only export: allocates a zeroed {@code struct ArrowDeviceArrayStream} (released state) off the Java heap, has
     * {@code fill} write it (every field, {@code release} last: a producer's callbacks and private data), and
     * returns the handle that owns it. For a producer written on the FFM API, and for this library's own
     * exports.
     *
     * <p>Ownership: after a return the caller owns the handle (and through it the struct until a consumer
     * releases or moves it). If {@code fill} throws, it must leave the struct released ({@code release} NULL,
     * nothing held); the struct's memory is then freed and the throw propagates, nothing held.
     *
     * @param fill writes the struct; called once, on this thread
     * @return the owning handle of the filled struct
     */
    public static ExportedDeviceStream allocate(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM, fill, ExportedDeviceStream::new);
    }
}
