package org.devicebridge.arrow;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Objects;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.generated.arrow.ArrowDeviceArray;

/**
 * An {@code ArrowArray} (or {@code ArrowDeviceArray}) taken from native code and validated once into a
 * flat table ({@link #root()} and its children are light views of it), or the validated host copies of a
 * device array's buffers (a download). Owns the moved struct and calls its {@code release} exactly once
 * (or, for host copies, frees them once): when its arena closes (see {@link NativeHandle}: {@link #close()} for
 * an import without an arena, the caller's {@code Arena.close()} for an import given one), or, after the
 * array was {@linkplain #detach() detached} (as Arrow Java's import does), when the consumer runs the release
 * step (for Arrow Java: when the last Arrow buffer is released).
 *
 * <p>Thread safety: the view is immutable and may be read from any thread; buffer segments follow the
 * arena's rules. An import without an arena keeps them in a confined arena owned by the thread that takes
 * the first one: only that thread may take more, close the handle or hand it over (others get
 * {@link org.devicebridge.HandleBusyException} caused by a {@link WrongThreadException}); pass
 * {@code Arena.ofShared()} to read from several.
 */
public final class ImportedArray extends NativeHandle {
    private final ArrayTable table;
    private final ForeignImport.Kind kind; // null for host copies that own a release step instead of a struct
    private final MemorySegment owned;
    private final Runnable release; // host copies only: for a struct, detach() makes the step when asked
    private final DeviceKind deviceType;
    private final long deviceId;
    private final long syncEvent;
    private final ValidationLevel level;

    /**
     * An imported {@code ArrowArray} or {@code ArrowDeviceArray} ({@code kind}), moved into {@code owned}: the
     * device and sync event are read from an {@code ArrowDeviceArray} (which the import checked), a plain
     * {@code ArrowArray} is CPU memory without either.
     */
    ImportedArray(ForeignImport.Kind kind, MemorySegment owned, ArrayTable table, ValidationLevel level, Arena arena) {
        super(kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY ? "imported ArrowDeviceArray" : "imported ArrowArray",
                () -> kind.release(owned), arena);
        this.kind = kind;
        this.owned = owned;
        this.release = null; // not kept: one release object per import, not two, on the hot path
        this.table = table;
        this.level = level;
        if (kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY) {
            this.deviceType = ArrowC.deviceType(ArrowDeviceArray.device_type(owned));
            this.deviceId = ArrowDeviceArray.device_id(owned);
            this.syncEvent = ArrowDeviceArray.sync_event(owned).address();
        } else {
            this.deviceType = DeviceKind.CPU;
            this.deviceId = -1;
            this.syncEvent = 0;
        }
        table.ownedBy(segments());
    }

    /**
     * A host array that owns no struct but {@code release}, which frees the memory behind {@code table}'s
     * buffers (host copies of a device array): run once, when this handle closes or, after a hand-over to
     * Arrow Java, when the last Arrow buffer is released. Handle-owned arena; device type CPU, no sync event.
     */
    ImportedArray(ArrayTable table, ValidationLevel level, Runnable release) {
        super("host copy of a device array", release::run, null);
        this.kind = null;
        this.owned = null;
        this.release = release;
        this.table = table;
        this.level = level;
        this.deviceType = DeviceKind.CPU;
        this.deviceId = -1;
        this.syncEvent = 0;
        table.ownedBy(segments());
    }

