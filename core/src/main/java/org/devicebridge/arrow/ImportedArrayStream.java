package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.DeviceKind;
import org.devicebridge.NativeHandle;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * An {@code ArrowArrayStream} or {@code ArrowDeviceArrayStream} taken from native code. The schema is
 * fetched and validated once, at import; {@link #next} pulls one batch at a time. Owns the moved stream
 * struct and calls its {@code release} exactly once, on {@link #close()}; arrays already returned by
 * {@link #next} are independent of the stream and stay valid after it is closed.
 *
 * <p>Not thread-safe: call {@link #next} from one thread at a time (it is serialized to keep a misuse
 * from corrupting the producer, not to make interleaved batches meaningful). {@link #close()} from another
 * thread waits for a running {@link #next} before it releases the stream.
 */
public final class ImportedArrayStream extends NativeHandle {
    private final MemorySegment stream;
    private final boolean device;
    private final SchemaNode schema;
    private final DeviceKind deviceType;
    private boolean ended;

    /**
     * Held by {@link #next} around the producer's callbacks and by the release action, so that a close from
     * another thread waits for a running {@code get_next} instead of releasing the stream under it (the
     * C stream interface forbids calling its callbacks concurrently). Not the handle itself: the release
     * action must not capture the handle.
     */
    private final Object callbackLock;

    private ImportedArrayStream(ForeignImport.Kind kind, MemorySegment owned, SchemaNode schema, DeviceKind deviceType,
                                Object callbackLock) {
        super(kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM ? "imported ArrowDeviceArrayStream"
                : "imported ArrowArrayStream", () -> {
            synchronized (callbackLock) {
                kind.release(owned);
            }
        });
        this.callbackLock = callbackLock;
        this.stream = owned;
        this.device = kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM;
        this.schema = schema;
        this.deviceType = deviceType;
    }

    static ImportedArrayStream take(MemorySegment ptr, boolean device) {
        Objects.requireNonNull(ptr, "ptr");
        ForeignImport.Kind kind = device ? ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM : ForeignImport.Kind.ARROW_ARRAY_STREAM;
        return ForeignImport.take(kind, ptr, owned -> {
            MemorySegment getSchema = device ? ArrowDeviceArrayStream.get_schema(owned) : ArrowArrayStream.get_schema(owned);
            MemorySegment getNext = device ? ArrowDeviceArrayStream.get_next(owned) : ArrowArrayStream.get_next(owned);
            MemorySegment getLastError = device ? ArrowDeviceArrayStream.get_last_error(owned)
                    : ArrowArrayStream.get_last_error(owned);
            requireCallback(getSchema, "get_schema");
            requireCallback(getNext, "get_next");
            requireCallback(getLastError, "get_last_error");
            DeviceKind deviceType = device ? ArrowC.deviceType(ArrowDeviceArrayStream.device_type(owned))
                    : DeviceKind.CPU;
            MemorySegment out = Native.calloc(ArrowSchema.sizeof());
            try {
                int errno = device ? ArrowDeviceArrayStream.get_schema.invoke(getSchema, owned, out)
                        : ArrowArrayStream.get_schema.invoke(getSchema, owned, out);
                if (errno != 0) {
                    throw new ArrowStreamException("get_schema", errno, lastError(owned, device));
                }
                try (ImportedSchema s = ArrowC.importSchema(out)) {
                    return new ImportedArrayStream(kind, owned, s.root(), deviceType, new Object());
                }
            } finally {
                Native.free(out);
            }
        });
    }

    private static void requireCallback(MemorySegment fn, String name) {
        if (fn.equals(MemorySegment.NULL)) {
            throw new ValidationException(Category.NULL_POINTER, name, "expected a callback but found NULL");
        }
    }

    private static String lastError(MemorySegment stream, boolean device) {
        MemorySegment fn = device ? ArrowDeviceArrayStream.get_last_error(stream) : ArrowArrayStream.get_last_error(stream);
        MemorySegment text = device ? ArrowDeviceArrayStream.get_last_error.invoke(fn, stream)
                : ArrowArrayStream.get_last_error.invoke(fn, stream);
        return Native.string(text);
    }

    /** {@return the stream's schema, validated at import} Plain Java data. */
    public SchemaNode schema() {
        return schema;
    }

    /** {@return {@link DeviceKind#CPU} for an {@code ArrowArrayStream}, else the device stream's device type} */
    public DeviceKind deviceType() {
        return deviceType;
    }

    /**
     * Pulls the next batch and imports it (see {@link ArrowC#importArray} and
     * {@link ArrowC#importDeviceArray}), or returns {@code null} at the end of the stream (and for every
     * later call).
     *
     * <p>Ownership: the caller owns a returned array; after a throw the batch the producer handed over (if
     * any) has been released. The stream itself stays the caller's to close in both cases.
     *
     * @param level how much of the foreign structure to check before it is used
     * @return the imported batch, or {@code null} at the end of the stream
     * @throws ArrowStreamException if {@code get_next} returned an errno
     * @throws ValidationException if the batch is malformed, or (device streams) its device type differs
     *         from the stream's
     * @throws org.devicebridge.HandleClosedException if the stream was closed
     */
    public ImportedArray next(ValidationLevel level) {
        return next(level, null);
    }

    /**
     * As {@link #next(ValidationLevel)}, with the batch's release bound to {@code arena} (see
     * {@link ArrowC#importArray(SchemaNode, MemorySegment, ValidationLevel, java.lang.foreign.Arena)}):
     * closing the arena releases the batch; {@code null} means a handle-owned arena.
     *
     * <p>Ownership: after a return {@code arena} owns the batch; after a throw the batch the producer handed
     * over (if any) has been released. The stream stays the caller's to close in both cases.
     *
     * @param level how much of the foreign structure to check before it is used
     * @param arena the arena whose closing releases the import (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @return the imported batch, or {@code null} at the end of the stream
     */
    public ImportedArray next(ValidationLevel level, java.lang.foreign.Arena arena) {
        Objects.requireNonNull(level, "level");
        synchronized (callbackLock) {
            return nextLocked(level, arena, null);
        }
    }

    /**
     * As {@link #next(ValidationLevel, java.lang.foreign.Arena)} for an {@code ArrowDeviceArrayStream} of
     * device memory: the batch is imported as
     * {@link ArrowC#importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, java.lang.foreign.Arena,
     * DeviceCopier)} does, so it is validated at any level, its contents read from host copies that
     * {@code copier} makes.
     *
     * <p>Ownership: after a return {@code arena} (or the returned handle, for a {@code null} arena) owns the
     * batch; after a throw the batch the producer handed over (if any) has been released. The stream stays
     * the caller's to close in both cases.
     *
     * @param level how much of the foreign structure to check before it is used
     * @param arena the arena whose closing releases the import (the caller keeps owning it), or
     *     {@code null} for one the returned handle owns
     * @param copier copies device memory to the host when needed
     * @return the imported batch, or {@code null} at the end of the stream
     * @throws org.devicebridge.InvalidArgumentException for an {@code ArrowArrayStream} (nothing is pulled)
     * @throws ArrowStreamException if {@code get_next} returned an errno
     * @throws ValidationException as for {@link #next(ValidationLevel)}, or for a batch of CPU memory
     */
    public ImportedArray next(ValidationLevel level, java.lang.foreign.Arena arena, DeviceCopier copier) {
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(copier, "copier");
        if (!device) {
            throw new org.devicebridge.InvalidArgumentException("copier",
                    "expected an ArrowDeviceArrayStream for a device copier but found an ArrowArrayStream");
        }
        synchronized (callbackLock) {
            return nextLocked(level, arena, copier);
        }
    }

    private ImportedArray nextLocked(ValidationLevel level, java.lang.foreign.Arena arena, DeviceCopier copier) {
        // Checked under the lock: a close that ran first has released the stream, one that comes later waits.
        ensureLive();
        if (ended) {
            return null;
        }
        long size = device ? ArrowDeviceArray.sizeof() : ArrowArray.sizeof();
        MemorySegment out = Native.calloc(size);
        try {
            int errno = device
                    ? ArrowDeviceArrayStream.get_next.invoke(ArrowDeviceArrayStream.get_next(stream), stream, out)
                    : ArrowArrayStream.get_next.invoke(ArrowArrayStream.get_next(stream), stream, out);
            if (errno != 0) {
                throw new ArrowStreamException("get_next", errno, lastError(stream, device));
            }
            MemorySegment release = device ? ArrowArray.release(out.asSlice(ArrowDeviceArray.array$offset(),
                    ArrowArray.sizeof())) : ArrowArray.release(out);
            if (release.equals(MemorySegment.NULL)) {
                ended = true;
                return null;
            }
            if (!device) {
                return ArrowC.importArray(schema, out, level, arena);
            }
            int batchDevice = ArrowDeviceArray.device_type(out);
            if (batchDevice != deviceType.code()) {
                // Take it, so that it is released, then refuse it.
                ForeignImport.take(ForeignImport.Kind.ARROW_DEVICE_ARRAY, out, owned -> {
                    throw new ValidationException(Category.DEVICE, "device_type", "expected the stream's device type "
                            + deviceType.code() + " but found " + batchDevice);
                });
            }
            return copier == null ? ArrowC.importDeviceArray(schema, out, level, arena)
                    : ArrowC.importDeviceArray(schema, out, level, arena, copier);
        } finally {
            Native.free(out);
        }
    }
}
