package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.devicebridge.foreign.ForeignImport;

/**
 * An exported {@code struct ArrowArrayStream} or {@code struct ArrowDeviceArrayStream} ({@link #isDevice()} says
 * which) in memory this library allocated (off the Java heap), owned by this handle until {@link #close()}. Hand
 * {@link #address()} or {@link #segment()} to a consumer: it may read the struct in place, or <em>move</em> it
 * (copy it and set the original's {@code release} to NULL), and releases it by calling its {@code release}
 * callback. {@code close()} then calls {@code release} only if no consumer released or moved the struct, and
 * frees the struct's memory; it is idempotent and thread-safe. Do not close the handle while a consumer still
 * reads the struct in place.
 */
public final class ExportedStream extends ExportedStruct {
    ExportedStream(ForeignImport.Kind kind, MemorySegment struct) {
        super(kind, struct);
    }

    /**
     * The FFM-only export: allocates a zeroed {@code struct ArrowArrayStream} (released state) off the Java heap, has
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
    public static ExportedStream allocate(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_ARRAY_STREAM, fill,
                s -> new ExportedStream(ForeignImport.Kind.ARROW_ARRAY_STREAM, s));
    }

    /**
     * {@link #allocate} for a {@code struct ArrowDeviceArrayStream}: the C Device Data Interface's stream, whose
     * {@code get_next} gives {@code ArrowDeviceArray}s.
     *
     * <p>Ownership: after a return the caller owns the handle (and through it the struct until a consumer
     * releases or moves it). If {@code fill} throws, it must leave the struct released ({@code release} NULL,
     * nothing held); the struct's memory is then freed and the throw propagates, nothing held.
     *
     * @param fill writes the struct; called once, on this thread
     * @return the owning handle of the filled struct, whose {@link #isDevice()} is {@code true}
     */
    public static ExportedStream allocateDevice(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM, fill,
                s -> new ExportedStream(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM, s));
    }

    /**
     * {@return whether the struct is a {@code struct ArrowDeviceArrayStream} (the C Device Data Interface's) rather
     * than a {@code struct ArrowArrayStream}} Readable after close.
     */
    public boolean isDevice() {
        return kind() == ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM;
    }
}
