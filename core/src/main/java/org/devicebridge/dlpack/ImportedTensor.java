package org.devicebridge.dlpack;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.foreign.ForeignImport;

/**
 * A DLPack tensor imported from native code, validated once. Owns the producer's struct and calls its
 * deleter exactly once, when its arena closes (see {@link NativeHandle}: {@link #close()} for an import
 * without an arena, whose segment is confined to the thread that took it first; the caller's
 * {@code Arena.close()} for an import given one; the Cleaner, with a leak warning, for a forgotten handle).
 * The segment it hands out belongs to that arena: unusable after the deleter ran, and holding it in a
 * native call keeps the deleter from running. A tensor this library exported and imported
 * itself ({@link DLPack#importTensor}) has no struct left to delete (it was freed once read): its release,
 * at the same moment, closes the owner given at export, if any.
 *
 * <p>Geometry: {@link #shape()} and {@link #strides()} are in elements ({@code strides()} is filled with
 * compact row-major strides where the producer passed NULL). {@link #segment()} covers exactly the bytes
 * the tensor spans; with negative strides that range starts before element {@code [0, ..., 0]}, which sits
 * at {@link #originOffset()} inside it.
 *
 * <p>Thread safety: the accessors may be called from any thread while the tensor is live, except that
 * {@link #segment()}, {@code close()} and a hand-over of an import without an arena belong to the thread
 * that took its segment first (once one was taken); {@code close()} is idempotent.
 */
public final class ImportedTensor extends NativeHandle {

    /** A DLPack ABI version, as a versioned struct or an exchange table's header carries it. */
    record Version(int major, int minor) {
        private static final Version[] MAJOR_1 = new Version[16];

        static {
            for (int minor = 0; minor < MAJOR_1.length; minor++) {
                MAJOR_1[minor] = new Version(1, minor);
            }
        }

        /** The version {@code major.minor}; the common ones (1.0 to 1.15) are shared instances. */
        static Version of(int major, int minor) {
            return major == 1 && minor >= 0 && minor < MAJOR_1.length ? MAJOR_1[minor] : new Version(major, minor);
        }
    }

    private final Version version;
    private final Device device;
    private final Geometry geometry; // dtype and byte_offset too
    private final boolean readOnly;
    private final boolean copied;
    private final boolean subBytePadded;
    private final boolean hostAccessible;
    private final long segmentAddress;
    private final ForeignImport.Kind kind;
    private final MemorySegment owned; // null for a local hand-over (its struct is freed)
    private final Exports.LocalRelease local; // non-null for a tensor this library exported (DLPack.importTensor)
    // made on the first segment() call; racing first calls make equal segments of the one arena, and a
    // segment is immutable (final fields), so a plain field suffices (a volatile store would cost a fence)
    private MemorySegment segment;

    /**
     * Reads the header, device and data pointer from {@code owned}, which {@link TensorReader} validated: the
     * library's copy of the struct (moved), so it reads what was checked.
     */
    private ImportedTensor(ForeignImport.Kind kind, MemorySegment owned, Exports.LocalRelease local, Geometry geometry,
                           Arena arena) {
        super(description(kind), local != null ? local : () -> kind.release(owned), arena);
        this.kind = kind;
        this.owned = local != null ? null : owned;
        this.local = local;
        boolean versioned = kind == ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED;
        long t = versioned ? TensorStruct.V_TENSOR : TensorStruct.L_TENSOR;
        long flags = versioned ? owned.get(ValueLayout.JAVA_LONG, TensorStruct.V_FLAGS) : 0;
        this.version = versioned ? Version.of(owned.get(ValueLayout.JAVA_INT, TensorStruct.V_MAJOR),
                owned.get(ValueLayout.JAVA_INT, TensorStruct.V_MINOR)) : null;
        int type = owned.get(ValueLayout.JAVA_INT, t + TensorStruct.DEVICE_TYPE);
        this.device = type == DeviceKind.CPU.code() ? Device.CPU : new Device(DeviceKind.fromCode(type).orElseThrow(),
                owned.get(ValueLayout.JAVA_INT, t + TensorStruct.DEVICE_ID));
        this.geometry = geometry;
        this.readOnly = (flags & DLPack.FLAG_READ_ONLY) != 0;
        this.copied = (flags & DLPack.FLAG_IS_COPIED) != 0;
        this.subBytePadded = (flags & DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED) != 0;
        this.hostAccessible = device.kind().isHostAccessible();
        // data + byte_offset + start: exact, checked by TensorReader
        this.segmentAddress = TensorStruct.pointer(owned, t + TensorStruct.DATA) + geometry.byteOffset()
                + geometry.start();
    }

    private static String description(ForeignImport.Kind kind) {
        return switch (kind) {
            case DL_MANAGED_TENSOR_VERSIONED -> "imported DLManagedTensorVersioned";
            case DL_MANAGED_TENSOR -> "imported DLManagedTensor";
            default -> "imported " + kind.cName();
        };
    }

    /**
     * @param local null for a foreign tensor, whose release calls its deleter on {@code owned}; for a tensor
     *              this library exported and handed over itself, what is left to release once its struct
     *              is freed ({@link DLPack#importTensor})
     * @param geometry the tensor's checked geometry
     * @param arena the caller's arena whose close releases the tensor, or null for one the handle owns
     */
    static ImportedTensor create(ForeignImport.Kind kind, MemorySegment owned, Exports.LocalRelease local,
                                 Geometry geometry, Arena arena) {
        return new ImportedTensor(kind, owned, local, geometry, arena);
    }