    /** Segments of the table's buffers, each from this handle's arena. */
    private SegmentSource segments() {
        return new SegmentSource() {
            @Override
            public MemorySegment segment(long address, long byteSize) {
                return ImportedArray.this.segment(address, byteSize);
            }

            @Override
            public void ensureLive() {
                ImportedArray.this.ensureLive();
            }
        };
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
     * Checks every index this array's data holds against what it points into, where its level did not: every
     * offset, view and list-view bound, union type id and offset, run end and dictionary index (the FULL
     * checks except UTF-8 and null counts). A reader that follows indices without bounds checks (Arrow Java
     * does) needs them; nothing is checked again for an array validated at FULL. The array stays owned by
     * this handle after a return and after a throw.
     *
     * @throws ValidationException with the category and field path of the first problem found
     * @throws UnsupportedFeatureException if the array is device memory or was validated below DEFAULT
     * @throws org.devicebridge.HandleClosedException if the array was closed
     */
    public void checkIndices() {
        ensureLive();
        if (level == ValidationLevel.FULL && table.host) {
            return;
        }
        if (!table.host || level != ValidationLevel.DEFAULT) {
            throw new UnsupportedFeatureException("", "expected host memory validated at DEFAULT or FULL but found "
                    + (table.host ? level : "device memory"));
        }
        TrustedContents.check(table);
    }

    /**
     * Ends this handle's ownership without releasing anything, for a consumer that reads the buffers through
     * their addresses ({@link ArrayNode#bufferPointer}) and frees them later (Arrow Java's import does): the
     * handle becomes consumed first (closing it then does nothing; reading it, or a segment taken from it,
     * throws), and the view's node objects stay readable as values.
     *
     * <p>Ownership: after a return the caller owns the returned release step and must run it exactly once;
     * it calls the struct's {@code release} (or frees the host copies). After a throw this handle still owns
     * everything.
     *
     * @return the step that releases what this handle owned
     * @throws org.devicebridge.HandleClosedException if the array was closed or detached already
     * @throws org.devicebridge.HandleBusyException if a native call still holds one of its segments, or (its
     *         cause a {@link WrongThreadException}) if they are confined to another thread
     * @throws UnsupportedFeatureException if the caller's arena owns the release (imported with an arena)
     */
    public Runnable detach() {
        markConsumed();
        if (release != null) {
            return release;
        }
        ForeignImport.Kind k = kind;
        MemorySegment struct = owned;
        return () -> k.release(struct);
    }

    /**
     * The view of this device array read again at {@code level} through {@code copier} (as an import with
     * that copier reads it: {@link DeviceCopier#prepare} first, then host copies of what the level reads), as
     * nanoarrow's {@code ArrowDeviceArrayViewSetArray} does: for a consumer of an array imported below DEFAULT
     * that needs the sizes of its data buffers, or that wants the contents checked again after the producer
     * may have changed them. This handle keeps owning the struct after a return and after a throw; the view
     * is valid while it is live.
     *
     * @param level the level to read the array at
     * @param copier copies the device ranges the level reads; only used during this call
     * @return the root of the new view
     * @throws ValidationException if the contents are malformed
     * @throws UnsupportedFeatureException if this is not an imported {@code ArrowDeviceArray} of device memory
     * @throws org.devicebridge.HandleClosedException if the array was closed
     */
    public ArrayNode view(ValidationLevel level, DeviceCopier copier) {
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(copier, "copier");
        ensureLive();
        if (kind != ForeignImport.Kind.ARROW_DEVICE_ARRAY || table.host) {
            throw new UnsupportedFeatureException("", "expected an imported ArrowDeviceArray of device memory but found "
                    + (table.host ? "host memory" : "a plain ArrowArray"));
        }
        // The producer's root address only served the cycle check, which the import already ran on this tree.
        ArrayTable reread = DeviceContents.read(owned, owned.address() + ArrowDeviceArray.array$offset(),
                table.layout.schema(0), level, copier);
        reread.ownedBy(table.source());
        return reread.node(0);
    }

    /**
     * The host array a consumer reads after copying a device array to the host: the view under
     * {@code deviceView} (the root of a device array's view whose every non-NULL buffer has a known length,
     * validated at {@code level}) with each buffer moved to its host copy, {@code copies.find(address, length)}
     * for the very length the view validated, so that what the consumer reads is what was validated (a copy
     * that does not cover a validated buffer is refused). Nothing is copied here. The contents are checked
     * again where they lie (DEFAULT, or FULL if asked), since the device memory may have changed since the
     * view was validated; contents that imply more bytes than a buffer has are refused before any read. The
     * result is host memory of device type CPU, validated at {@code level}.
     *
     * <p>Ownership: after a return the returned array owns {@code release} (the step that frees the copies),
     * which runs exactly once: when the array is closed, or after {@link #detach()} when the consumer runs it.
     * After a throw the caller still owns the copies and {@code release} has not run.
     *
     * @param deviceView the root of a validated device view; borrowed
     * @param level the level the view was validated at
     * @param copies the host copies of the buffers; read during this call, then through the result while it is live
     * @param release frees the copies; owned by the result after a return
     * @return the host array
     * @throws ValidationException {@code DEVICE} if no copy covers a buffer's validated bytes; {@code CONTENT}
     *         (or another category) if the copied contents fail the checks
     * @throws UnsupportedFeatureException if a non-NULL buffer's length is unknown
     * @throws InvalidArgumentException if {@code deviceView} is not the root of its view
     */
    public static ImportedArray ofHostCopies(ArrayNode deviceView, ValidationLevel level, HostCopies copies,
                                             Runnable release) {
        Objects.requireNonNull(deviceView, "deviceView");
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(copies, "copies");
        Objects.requireNonNull(release, "release");
        if (deviceView.index() != 0) {
            throw new InvalidArgumentException("deviceView",
                    "expected the root of a view but found " + deviceView.path());
        }
        ArrayTable device = deviceView.table();
        ArrayTable host = device.derive(true);
        for (int n = 0; n < device.size(); n++) {
            for (int i = 0; i < device.bufferCount(n); i++) {
                long address = device.bufferAddress(n, i);
                if (address == 0) {
                    continue;
                }
                long length = device.bufferLength(n, i);
                String path = device.layout.path(n, "buffers[" + i + "]");
                if (length < 0) {
                    throw new UnsupportedFeatureException(path, "expected a known buffer length but found none");
                }
                MemorySegment copy = copies.find(address, length);
                if (copy == null || copy.byteSize() < length || copy.address() == 0) {
                    throw new ValidationException(ValidationException.Category.DEVICE, path, String.format(
                            Locale.ROOT, "expected a host copy of the %d validated bytes at 0x%x but found none",
                            length, address));
                }
                host.setBuffer(n, i, copy.address(), length);
            }
        }
        // What the consumer will read is checked where it lies: the producer (or the caller's own device work)
        // may have changed it since the view was validated.
        ArrayReader.recheck(host, level == ValidationLevel.FULL ? ValidationLevel.FULL : ValidationLevel.DEFAULT);
        return new ImportedArray(host, level, release);
    }
}
