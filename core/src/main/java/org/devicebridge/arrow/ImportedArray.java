package org.devicebridge.arrow;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.DeviceKind;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.foreign.SegmentSource;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;

/**
 * An {@code ArrowArray} (or {@code ArrowDeviceArray}) taken from native code and validated once into a
 * flat table ({@link #root()} and its children are light views of it), or the validated host copies of a
 * device array's buffers (a download). Owns the moved struct and calls its {@code release} exactly once
 * (or, for host copies, frees them once): when its arena closes (see {@link NativeHandle}: {@link #close()} for
 * an import without an arena, the caller's {@code Arena.close()} for an import given one), or, after the
 * array was handed to Arrow Java ({@link org.devicebridge.arrow.java.ArrowJavaImport}), when the last Arrow
 * buffer is released.
 *
 * <p>Thread safety: the view is immutable and may be read from any thread; buffer segments follow the
 * arena's rules. An import without an arena keeps them in a confined arena owned by the thread that takes
 * the first one: only that thread may take more, close the handle or hand it over (others get
 * {@link org.devicebridge.HandleConfinedException}); pass {@code Arena.ofShared()} to read from several.
 */
public final class ImportedArray extends NativeHandle {
    private final ArrayTable table;
    private final ForeignImport.Kind kind; // null for host copies that own a release step instead of a struct
    private final MemorySegment owned;
    private final Runnable release;
    private final DeviceKind deviceType;
    private final long deviceId;
    private final long syncEvent;
    private final ValidationLevel level;

    ImportedArray(ForeignImport.Kind kind, MemorySegment owned, ArrayTable table, DeviceKind deviceType, long deviceId,
                  long syncEvent, ValidationLevel level, Arena arena) {
        this(kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY ? "imported ArrowDeviceArray" : "imported ArrowArray",
                kind, owned, () -> kind.release(owned), table, deviceType, deviceId, syncEvent, level, arena);
    }

    /**
     * A host array that owns no struct but {@code release}, which frees the memory behind {@code table}'s
     * buffers (host copies of a device array): run once, when this handle closes or, after a hand-over to
     * Arrow Java, when the last Arrow buffer is released. Handle-owned arena; device type CPU, no sync event.
     */
    ImportedArray(ArrayTable table, ValidationLevel level, Runnable release) {
        this("host copy of a device array", null, null, release, table, DeviceKind.CPU, -1, 0, level, null);
    }

    private ImportedArray(String description, ForeignImport.Kind kind, MemorySegment owned, Runnable release,
                          ArrayTable table, DeviceKind deviceType, long deviceId, long syncEvent,
                          ValidationLevel level, Arena arena) {
        super(description, release::run, arena);
        this.kind = kind;
        this.owned = owned;
        this.release = release;
        this.table = table;
        this.deviceType = deviceType;
        this.deviceId = deviceId;
        this.syncEvent = syncEvent;
        this.level = level;
        table.ownedBy(new SegmentSource() {
            @Override
            public MemorySegment segment(long address, long byteSize) {
                return ImportedArray.this.segment(address, byteSize);
            }

            @Override
            public void ensureLive() {
                ImportedArray.this.ensureLive();
            }
        });
    }

    /** {@return the level this array was validated at} */
    public ValidationLevel validationLevel() {
        return level;
    }

    /**
     * {@return the validated root node}
     *
     * @throws org.devicebridge.HandleClosedException if the array was closed or handed to Arrow Java
     */
    public ArrayNode root() {
        ensureLive();
        return table.node(0);
    }

    /** {@return {@link DeviceKind#CPU} for plain {@code ArrowArray} imports, else the producer's device type} */
    public DeviceKind deviceType() {
        return deviceType;
    }

    /** {@return the producer's device id ({@code -1} for a plain {@code ArrowArray})} */
    public long deviceId() {
        return deviceId;
    }

    /**
     * The producer's sync event pointer (for CUDA a pointer to a {@code CUevent}) as a zero-length segment,
     * {@link MemorySegment#NULL} when there is none. Borrowed: valid while this array is live.
     *
     * @return the sync event pointer, or {@link MemorySegment#NULL}
     */
    public MemorySegment syncEvent() {
        return MemorySegment.ofAddress(syncEvent);
    }

    /**
     * Runs, once, the FULL content checks Arrow Java relies on that this array's level did not run (see
     * {@link TrustedContents#check}): nothing for an array validated at FULL. For the Arrow Java bridge,
     * before it reads the view. The array stays owned by this handle either way; the caller releases it on
     * a throw.
     *
     * @throws ValidationException if a check fails
     * @throws UnsupportedFeatureException if the array is device memory or was validated below DEFAULT
     * @throws org.devicebridge.HandleClosedException if the array was closed
     */
    void checkContentsArrowJavaTrusts() {
        ensureLive();
        if (level == ValidationLevel.FULL && table.host) {
            return;
        }
        if (!table.host || level != ValidationLevel.DEFAULT) {
            throw new UnsupportedFeatureException("", "expected host memory validated at DEFAULT or FULL for Arrow"
                    + " Java but found " + (table.host ? level : "device memory"));
        }
        TrustedContents.check(table);
    }

    /**
     * Passes ownership of the struct (or of the host copies) to a consumer (Arrow Java), which must run the
     * returned action exactly once. The handle becomes CONSUMED first; segments handed out before become
     * unusable.
     */
    Runnable transfer() {
        markConsumed();
        return release;
    }

    /**
     * The view of this device array read again at {@code level} through {@code copier}, as an import at
     * that level reads it (see {@link DeviceContents}): for a batch imported below DEFAULT whose consumer
     * needs the sizes of its data buffers. This handle keeps owning the struct.
     *
     * @throws org.devicebridge.HandleClosedException if the array was closed
     */
    ArrayNode reread(ValidationLevel level, DeviceCopier copier) {
        ensureLive();
        if (kind != ForeignImport.Kind.ARROW_DEVICE_ARRAY || table.host) {
            throw new IllegalStateException("expected an imported ArrowDeviceArray of device memory");
        }
        MemorySegment array = owned.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        // The producer's root address only served the cycle check, which the import already ran on this tree.
        ArrayTable reread = DeviceContents.read(array, array.address(), table.layout.schema(0), level, copier,
                deviceType, deviceId, syncEvent);
        reread.ownedBy(table.source());
        return reread.node(0);
    }
}
