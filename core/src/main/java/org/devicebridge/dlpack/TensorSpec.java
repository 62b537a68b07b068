package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * What {@link DLPack#exportVersioned(TensorSpec)} and {@link DLPack#exportLegacy(TensorSpec)} export: the
 * memory, element type, shape, strides, byte offset, device, flags and, for data produced asynchronously,
 * the consumer's stream. A spec is immutable (each {@code with...} returns a new one), owns nothing and
 * may be exported any number of times, each export a new tensor.
 *
 * {@snippet :
 * TensorSpec spec = TensorSpec.of(data, DType.FLOAT32, 2, 3)    // compact row-major, CPU, writable
 *         .withStrides(1, 2)                                      // column-major instead
 *         .withFlags(TensorFlag.READ_ONLY);
 * try (ExportedTensor tensor = DLPack.exportVersioned(spec)) { ... }
 * }
 *
 * <p>Defaults: compact row-major strides, byte offset 0, {@link Device#CPU}, no flags (but
 * {@link TensorFlag#READ_ONLY} whenever {@code data} is a read-only segment: the flag tells the truth), no
 * stream synchronisation.
 *
 * <p>Validation: each method checks what it sets when it is called (dtype, shape, strides and byte offset
 * together, with exact arithmetic, so a spec always has a well-defined byte range). The checks that join
 * settings which may be made in any order run at export: the range must lie inside {@code data}, and the
 * consumer's stream must belong to the spec's device.
 */
public final class TensorSpec {
    /** The most dimensions a tensor may have. */
    public static final int MAX_NDIM = Geometry.MAX_NDIM;

    private final MemorySegment data;
    // dtype, shape, strides (given or compact), byte offset and the byte range, checked
    private final Geometry geometry;
    private final Device device;
    private final Set<TensorFlag> flags; // unmodifiable
    private final long flagBits; // the flags as DLPack bits, plus IS_SUBBYTE_TYPE_PADDED for a sub-byte dtype
    private final Sync sync; // null: no synchronisation

    /** The consumer's stream and what makes the data ready on it. */
    private record Sync(ConsumerStream consumer, Consumer<ConsumerStream> producer) {}

    private TensorSpec(MemorySegment data, Geometry geometry, Device device, Set<TensorFlag> flags, Sync sync) {
        this.data = data;
        this.geometry = geometry;
        this.device = device;
        EnumSet<TensorFlag> f = flags.isEmpty() ? EnumSet.noneOf(TensorFlag.class) : EnumSet.copyOf(flags);
        if (data.isReadOnly()) {
            f.add(TensorFlag.READ_ONLY);
        }
        this.flags = Collections.unmodifiableSet(f);
        long bits = geometry.dtype().isSubByte() ? DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED : 0;
        for (TensorFlag flag : f) {
            bits |= flag.bit();
        }
        this.flagBits = bits;
        this.sync = sync;
    }

    /**
     * A compact row-major tensor of {@code dtype} and {@code shape} at the start of {@code data}, on the
     * CPU, writable (unless {@code data} is read-only), without stream synchronisation.
     *
     * @param data  native memory that holds the tensor: host memory for CPU and CUDA_HOST, or, for device
     *              memory, a segment whose address is the device pointer and whose size is the allocation's
     *              (it is never dereferenced); element {@code [0, ..., 0]} is at {@code data + byteOffset}
     * @param dtype the element type (it must pass {@link DType#check})
     * @param shape the extents, {@code 0 <= ndim <= 64}; none for a scalar
     * @return the spec; it borrows {@code data}
     * @throws UnsupportedFeatureException for a heap segment, or a dtype this library cannot lay out
     * @throws ValidationException for an invalid dtype, too many dimensions, a negative extent or an
     *         element count that overflows
     */
    public static TensorSpec of(MemorySegment data, DType dtype, long... shape) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        if (!data.isNative()) {
            throw new UnsupportedFeatureException("data", "a heap segment cannot be exported; DLPack needs native memory");
        }
        dtype.check("dtype");
        if (shape.length > Geometry.MAX_NDIM) {
            throw new ValidationException(Category.SIZE, "ndim", "expected at most " + Geometry.MAX_NDIM
                    + " dimensions but found " + shape.length);
        }
        Geometry g = Geometry.of(dtype, shape.clone(), null, 0, "");
        return new TensorSpec(data, g, Device.CPU, Set.of(), null);
    }

    /**
     * The same spec with explicit strides, in elements (not bytes); zero (broadcast) and negative strides
     * are allowed (with a negative stride, set a byte offset that keeps the elements inside {@code data}).
     *
     * @param strides one stride per dimension, in elements
     * @return a new spec; this one is unchanged
     * @throws ValidationException {@code STRUCTURE} unless there is one stride per dimension, {@code SIZE}
     *         if the byte range overflows
     */
    public TensorSpec withStrides(long... strides) {
        Objects.requireNonNull(strides, "strides");
        Geometry g = Geometry.of(geometry.dtype(), geometry.shape().clone(), strides.clone(), geometry.byteOffset(),
                "");
        return new TensorSpec(data, g, device, flags, sync);
    }

    /**
     * {@return the same spec with element {@code [0, ..., 0]} at {@code data + byteOffset}}
     *
     * @param byteOffset the byte offset of the first element
     * @throws ValidationException {@code SIZE} for a negative offset or one whose range overflows
     */
    public TensorSpec withByteOffset(long byteOffset) {
        Geometry g = Geometry.of(geometry.dtype(), geometry.shape().clone(), geometry.strides().clone(), byteOffset,
                "");
        return new TensorSpec(data, g, device, flags, sync);
    }

    /**
     * {@return the same spec for data on {@code device} (the default is {@link Device#CPU})}
     *
     * @param device the device {@code data} is on
     */
    public TensorSpec withDevice(Device device) {
        Objects.requireNonNull(device, "device");
        return new TensorSpec(data, geometry, device, flags, sync);
    }

    /**
     * The same spec with exactly these flags (none clears them; {@link TensorFlag#READ_ONLY} stays set for a
     * read-only {@code data} segment). A legacy export refuses every flag, since it cannot tell them.
     *
     * @param flags the flags to set; none clears them
     * @return a new spec; this one is unchanged
     */
    public TensorSpec withFlags(TensorFlag... flags) {
        Objects.requireNonNull(flags, "flags");
        EnumSet<TensorFlag> f = EnumSet.noneOf(TensorFlag.class);
        for (TensorFlag flag : flags) {
            f.add(Objects.requireNonNull(flag, "flags[i]"));
        }
        return new TensorSpec(data, geometry, device, f, sync);
    }

    /**
     * The same spec for data produced asynchronously: before the struct is written, export calls
     * {@code producer.accept(consumer)}, which makes the data ready on the consumer's stream as the Python
     * protocol's {@code stream} argument requires (a consumer that asked for none has
     * {@link ConsumerStream#needsSync()} {@code false}). For a CUDA producer pass
     * {@code c -> c.waitForCuda(producerStream)}. It runs on the exporting thread, once per export.
     * The caller keeps owning the streams behind both.
     *
     * @param consumer the consumer's stream, parsed with {@link ConsumerStream#of} for the spec's device (export
     *                 throws {@link ValidationException} {@code DEVICE} if the devices differ)
     * @param producer makes the data ready on the consumer's stream without blocking the host (the caller keeps
     *                 owning what it uses; thread-safe if the spec is exported on several threads)
     * @return a new spec; this one is unchanged
     */
    public TensorSpec withConsumerStream(ConsumerStream consumer, Consumer<ConsumerStream> producer) {
        Objects.requireNonNull(consumer, "consumer");
        Objects.requireNonNull(producer, "producer");
        return new TensorSpec(data, geometry, device, flags, new Sync(consumer, producer));
    }

    /** {@return the memory that holds the tensor (borrowed: the spec does not own it)} */
    public MemorySegment data() {
        return data;
    }

    /** {@return the element type} */
    public DType dtype() {
        return geometry.dtype();
    }

    /** {@return a copy of the shape} */
    public long[] shape() {
        return geometry.shape().clone();
    }

    /** {@return a copy of the strides in elements: as given, or compact row-major} */
    public long[] strides() {
        return geometry.strides().clone();
    }

    /**
     * {@return the bytes the elements span, from the lowest to past the highest (0 without elements); a
     * sub-byte element takes one byte, as this spec exports it padded}
     */
    public long byteExtent() {
        return geometry.extent();
    }

    /**
     * {@return the bytes the elements span with sub-byte elements packed, as DLPack lays them out without
     * {@code DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED} (and as a CUDA IPC tensor descriptor names them);
     * {@link #byteExtent()} for any other type}
     *
     * @throws ValidationException {@code SCHEMA} for a sub-byte type that is not compact row-major (packing needs it)
     */
    public long packedByteExtent() {
        Geometry g = geometry;
        return g.dtype().isSubByte() ? Geometry.packed(g.dtype(), g.shape(), g.strides(), g.byteOffset(), "").extent()
                : g.extent();
    }

    /**
     * {@return the bytes from {@code data + byteOffset} to the lowest element: 0, or negative where a negative
     * stride reaches below element {@code [0, ..., 0]}}
     */
    public long byteStart() {
        return geometry.start();
    }

    /** {@return bytes from {@code data} to element {@code [0, ..., 0]}} */
    public long byteOffset() {
        return geometry.byteOffset();
    }

    /** {@return the device {@code data} is on} */
    public Device device() {
        return device;
    }

    /** {@return the flags the export sets (unmodifiable); includes {@link TensorFlag#READ_ONLY} for read-only data} */
    public Set<TensorFlag> flags() {
        return flags;
    }

    /**
     * The {@code flags} field a versioned export writes: {@link #flags()} as bits, plus
     * {@code IS_SUBBYTE_TYPE_PADDED} for sub-byte types (exported padded to a byte per element).
     */
    long flagBits() {
        return flagBits;
    }

    /** {@return the consumer's stream the data is made ready on, if one was given} */
    public Optional<ConsumerStream> consumerStream() {
        return Optional.ofNullable(sync == null ? null : sync.consumer());
    }

    /**
     * The checks that join settings made in any order, run by export: the consumer's stream belongs to the
     * device, and the tensor's bytes lie inside {@code data}.
     *
     * @return the spec's geometry
     * @throws ValidationException {@code DEVICE} or {@code LENGTH}
     */
    Geometry checkedGeometry() {
        if (sync != null && !sync.consumer().device().equals(device)) {
            throw new ValidationException(Category.DEVICE, "stream", "the consumer stream belongs to "
                    + DLPack.describe(sync.consumer().device()) + " but the data lives on " + DLPack.describe(device));
        }
        Geometry g = geometry;
        long byteOffset = g.byteOffset();
        if (g.extent() > 0) {
            long first = byteOffset + g.start(); // exact: checked by Geometry
            if (first < 0 || first + g.extent() > data.byteSize()) {
                throw new ValidationException(Category.LENGTH, "data", String.format(Locale.ROOT,
                        "the tensor spans bytes [%d, %d) of data but data has %d bytes", first, first + g.extent(),
                        data.byteSize()));
            }
        } else if (byteOffset > data.byteSize()) {
            throw new ValidationException(Category.LENGTH, "byte_offset", "expected at most " + data.byteSize()
                    + " but found " + byteOffset);
        }
        return g;
    }

    /** Makes the data ready on the consumer's stream, if one was given. */
    void makeReady() {
        if (sync != null) {
            sync.producer().accept(sync.consumer());
        }
    }

    @Override
    public String toString() {
        return "TensorSpec[" + geometry.dtype() + " " + Arrays.toString(geometry.shape()) + " strides "
                + Arrays.toString(geometry.strides()) + " byte_offset " + geometry.byteOffset() + " on "
                + DLPack.describe(device) + (flags.isEmpty() ? "" : " " + flags)
                + (sync == null ? "" : " ready on " + sync.consumer()) + "]";
    }
}
