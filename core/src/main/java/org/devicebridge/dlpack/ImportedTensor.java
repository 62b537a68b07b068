package org.devicebridge.dlpack;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import org.devicebridge.HandleClosedException;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.internal.ForeignImport;

/**
 * A DLPack tensor imported from native code, validated once. Owns the producer's struct: {@link #close()}
 * calls its deleter exactly once (the Cleaner does too, with a leak warning, if the handle is forgotten).
 * Segments it hands out are bounded to its lifetime: after {@code close()} they can no longer be accessed.
 *
 * <p>Geometry: {@link #shape()} and {@link #strides()} are in elements ({@code strides()} is filled with
 * compact row-major strides where the producer passed NULL). {@link #segment()} covers exactly the bytes
 * the tensor spans; with negative strides that range starts before element {@code [0, ..., 0]}, which sits
 * at {@link #originOffset()} inside it.
 */
public final class ImportedTensor extends NativeHandle {

    /** A DLPack ABI version. */
    public record Version(int major, int minor) {}

    private final Version version;
    private final DType dtype;
    private final Device device;
    private final Geometry geometry;
    private final long byteOffset;
    private final boolean readOnly;
    private final boolean copied;
    private final boolean subBytePadded;
    private final MemorySegment origin; // data + byte_offset, zero length
    private final boolean hostAccessible;
    private final long segmentAddress;
    private final boolean segmentReadOnly;
    private volatile MemorySegment segment; // made on the first segment() call
    private final Releaser releaser;

    /**
     * The lifetime of {@link #segment()}: a shared arena made on the first call only, because closing a
     * shared arena costs a handshake with every thread (tens of microseconds), which a tensor whose bytes
     * are never viewed from Java (passed on by address, or device memory) must not pay on every close.
     */
    private static final class SegmentScope {
        private Arena arena;
        private boolean closed;

        synchronized MemorySegment segment(long address, long length, String description) {
            if (closed) {
                throw new HandleClosedException(description + " is closed");
            }
            if (arena == null) {
                arena = Arena.ofShared();
            }
            return MemorySegment.ofAddress(address).reinterpret(length, arena, null);
        }

        synchronized void close() {
            closed = true;
            if (arena != null) {
                arena.close();
                arena = null;
            }
        }
    }

    /** Closes the segment's scope, then calls the producer's deleter; must not refer to the handle. */
    private record Releaser(SegmentScope scope, ForeignImport.Kind kind, MemorySegment owned) implements ReleaseAction {
        @Override
        public void release() {
            try {
                scope.close();
            } finally {
                kind.release(owned);
            }
        }
    }

    private ImportedTensor(Releaser releaser, Version version, DType dtype, Device device, Geometry geometry,
                           long byteOffset, boolean readOnly, boolean copied, boolean subBytePadded,
                           MemorySegment data) {
        super("imported " + releaser.kind.cName(), releaser);
        this.releaser = releaser;
        this.version = version;
        this.dtype = dtype;
        this.device = device;
        this.geometry = geometry;
        this.byteOffset = byteOffset;
        this.readOnly = readOnly;
        this.copied = copied;
        this.subBytePadded = subBytePadded;
        long originAddress = data.address() + byteOffset;
        this.origin = MemorySegment.ofAddress(originAddress);
        this.hostAccessible = device.type().isHostAccessible();
        this.segmentAddress = originAddress + geometry.start;
        this.segmentReadOnly = readOnly;
        if (hostAccessible && geometry.extent == 0) {
            MemorySegment s = MemorySegment.ofAddress(originAddress);
            this.segment = readOnly ? s.asReadOnly() : s;
        }
    }

    static ImportedTensor create(ForeignImport.Kind kind, MemorySegment owned, Version version, DType dtype,
                                 Device device, Geometry geometry, long byteOffset, boolean readOnly, boolean copied,
                                 boolean subBytePadded, MemorySegment data) {
        return new ImportedTensor(new Releaser(new SegmentScope(), kind, owned), version, dtype, device, geometry,
                byteOffset, readOnly, copied, subBytePadded, data);
    }

    /** The producer's DLPack version; empty for a legacy {@code DLManagedTensor}. */
    public Optional<Version> version() {
        return Optional.ofNullable(version);
    }

    public DType dtype() {
        return dtype;
    }

    public Device device() {
        return device;
    }

    public int ndim() {
        return geometry.shape.length;
    }

    /** A copy of the shape. */
    public long[] shape() {
        return geometry.shape.clone();
    }

    /** A copy of the strides in elements (compact row-major where the producer passed NULL). */
    public long[] strides() {
        return geometry.strides.clone();
    }

    /** {@code byte_offset} as the producer gave it; already applied to {@link #segment()} and {@link #devicePointer()}. */
    public long byteOffset() {
        return byteOffset;
    }

    /** The number of elements (the product of the shape). */
    public long elementCount() {
        return geometry.elements;
    }

    /** Bytes the tensor spans (from its lowest to its highest addressed byte; 0 when it has no elements). */
    public long byteExtent() {
        return geometry.extent;
    }

    /** {@code true} if the elements are laid out compact row-major (C order). */
    public boolean isCompact() {
        return geometry.compact;
    }

    /** {@code true} if the producer set {@code DLPACK_FLAG_BITMASK_READ_ONLY}; {@link #segment()} is then read-only. */
    public boolean isReadOnly() {
        return readOnly;
    }

    /** {@code true} if the producer set {@code DLPACK_FLAG_BITMASK_IS_COPIED}. */
    public boolean isCopied() {
        return copied;
    }

    /** {@code true} if sub-byte elements are padded to one byte each ({@code IS_SUBBYTE_TYPE_PADDED}). */
    public boolean isSubBytePadded() {
        return subBytePadded;
    }

    /** Byte offset of element {@code [0, ..., 0]} inside {@link #segment()} (non-zero only with negative strides). */
    public long originOffset() {
        return geometry.origin();
    }

    /**
     * The tensor's bytes, sized exactly to {@link #byteExtent()}, read-only if the producer said so, and
     * unusable once this handle is closed. Only for host-accessible devices (CPU, CUDA_HOST, ROCM_HOST,
     * CUDA_MANAGED).
     *
     * @throws UnsupportedFeatureException for device memory the CPU cannot read (use {@link #devicePointer()})
     * @throws org.devicebridge.HandleClosedException if the handle was closed
     */
    public MemorySegment segment() {
        ensureLive();
        if (!hostAccessible) {
            throw new UnsupportedFeatureException("dl_tensor.device", "memory on " + device.type()
                    + " is not host-accessible; use devicePointer()");
        }
        MemorySegment s = segment;
        if (s == null) {
            s = releaser.scope.segment(segmentAddress, geometry.extent, "imported " + releaser.kind.cName());
            s = segmentReadOnly ? s.asReadOnly() : s;
            segment = s; // racing first calls make equal segments of the one arena
        }
        return s;
    }

    /**
     * The address of element {@code [0, ..., 0]} ({@code data + byte_offset}) as a zero-length segment, for
     * passing to device code; it cannot be dereferenced from Java. Valid while this handle is live.
     *
     * @throws org.devicebridge.HandleClosedException if the handle was closed
     */
    public MemorySegment devicePointer() {
        ensureLive();
        return origin;
    }

    /**
     * Moves ownership out of this handle (it becomes CONSUMED) to a new owner, which must run the returned
     * action exactly once to close the segments and call the producer's deleter.
     */
    Runnable detach() {
        markConsumed();
        Releaser r = releaser;
        return r::release;
    }
}
