package org.devicebridge.arrow;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.Consumer;
import org.devicebridge.NativeHandle;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.internal.Native;

/**
 * An exported Arrow C struct ({@code ArrowSchema}, {@code ArrowArray}, {@code ArrowDeviceArray},
 * {@code ArrowArrayStream} or {@code ArrowDeviceArrayStream}, as the {@code allocate…} method that made it says) in
 * memory this library allocated (off the Java heap), owned by this handle until {@link #close()}. Hand
 * {@link #address()} or {@link #segment()} to a consumer: it may read the struct in place, or <em>move</em> it
 * (copy it and set the original's {@code release} to NULL), and releases it by calling its {@code release}
 * callback. {@code close()} then calls {@code release} only if no consumer released or moved the struct, and
 * frees the struct's memory; it is idempotent and thread-safe. Do not close the handle while a consumer still
 * reads the struct in place.
 *
 * <p>Each {@code allocate…} method allocates a zeroed struct (released state), has {@code fill} write it (every
 * field, {@code release} last: a producer's callbacks and private data, or one of this library's exports, e.g.
 * {@code out -> ArrowC.exportArray(schema, data, out, owner)}), and returns the handle that owns it.
 * Ownership: after a return the caller owns the handle (and through it the struct until a consumer releases or
 * moves it). If {@code fill} throws, it must leave the struct released ({@code release} NULL, nothing held); the
 * struct's memory is then freed and the throw propagates, nothing held.
 */
public final class ExportedStruct extends NativeHandle {
    private final ForeignImport.Kind kind;
    private final MemorySegment struct;

    /** Takes ownership of {@code struct} (library-allocated with {@code malloc}, filled, sized to {@code kind}). */
    private ExportedStruct(ForeignImport.Kind kind, MemorySegment struct) {
        super("exported " + kind.cName(), releaseAction(kind, struct.reinterpret(kind.byteSize())));
        this.kind = kind;
        this.struct = struct;
    }

    /**
     * {@return the handle of a {@code struct ArrowSchema} that {@code fill} wrote} See the class comment.
     *
     * @param fill writes the struct; called once, on this thread
     */
    public static ExportedStruct allocateSchema(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_SCHEMA, fill);
    }

    /**
     * {@return the handle of a {@code struct ArrowArray} that {@code fill} wrote} See the class comment.
     *
     * @param fill writes the struct; called once, on this thread
     */
    public static ExportedStruct allocateArray(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_ARRAY, fill);
    }

    /**
     * {@return the handle of a {@code struct ArrowDeviceArray} (with its {@code device_type}, {@code device_id}
     * and {@code sync_event}) that {@code fill} wrote} See the class comment.
     *
     * @param fill writes the struct; called once, on this thread
     */
    public static ExportedStruct allocateDeviceArray(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_DEVICE_ARRAY, fill);
    }

    /**
     * {@return the handle of a {@code struct ArrowArrayStream} that {@code fill} wrote} See the class comment.
     *
     * @param fill writes the struct; called once, on this thread
     */
    public static ExportedStruct allocateStream(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_ARRAY_STREAM, fill);
    }

    /**
     * {@return the handle of a {@code struct ArrowDeviceArrayStream} (whose {@code get_next} gives
     * {@code ArrowDeviceArray}s) that {@code fill} wrote} See the class comment.
     *
     * @param fill writes the struct; called once, on this thread
     */
    public static ExportedStruct allocateDeviceStream(Consumer<MemorySegment> fill) {
        return allocate(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM, fill);
    }

    /** The one allocate-fill-wrap step of every {@code allocate…}: the struct is freed if {@code fill} throws. */
    private static ExportedStruct allocate(ForeignImport.Kind kind, Consumer<MemorySegment> fill) {
        requireNativeAccess();
        Objects.requireNonNull(fill, "fill");
        MemorySegment s = Native.calloc(kind.byteSize());
        try {
            fill.accept(s);
        } catch (RuntimeException | Error e) {
            Native.free(s);
            throw e;
        }
        return new ExportedStruct(kind, s);
    }

    /** Captures the struct, never the handle. */
    private static AutoCloseable releaseAction(ForeignImport.Kind kind, MemorySegment struct) {
        return () -> kind.release(struct);
    }

    /** {@return the kind of struct this handle owns} */
    ForeignImport.Kind kind() {
        return kind;
    }

    /**
     * {@return whether the struct is one of the C Device Data Interface ({@code ArrowDeviceArray} or
     * {@code ArrowDeviceArrayStream})} Readable after close.
     */
    public boolean isDevice() {
        return kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY || kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM;
    }

    /** {@return the struct, for native code} Throws {@link org.devicebridge.HandleClosedException} after close. */
    public MemorySegment segment() {
        ensureLive();
        return struct;
    }

    /** {@return the struct's address, for native code} Throws {@link org.devicebridge.HandleClosedException} after close. */
    public long address() {
        ensureLive();
        return struct.address();
    }
}
