package org.devicebridge.arrow;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;

/**
 * Allocates empty Arrow C structs for the caller-allocated forms of
 * {@link org.devicebridge.arrow.java.ArrowJava} and for native producers that fill a struct the consumer owns. Each segment is zeroed, sized and aligned as the C ABI
 * requires, and starts in the released state ({@code release == NULL}).
 *
 * <p>Ownership: the arena owns the struct's memory, never what a producer puts into it; whoever holds a
 * filled struct still calls its {@code release} (the import methods do that for you).
 *
 * <p>Stateless and thread-safe.
 */
public final class ArrowStructs {
    private ArrowStructs() {}

    /**
     * {@return a zeroed {@code struct ArrowSchema} in {@code arena}, in the released state}
     *
     * @param arena the arena that owns the struct's memory; the caller keeps owning it
     */
    public static MemorySegment allocateSchema(Arena arena) {
        requireNativeAccess();
        return Objects.requireNonNull(arena, "arena").allocate(ArrowSchema.layout());
    }

    /**
     * {@return a zeroed {@code struct ArrowArray} in {@code arena}, in the released state}
     *
     * @param arena the arena that owns the struct's memory; the caller keeps owning it
     */
    public static MemorySegment allocateArray(Arena arena) {
        requireNativeAccess();
        return Objects.requireNonNull(arena, "arena").allocate(ArrowArray.layout());
    }

    /**
     * {@return a zeroed {@code struct ArrowDeviceArray} in {@code arena}, in the released state}
     *
     * @param arena the arena that owns the struct's memory; the caller keeps owning it
     */
    public static MemorySegment allocateDeviceArray(Arena arena) {
        requireNativeAccess();
        return Objects.requireNonNull(arena, "arena").allocate(ArrowDeviceArray.layout());
    }

    /**
     * {@return a zeroed {@code struct ArrowArrayStream} in {@code arena}, in the released state}
     *
     * @param arena the arena that owns the struct's memory; the caller keeps owning it
     */
    public static MemorySegment allocateArrayStream(Arena arena) {
        requireNativeAccess();
        return Objects.requireNonNull(arena, "arena").allocate(ArrowArrayStream.layout());
    }

    /**
     * {@return a zeroed {@code struct ArrowDeviceArrayStream} in {@code arena}, in the released state}
     *
     * @param arena the arena that owns the struct's memory; the caller keeps owning it
     */
    public static MemorySegment allocateDeviceArrayStream(Arena arena) {
        requireNativeAccess();
        return Objects.requireNonNull(arena, "arena").allocate(ArrowDeviceArrayStream.layout());
    }
}
