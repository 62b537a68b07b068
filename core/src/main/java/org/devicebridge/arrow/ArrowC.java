package org.devicebridge.arrow;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;

/**
 * The Arrow C Data, C Device Data and C Stream interfaces on FFM alone: imports of structs any native code
 * produced, views and exports of arrays described in Java ({@link ArrayData}). Every import
 * method <em>moves</em> the struct first (the producer's struct is marked released), then validates, and
 * releases it if validation fails: after a return or a throw the caller owns nothing of the input struct
 * (its memory, allocated by the caller, stays the caller's to free).
 *
 * <p>Exceptions: {@link ValidationException} with a {@link Category} and a field path for malformed input;
 * {@link org.devicebridge.UnsupportedFeatureException} for valid input this library cannot handle.
 *
 * <p>Stateless and thread-safe: its methods may run concurrently on any threads; each says who owns what
 * after a return and after a throw.
 */
public final class ArrowC {
    private ArrowC() {}

    /**
     * Imports the {@code ArrowSchema} at {@code arrowSchemaPtr}: parses every format string and metadata
     * blob, checks child counts, flags, nesting (at most 64 levels) and cycles.
     *
     * <p>Ownership: after a return the caller owns the returned {@link ImportedSchema} (close it); after a
     * throw the struct has already been released (or was NULL / released already and is untouched).
     *
     * @param arrowSchemaPtr the producer's {@code ArrowSchema}
     * @return the imported schema
     * @throws ValidationException if the schema is malformed
     */
    public static ImportedSchema importSchema(MemorySegment arrowSchemaPtr) {
        requireNativeAccess();
        Objects.requireNonNull(arrowSchemaPtr, "arrowSchemaPtr");
        long original = arrowSchemaPtr.address();
        return ForeignImport.take(ForeignImport.Kind.ARROW_SCHEMA, arrowSchemaPtr,
                owned -> new ImportedSchema(owned, SchemaReader.read(owned, original)));
    }

    /**
     * Imports the {@code ArrowArray} at {@code arrowArrayPtr}, whose type is {@code schema} (borrowed), and
     * validates it at {@code level}. The array's buffers are host memory. The returned handle owns its
     * arena (see {@link org.devicebridge.NativeHandle}): a confined one, made by the first buffer segment
     * taken and owned by that thread, which alone may then close the handle; {@code close()} releases the
     * struct. Pass an arena ({@code Arena.ofShared()}) to the overload that takes one to share the import
     * between threads.
     *
     * <p>Ownership: after a return the caller owns the returned {@link ImportedArray} (close it, or hand it
     * to {@link org.devicebridge.arrow.java.ArrowJava}); after a throw the struct has already been released.
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowArrayPtr the producer's {@code ArrowArray}
     * @param level how much of the foreign structure to check before it is used
     * @return the imported array
     * @throws ValidationException if the array is malformed or does not match the schema
     */
    public static ImportedArray importArray(SchemaNode schema, MemorySegment arrowArrayPtr, ValidationLevel level) {
        requireNativeAccess();
        return importArray(schema, arrowArrayPtr, level, null);
    }

