package org.devicebridge.arrow;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import org.devicebridge.NativeHandle;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.internal.Native;

/**
 * An exported Arrow C struct in memory this library allocated; one public subclass per kind of struct (the schema,
 * the array and the stream; an array or stream of the C Device Data Interface is of the same subclass), each with
 * this contract in its own comment.
 *
 * <p>The handle owns the struct's memory (library-allocated, off the Java heap) until {@link #close()}.
 * Hand {@link #address()} or {@link #segment()} to a consumer: it may read the struct in place, or
 * <em>move</em> it (copy it and set the original's {@code release} to NULL), and releases it by calling
 * its {@code release} callback. {@code close()} then calls {@code release} only if no consumer released or
 * moved the struct, and frees the struct's memory; it is idempotent and thread-safe. Do not close the
 * handle while a consumer still reads the struct in place.
 *
 * <p>The release step is the one every owned Arrow struct has ({@link ForeignImport.Kind#release}): call
 * {@code release} if it is still set, then free the struct's memory.
 */
abstract sealed class ExportedStruct extends NativeHandle
        permits ExportedArray, ExportedSchema, ExportedStream {
    private final ForeignImport.Kind kind;
    private final MemorySegment struct;

    /** Takes ownership of {@code struct} (library-allocated with {@code malloc}, filled, sized to {@code kind}). */
    ExportedStruct(ForeignImport.Kind kind, MemorySegment struct) {
        super("exported " + kind.cName(), releaseAction(kind, struct.reinterpret(kind.byteSize())));
        this.kind = kind;
        this.struct = struct;
    }

    /** {@return the kind of struct this handle owns} */
    final ForeignImport.Kind kind() {
        return kind;
    }

    /** The one allocate-fill-wrap step of every {@code allocate}: the struct is freed if {@code fill} throws. */
    static <T extends ExportedStruct> T allocate(ForeignImport.Kind kind, Consumer<MemorySegment> fill,
                                                 Function<MemorySegment, T> wrap) {
        requireNativeAccess();
        Objects.requireNonNull(fill, "fill");
        MemorySegment s = Native.calloc(kind.byteSize());
        try {
            fill.accept(s);
        } catch (RuntimeException | Error e) {
            Native.free(s);
            throw e;
        }
        return wrap.apply(s);
    }

    /** Captures the struct, never the handle. */
    private static AutoCloseable releaseAction(ForeignImport.Kind kind, MemorySegment struct) {
        return () -> kind.release(struct);
    }

    /** {@return the struct, for native code} Throws {@link org.devicebridge.HandleClosedException} after close. */
    public final MemorySegment segment() {
        ensureLive();
        return struct;
    }

    /** {@return the struct's address, for native code} Throws {@link org.devicebridge.HandleClosedException} after close. */
    public final long address() {
        ensureLive();
        return struct.address();
    }
}
