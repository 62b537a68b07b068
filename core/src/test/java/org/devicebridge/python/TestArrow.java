package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * A tiny test-local Arrow producer: an int32 schema and array whose release callbacks are counting Java
 * upcalls. The real Arrow export API replaces it later.
 */
final class TestArrow {
    static final AtomicInteger RELEASES = new AtomicInteger();

    private static final MemorySegment RELEASE_SCHEMA = Native.upcallStub(MethodHandles.lookup(), TestArrow.class,
            "releaseSchema", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), TestArrow.class,
            "releaseArray", FunctionDescriptor.ofVoid(ADDRESS));

    private TestArrow() {}

    private static MemorySegment cString(String s) {
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        MemorySegment m = Native.calloc(b.length + 1L);
        MemorySegment.copy(b, 0, m, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, b.length);
        return m;
    }

    /** A malloc'd ArrowSchema for a nullable int32 field {@code name}; release frees its strings. */
    static MemorySegment int32Schema(String name) {
        MemorySegment s = Native.calloc(ArrowSchema.sizeof());
        ArrowSchema.format(s, cString("i"));
        ArrowSchema.name(s, cString(name));
        ArrowSchema.flags(s, 2L); // ARROW_FLAG_NULLABLE
        ArrowSchema.release(s, RELEASE_SCHEMA);
        return s;
    }

    /** Fills {@code out} (an ArrowArray) with int32 {@code values}, exposing {@code length} from {@code offset}. */
    static void int32Array(MemorySegment out, int[] values, long offset, long length) {
        // one block: buffers[2] then the values; private_data points at it and release frees it
        MemorySegment block = Native.calloc(16L + 4L * values.length);
        MemorySegment data = block.asSlice(16);
        MemorySegment.copy(values, 0, data, JAVA_INT, 0, values.length);
        block.set(ADDRESS, 0, MemorySegment.NULL);
        block.set(ADDRESS, 8, data);
        MemorySegment a = out.reinterpret(ArrowArray.sizeof());
        ArrowArray.length(a, length);
        ArrowArray.null_count(a, 0L);
        ArrowArray.offset(a, offset);
        ArrowArray.n_buffers(a, 2L);
        ArrowArray.n_children(a, 0L);
        ArrowArray.buffers(a, block);
        ArrowArray.children(a, MemorySegment.NULL);
        ArrowArray.dictionary(a, MemorySegment.NULL);
        ArrowArray.private_data(a, block);
        ArrowArray.release(a, RELEASE_ARRAY);
    }

    /** Fills {@code out} (an ArrowSchema) like {@link #int32Schema}. */
    static void int32SchemaInto(MemorySegment out, String name) {
        MemorySegment s = int32Schema(name);
        MemorySegment.copy(s, 0, out.reinterpret(ArrowSchema.sizeof()), 0, ArrowSchema.sizeof());
        Native.free(s);
    }

    static boolean isReleased(MemorySegment struct, CapsuleKind kind) {
        return kind.struct().releaseCallback(struct.reinterpret(kind.struct().byteSize())).equals(MemorySegment.NULL);
    }

    /** Moves a struct as the Arrow specification allows: copy the bytes, mark the source released. */
    static void move(MemorySegment source, MemorySegment destination, CapsuleKind kind) {
        long size = kind.struct().byteSize();
        MemorySegment src = source.reinterpret(size);
        MemorySegment.copy(src, 0, destination.reinterpret(size), 0, size);
        src.set(ADDRESS, releaseOffset(kind), MemorySegment.NULL);
    }

    private static long releaseOffset(CapsuleKind kind) {
        return switch (kind) {
            case ARROW_SCHEMA -> ArrowSchema.release$offset();
            case ARROW_ARRAY -> ArrowArray.release$offset();
            case ARROW_ARRAY_STREAM -> org.devicebridge.generated.arrow.ArrowArrayStream.release$offset();
            default -> throw new IllegalArgumentException(kind.toString());
        };
    }

    static String format(MemorySegment schema) {
        return Native.string(ArrowSchema.format(schema.reinterpret(ArrowSchema.sizeof())));
    }

    @SuppressWarnings("unused")
    private static void releaseSchema(MemorySegment s) {
        try {
            MemorySegment schema = s.reinterpret(ArrowSchema.sizeof());
            RELEASES.incrementAndGet();
            Native.free(ArrowSchema.format(schema));
            Native.free(ArrowSchema.name(schema));
            ArrowSchema.release(schema, MemorySegment.NULL);
        } catch (Throwable t) {
            System.getLogger("test").log(System.Logger.Level.ERROR, "test release failed", t);
        }
    }

    @SuppressWarnings("unused")
    private static void releaseArray(MemorySegment a) {
        try {
            MemorySegment array = a.reinterpret(ArrowArray.sizeof());
            RELEASES.incrementAndGet();
            Native.free(ArrowArray.private_data(array));
            ArrowArray.release(array, MemorySegment.NULL);
        } catch (Throwable t) {
            System.getLogger("test").log(System.Logger.Level.ERROR, "test release failed", t);
        }
    }
}