    /**
     * As {@link #importArray(SchemaNode, MemorySegment, ValidationLevel)}, with the struct's release bound to
     * {@code arena}: every segment of the import belongs to it and its {@code close()} releases the struct
     * (a confined arena for a single-thread loop, a shared one for hand-off, one arena for many imports).
     * {@code null} means a handle-owned confined arena.
     *
     * <p>Ownership: after a return {@code arena} owns the import (the returned handle's {@code close()} does
     * nothing); after a throw the struct has already been released.
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowArrayPtr the producer's {@code ArrowArray}
     * @param level how much of the foreign structure to check before it is used
     * @param arena the arena whose closing releases the import (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @return the imported array
     * @throws ValidationException if the array is malformed or does not match the schema
     * @throws org.devicebridge.HandleClosedException if {@code arena} is closed (the struct is released)
     */
    public static ImportedArray importArray(SchemaNode schema, MemorySegment arrowArrayPtr, ValidationLevel level,
                                            Arena arena) {
        requireNativeAccess();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowArrayPtr, "arrowArrayPtr");
        Objects.requireNonNull(level, "level");
        long original = arrowArrayPtr.address();
        return ForeignImport.take(ForeignImport.Kind.ARROW_ARRAY, arrowArrayPtr, owned -> {
            ArrayTable table = new ArrayTable(schema.layout(), true);
            ArrayReader.read(owned, original, table, level);
            return new ImportedArray(ForeignImport.Kind.ARROW_ARRAY, owned, table, level, arena);
        });
    }

    /**
     * Imports the {@code ArrowDeviceArray} at {@code arrowDeviceArrayPtr} of type {@code schema} (borrowed).
     * CPU arrays ({@code ARROW_DEVICE_CPU}) are validated at any level and must have a NULL
     * {@code sync_event}. Arrays on any other known device are accepted only at {@link ValidationLevel#NONE}
     * or {@link ValidationLevel#MINIMAL} (their buffers cannot be read here): their nodes expose
     * {@link ArrayNode#bufferPointer(int)} and {@link ArrayNode#bufferLength(int)}, not segments. The
     * sync event is not waited on: that is the consumer's job, before it touches the buffers.
     *
     * <p>Ownership: after a return the caller owns the returned {@link ImportedArray}, whose release
     * releases the device array (and with it its sync event); after a throw it has already been released.
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowDeviceArrayPtr the producer's {@code ArrowDeviceArray}
     * @param level how much of the foreign structure to check before it is used
     * @return the imported array
     * @throws ValidationException {@link Category#DEVICE} for an unknown device type, a CPU array with a
     *         sync event, non-zero reserved fields, or a device array asked for DEFAULT/FULL validation;
     *         other categories as for {@link #importArray(SchemaNode, MemorySegment, ValidationLevel)}
     */
    public static ImportedArray importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                  ValidationLevel level) {
        requireNativeAccess();
        return importDeviceArray(schema, arrowDeviceArrayPtr, level, null);
    }

    /**
     * As {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel)}, with the release bound to
     * {@code arena} as in {@link #importArray(SchemaNode, MemorySegment, ValidationLevel, Arena)}.
     *
     * <p>Ownership: after a return {@code arena} owns the import; after a throw the struct has already been
     * released.
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowDeviceArrayPtr the producer's {@code ArrowDeviceArray}
     * @param level how much of the foreign structure to check before it is used
     * @param arena the arena whose closing releases the import (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @return the imported array
     */
    public static ImportedArray importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                  ValidationLevel level, Arena arena) {
        requireNativeAccess();
        return importDevice(schema, arrowDeviceArrayPtr, level, arena, null);
    }

    /**
     * Both device imports: without a copier (CPU memory at any level, device memory at NONE or MINIMAL), or
     * with one (device memory only, at any level).
     */
    private static ImportedArray importDevice(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                              ValidationLevel level, Arena arena, DeviceCopier copier) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowDeviceArrayPtr, "arrowDeviceArrayPtr");
        Objects.requireNonNull(level, "level");
        long original = arrowDeviceArrayPtr.address() + ArrowDeviceArray.array$offset();
        return ForeignImport.take(ForeignImport.Kind.ARROW_DEVICE_ARRAY, arrowDeviceArrayPtr, owned -> {
            DeviceKind deviceType = deviceType(ArrowDeviceArray.device_type(owned));
            long deviceId = ArrowDeviceArray.device_id(owned);
            long sync = ArrowDeviceArray.sync_event(owned).address();
            checkDevice(deviceType, deviceId, sync, copier == null ? level : ValidationLevel.MINIMAL);
            if (copier != null && deviceType == DeviceKind.CPU) {
                throw new ValidationException(Category.DEVICE, "device_type",
                        "expected device memory but found ARROW_DEVICE_CPU: import it without a copier");
            }
            MemorySegment reserved = owned.asSlice(ArrowDeviceArray.reserved$offset(), 3 * 8L);
            for (int i = 0; i < 3; i++) {
                long r = reserved.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                if (r != 0) {
                    throw new ValidationException(Category.DEVICE, "reserved[" + i + "]",
                            "expected 0 but found " + r);
                }
            }
            ArrayTable table;
            if (copier == null) {
                table = new ArrayTable(schema.layout(), deviceType == DeviceKind.CPU);
                ArrayReader.read(owned.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof()), original, table,
                        level);
            } else {
                table = DeviceContents.read(owned, original, schema, level, copier);
            }
            return new ImportedArray(ForeignImport.Kind.ARROW_DEVICE_ARRAY, owned, table, level, arena);
        });
    }

    /**
     * Imports an {@code ArrowDeviceArray} of device memory and validates it at any level: at DEFAULT and
     * FULL its contents are read from host copies that {@code copier} makes (at most two batches), by the
     * same checks as host arrays. Before any copy, {@code copier}'s {@link DeviceCopier#prepare} sees the
     * device, the sync event and the structure (checked at MINIMAL; not at all at NONE): it checks them and
     * orders its copies after the sync event (on the stream it copies on). Release bound to {@code arena} as in
     * {@link #importArray(SchemaNode, MemorySegment, ValidationLevel, Arena)} ({@code null}: handle-owned).
     *
     * <p>Ownership: after a return the handle (or {@code arena}) owns the struct; after a throw it has
     * already been released.
     *
     * @param schema the field the array is read with (for a batch, an imported schema's root; borrowed)
     * @param arrowDeviceArrayPtr the producer's {@code ArrowDeviceArray}
     * @param level how much of the foreign structure to check before it is used
     * @param arena the arena whose closing releases the import (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @param copier copies device memory to the host when needed
     * @return the imported array
     * @throws ValidationException as for {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel)}
     */
    public static ImportedArray importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                  ValidationLevel level, Arena arena, DeviceCopier copier) {
        requireNativeAccess();
        Objects.requireNonNull(copier, "copier");
        return importDevice(schema, arrowDeviceArrayPtr, level, arena, copier);
    }

    /**
     * Imports the {@code ArrowArrayStream} at {@code arrowArrayStreamPtr}: moves it, then fetches and
     * validates its schema.
     *
     * <p>Ownership: after a return the caller owns the returned stream (close it); after a throw the stream
     * has already been released.
     *
     * @param arrowArrayStreamPtr the producer's {@code ArrowArrayStream}
     * @return the imported stream
     * @throws ArrowStreamException if {@code get_schema} returned an errno
     * @throws ValidationException if the stream or its schema is malformed
     */
    public static ImportedArrayStream importStream(MemorySegment arrowArrayStreamPtr) {
        requireNativeAccess();
        return ImportedArrayStream.take(arrowArrayStreamPtr, false);
    }

    /**
     * Imports the {@code ArrowDeviceArrayStream} at {@code arrowDeviceArrayStreamPtr}, as
     * {@link #importStream}; batches come as {@link #importDeviceArray device arrays}.
     *
     * <p>Ownership: after a return the caller owns the returned stream (close it); after a throw the stream
     * has already been released.
     *
     * @param arrowDeviceArrayStreamPtr the producer's {@code ArrowDeviceArrayStream}
     * @return the imported stream
     * @throws ArrowStreamException if {@code get_schema} returned an errno
     * @throws ValidationException if the stream or its schema is malformed, or its device type is unknown
     */
    public static ImportedArrayStream importDeviceStream(MemorySegment arrowDeviceArrayStreamPtr) {
        requireNativeAccess();
        return ImportedArrayStream.take(arrowDeviceArrayStreamPtr, true);
    }

    /**
     * Checks {@code data}, a description of host memory, against {@code schema} at {@code level}, as
     * {@link #importArray} checks a struct, and returns its view: every buffer sized exactly, and every size
     * it derives within the segment given for that buffer (at every level, NONE included; where the level
     * derives no size, as for the data of a string below DEFAULT, the buffer is its whole segment). Contents
     * are read only through the segments. Ownership: borrows, after a return as after a throw;
     * {@link ArrayNode#buffer} gives slices of the segments, readable while their arenas are open.
     *
     * @param schema the array's field (from {@link #importSchema}, or made with {@link SchemaNode#of})
     * @param data the array, in host memory
     * @param level how much of it to check; DEFAULT and FULL read offsets and other contents
     * @return the checked view of {@code data}
     * @throws ValidationException if the description does not match the schema or a size does not fit
     * @throws org.devicebridge.HandleClosedException if the arena of a buffer's segment is closed
     */
    public static ArrayNode viewArray(SchemaNode schema, ArrayData data, ValidationLevel level) {
        requireNativeAccess();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(level, "level");
        return ArrayDataReader.read(schema, data, level, true).node(0);
    }

    /**
     * Exports {@code data} (checked against {@code schema} at {@link ValidationLevel#MINIMAL}, reading no
     * buffer) into the caller's {@code ArrowArray} at {@code out}: zero-copy, the buffers' addresses are
     * written as they are, and so is the offset. The consumer's {@code release} of the whole tree (children
     * moved out and released on their own included) frees what the export allocated, then closes {@code owner}
     * once, on the releasing thread; pass {@code null} when the memory outlives every consumer.
     *
     * <p>Ownership: after a return the consumer owns the export and the caller keeps the buffers valid until
     * {@code owner} is closed; after a throw {@code out} is untouched, nothing is held and {@code owner} is open.
     *
     * @param schema the array's field
     * @param data the array, in host or device memory
     * @param out the caller's {@code struct ArrowArray}, in the released state
     * @param owner closed once when the consumer released the export (a shared arena, or any
     *     {@link AutoCloseable} that may be closed on another thread), or {@code null}
     * @throws ValidationException if the description does not match the schema or a size does not fit, or
     *     {@code out} is not a native, aligned segment of a struct's size
     * @throws org.devicebridge.HandleClosedException if the arena of a buffer's segment is closed
     */
    public static void exportArray(SchemaNode schema, ArrayData data, MemorySegment out, AutoCloseable owner) {
        requireNativeAccess();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(data, "data");
        FfmExportWriter.exportArray(schema, data, out, owner);
    }

    /**
     * Exports {@code schema} (format, name, flags, metadata, children, dictionary) into the caller's
     * {@code ArrowSchema} at {@code out}; its {@code release} frees what the export allocated, children moved out
     * and released on their own included. Ownership: after a return the consumer owns the export; after a
     * throw {@code out} is untouched and nothing is held.
     *
     * @param schema the field to export (from {@link #importSchema}, or made with {@link SchemaNode#of})
     * @param out the caller's {@code struct ArrowSchema}, in the released state
     * @throws ValidationException if {@code out} is not a native, aligned segment of a struct's size
     */
    public static void exportSchema(SchemaNode schema, MemorySegment out) {
        requireNativeAccess();
        Objects.requireNonNull(schema, "schema");
        FfmExportWriter.exportSchema(schema, out);
    }

    /**
     * The device type of a {@code device_type} field.
     *
     * @throws ValidationException {@link Category#DEVICE} for a number the C Device Data Interface does not define
     */
    static DeviceKind deviceType(int code) {
        return DeviceKind.fromCode(code).filter(DeviceKind::isArrowDeviceType).orElseThrow(() -> new ValidationException(
                Category.DEVICE, "device_type", "expected a known ArrowDeviceType but found " + code));
    }

    private static void checkDevice(DeviceKind deviceType, long deviceId, long sync, ValidationLevel level) {
        if (deviceType == DeviceKind.CPU) {
            if (sync != 0) {
                throw new ValidationException(Category.DEVICE, "sync_event",
                        "expected NULL for a CPU array but found a sync event");
            }
            if (deviceId != -1 && deviceId != 0) {
                throw new ValidationException(Category.DEVICE, "device_id",
                        "expected -1 or 0 for a CPU array but found " + deviceId);
            }
        } else if (level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL) {
            throw new ValidationException(Category.DEVICE, "device_type", "expected " + DeviceKind.CPU.arrowName()
                    + " for validation level " + level + " (it reads buffer contents) but found device type "
                    + deviceType.code() + ": import device memory at NONE or MINIMAL");
        }
    }

    // Empty structs for the caller-allocated forms of the exports and for native producers that fill a struct
    // the consumer owns: zeroed, sized and aligned as the C ABI requires, in the released state
    // (release == NULL). The arena owns the struct's memory, never what a producer puts into it.

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
