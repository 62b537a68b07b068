package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ValidationException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.ForeignImport;

/**
 * Imports Arrow C Data Interface structs produced by any native code into handles that own them. Every
 * method <em>moves</em> the struct first (the producer's struct is marked released), then validates, and
 * releases it if validation fails: after a return or a throw the caller owns nothing of the input struct
 * (its memory, allocated by the caller, stays the caller's to free).
 *
 * <p>Exceptions: {@link ValidationException} with a {@link Category} and a field path for malformed input;
 * {@link org.devicebridge.UnsupportedFeatureException} for valid input this library cannot handle.
 */
public final class ArrowImport {
    private ArrowImport() {}

    /**
     * Imports the {@code ArrowSchema} at {@code arrowSchemaPtr}: parses every format string and metadata
     * blob, checks child counts, flags, nesting (at most 64 levels) and cycles.
     *
     * <p>Ownership: after a return the caller owns the returned {@link ImportedSchema} (close it); after a
     * throw the struct has already been released (or was NULL / released already and is untouched).
     *
     * @throws ValidationException if the schema is malformed
     */
    public static ImportedSchema importSchema(MemorySegment arrowSchemaPtr) {
        Objects.requireNonNull(arrowSchemaPtr, "arrowSchemaPtr");
        long original = arrowSchemaPtr.address();
        return ForeignImport.take(ForeignImport.Kind.ARROW_SCHEMA, arrowSchemaPtr,
                owned -> new ImportedSchema(owned, SchemaReader.read(owned, original)));
    }