    /**
     * {@return the producer's DLPack major version (1 for a {@code DLManagedTensorVersioned}); 0 for a legacy
     * {@code DLManagedTensor}, which carries no version (the ABI before 1.0)}
     */
    public int majorVersion() {
        return version == null ? 0 : version.major();
    }

    /** {@return the producer's DLPack minor version; 0 for a legacy {@code DLManagedTensor}} */
    public int minorVersion() {
        return version == null ? 0 : version.minor();
    }

    /** {@return the element type} */
    public DType dtype() {
        return geometry.dtype();
    }

    /** {@return the device the data is on} */
    public Device device() {
        return device;
    }

    /** {@return the number of dimensions (0 for a scalar)} */
    public int ndim() {
        return geometry.shape().length;
    }

    /** {@return a copy of the shape} */
    public long[] shape() {
        return geometry.shape().clone();
    }

    /** {@return a copy of the strides in elements (compact row-major where the producer passed NULL)} */
    public long[] strides() {
        return geometry.strides().clone();
    }

    /** {@return {@code byte_offset} as the producer gave it; already applied to {@link #segment()} and {@link #devicePointer()}} */
    public long byteOffset() {
        return geometry.byteOffset();
    }

    /** {@return the number of elements (the product of the shape)} */
    public long elementCount() {
        return geometry.elements();
    }

    /** {@return bytes the tensor spans (from its lowest to its highest addressed byte; 0 when it has no elements)} */
    public long byteExtent() {
        return geometry.extent();
    }

    /** {@return {@code true} if the elements are laid out compact row-major (C order)} */
    public boolean isCompact() {
        return geometry.compact();
    }

    /** {@return {@code true} if the producer set {@code DLPACK_FLAG_BITMASK_READ_ONLY}; {@link #segment()} is then read-only} */
    public boolean isReadOnly() {
        return readOnly;
    }

    /** {@return {@code true} if the producer set {@code DLPACK_FLAG_BITMASK_IS_COPIED}} */
    public boolean isCopied() {
        return copied;
    }

    /** {@return {@code true} if sub-byte elements are padded to one byte each ({@code IS_SUBBYTE_TYPE_PADDED})} */
    public boolean isSubBytePadded() {
        return subBytePadded;
    }

    /** {@return the byte offset of element {@code [0, ..., 0]} inside {@link #segment()} (non-zero only with negative strides)} */
    public long originOffset() {
        return geometry.origin();
    }

    /**
     * The tensor's bytes, sized exactly to {@link #byteExtent()}, read-only if the producer said so, and
     * unusable once this handle is closed. Only for host-accessible devices (CPU, CUDA_HOST, ROCM_HOST,
     * CUDA_MANAGED).
     *
     * @return the tensor's bytes, borrowed from this handle
     * @throws UnsupportedFeatureException for device memory the CPU cannot read (use {@link #devicePointer()})
     * @throws org.devicebridge.HandleClosedException if the handle was closed
     * @throws org.devicebridge.HandleBusyException (its cause a {@link WrongThreadException}) if the tensor was
     *         imported without an arena and another thread took its segment first
     */
    public MemorySegment segment() {
        MemorySegment s = segment;
        if (s != null) {
            ensureSegmentAccess();
            return s;
        }
        ensureLive();
        if (!hostAccessible) {
            throw new UnsupportedFeatureException("dl_tensor.device", "memory on " + device.kind()
                    + " is not host-accessible; use devicePointer()");
        }
        s = segment(segmentAddress, geometry.extent());
        s = readOnly ? s.asReadOnly() : s;
        segment = s;
        return s;
    }

    /**
     * The address of element {@code [0, ..., 0]} ({@code data + byte_offset}) as a zero-length segment, for
     * passing to device code; it cannot be dereferenced from Java. Valid while this handle is live.
     *
     * @return the address of the first element, borrowed from this handle
     * @throws org.devicebridge.HandleClosedException if the handle was closed
     */
    public MemorySegment devicePointer() {
        ensureLive();
        return MemorySegment.ofAddress(segmentAddress - geometry.start()); // data + byte_offset
    }

    /**
     * Moves ownership out of this handle to a new owner (an Arrow Java {@code ForeignAllocation}, for one):
     * this handle becomes {@link org.devicebridge.NativeHandle.State#CONSUMED} and its segments stay valid
     * until the new owner runs the returned action, exactly once, which calls the producer's deleter.
     *
     * @return the release the new owner runs exactly once
     * @throws org.devicebridge.HandleClosedException if the handle was closed or detached already
     * @throws org.devicebridge.HandleBusyException if a native call holds one of its segments, or (its cause a
     *         {@link WrongThreadException}) if they are confined to another thread; nothing changed
     * @throws org.devicebridge.UnsupportedFeatureException if it was imported into the caller's arena, whose
     *         close releases it
     */
    public Runnable detach() {
        markConsumed();
        if (local != null) {
            return local;
        }
        ForeignImport.Kind k = kind;
        MemorySegment o = owned;
        return () -> k.release(o);
    }
}