    /**
     * Imports the {@code ArrowArray} at {@code arrowArrayPtr}, whose type is {@code schema} (borrowed), and
     * validates it at {@code level}. The array's buffers are host memory.
     *
     * <p>Ownership: after a return the caller owns the returned {@link ImportedArray} (close it, or hand it
     * to {@link org.devicebridge.arrow.java.ArrowJavaImport}); after a throw the struct has already been released.
     *
     * @throws ValidationException if the array is malformed or does not match the schema
     */
    public static ImportedArray importArray(SchemaNode schema, MemorySegment arrowArrayPtr, ValidationLevel level) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowArrayPtr, "arrowArrayPtr");
        Objects.requireNonNull(level, "level");
        long original = arrowArrayPtr.address();
        return ForeignImport.take(ForeignImport.Kind.ARROW_ARRAY, arrowArrayPtr, owned -> {
            BufferScope scope = new BufferScope("imported ArrowArray");
            ArrayNode root = ArrayReader.read(owned, original, schema, level, true, scope);
            return new ImportedArray(new ImportedArray.Owner(ForeignImport.Kind.ARROW_ARRAY, owned, scope), root,
                    ArrowDeviceType.CPU, -1, 0, level);
        });
    }

    /** {@link #importArray(SchemaNode, MemorySegment, ValidationLevel)} with the root of an imported schema (borrowed). */
    public static ImportedArray importArray(ImportedSchema schema, MemorySegment arrowArrayPtr, ValidationLevel level) {
        return importArray(Objects.requireNonNull(schema, "schema").root(), arrowArrayPtr, level);
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
     * @throws ValidationException {@link Category#DEVICE} for an unknown device type, a CPU array with a
     *         sync event, non-zero reserved fields, or a device array asked for DEFAULT/FULL validation;
     *         other categories as for {@link #importArray(SchemaNode, MemorySegment, ValidationLevel)}
     */
    public static ImportedArray importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                  ValidationLevel level) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowDeviceArrayPtr, "arrowDeviceArrayPtr");
        Objects.requireNonNull(level, "level");
        long original = arrowDeviceArrayPtr.address() + ArrowDeviceArray.array$offset();
        return ForeignImport.take(ForeignImport.Kind.ARROW_DEVICE_ARRAY, arrowDeviceArrayPtr, owned -> {
            ArrowDeviceType deviceType = deviceType(ArrowDeviceArray.device_type(owned));
            long deviceId = ArrowDeviceArray.device_id(owned);
            long sync = ArrowDeviceArray.sync_event(owned).address();
            checkDevice(deviceType, deviceId, sync, level);
            MemorySegment reserved = owned.asSlice(ArrowDeviceArray.reserved$offset(), 3 * 8L);
            for (int i = 0; i < 3; i++) {
                long r = reserved.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                if (r != 0) {
                    throw new ValidationException(Category.DEVICE, "reserved[" + i + "]",
                            "expected 0 but found " + r);
                }
            }
            boolean host = deviceType == ArrowDeviceType.CPU;
            BufferScope scope = new BufferScope("imported ArrowDeviceArray");
            MemorySegment array = owned.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
            ArrayNode root = ArrayReader.read(array, original, schema, level, host, scope);
            return new ImportedArray(new ImportedArray.Owner(ForeignImport.Kind.ARROW_DEVICE_ARRAY, owned, scope), root,
                    deviceType, deviceId, sync, level);
        });
    }

    /** {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel)} with an imported schema's root (borrowed). */
    public static ImportedArray importDeviceArray(ImportedSchema schema, MemorySegment arrowDeviceArrayPtr,
                                                  ValidationLevel level) {
        return importDeviceArray(Objects.requireNonNull(schema, "schema").root(), arrowDeviceArrayPtr, level);
    }

    /**
     * Imports the {@code ArrowArrayStream} at {@code arrowArrayStreamPtr}: moves it, then fetches and
     * validates its schema.
     *
     * <p>Ownership: after a return the caller owns the returned stream (close it); after a throw the stream
     * has already been released.
     *
     * @throws ArrowStreamException if {@code get_schema} returned an errno
     * @throws ValidationException if the stream or its schema is malformed
     */
    public static ImportedArrayStream importStream(MemorySegment arrowArrayStreamPtr) {
        return ImportedArrayStream.take(arrowArrayStreamPtr, false);
    }

    /**
     * Imports the {@code ArrowDeviceArrayStream} at {@code arrowDeviceArrayStreamPtr}, as
     * {@link #importStream}; batches come as {@link #importDeviceArray device arrays}.
     *
     * <p>Ownership: after a return the caller owns the returned stream (close it); after a throw the stream
     * has already been released.
     *
     * @throws ArrowStreamException if {@code get_schema} returned an errno
     * @throws ValidationException if the stream or its schema is malformed, or its device type is unknown
     */
    public static ImportedArrayStream importDeviceStream(MemorySegment arrowDeviceArrayStreamPtr) {
        return ImportedArrayStream.take(arrowDeviceArrayStreamPtr, true);
    }

    /**
     * The device type of a {@code device_type} field.
     *
     * @throws ValidationException {@link Category#DEVICE} for a number the C Device Data Interface does not define
     */
    static ArrowDeviceType deviceType(int code) {
        return ArrowDeviceType.fromCode(code).orElseThrow(() -> new ValidationException(Category.DEVICE, "device_type",
                "expected a known ArrowDeviceType but found " + code));
    }

    private static void checkDevice(ArrowDeviceType deviceType, long deviceId, long sync, ValidationLevel level) {
        if (deviceType == ArrowDeviceType.CPU) {
            if (sync != 0) {
                throw new ValidationException(Category.DEVICE, "sync_event",
                        "expected NULL for a CPU array but found a sync event");
            }
            if (deviceId != -1 && deviceId != 0) {
                throw new ValidationException(Category.DEVICE, "device_id",
                        "expected -1 or 0 for a CPU array but found " + deviceId);
            }
        } else if (level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL) {
            throw new ValidationException(Category.DEVICE, "device_type", "expected " + ArrowDeviceType.CPU.cName()
                    + " for validation level " + level + " (it reads buffer contents) but found device type "
                    + deviceType.code() + ": import device memory at NONE or MINIMAL");
        }
    }
}
