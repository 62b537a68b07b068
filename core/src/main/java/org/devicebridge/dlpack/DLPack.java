package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.dlpack.dlpack_h;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.ForeignImport;
import org.devicebridge.internal.Native;

/**
 * DLPack export and import (DLPack 1.3, {@code DLManagedTensorVersioned} and the legacy
 * {@code DLManagedTensor}).
 *
 * {@snippet lang=c :
 * typedef struct DLManagedTensorVersioned {
 *   DLPackVersion version;
 *   void* manager_ctx;
 *   void (*deleter)(struct DLManagedTensorVersioned* self);
 *   uint64_t flags;
 *   DLTensor dl_tensor;
 * } DLManagedTensorVersioned;
 * }
 */
public final class DLPack {
    /** The DLPack ABI version this library implements ({@code DLPACK_MAJOR_VERSION} of the header). */
    public static final int MAJOR_VERSION = dlpack_h.DLPACK_MAJOR_VERSION();
    /** {@code DLPACK_MINOR_VERSION} of the header. */
    public static final int MINOR_VERSION = dlpack_h.DLPACK_MINOR_VERSION();

    /** {@code DLPACK_FLAG_BITMASK_READ_ONLY}. */
    public static final long FLAG_READ_ONLY = dlpack_h.DLPACK_FLAG_BITMASK_READ_ONLY();
    /** {@code DLPACK_FLAG_BITMASK_IS_COPIED}. */
    public static final long FLAG_IS_COPIED = dlpack_h.DLPACK_FLAG_BITMASK_IS_COPIED();
    /** {@code DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED}. */
    public static final long FLAG_IS_SUBBYTE_TYPE_PADDED = dlpack_h.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED();
    private static final long KNOWN_FLAGS = FLAG_READ_ONLY | FLAG_IS_COPIED | FLAG_IS_SUBBYTE_TYPE_PADDED;

    private DLPack() {}

    // ------------------------------------------------------------------------------------------ export

    /**
     * Exports {@code data} as a {@code DLManagedTensorVersioned} (version 1.3) without copying.
     * {@code IS_COPIED} is never set (nothing is copied), {@code READ_ONLY} is set when {@code readOnly}, and
     * sub-byte types are exported padded to a byte per element ({@code IS_SUBBYTE_TYPE_PADDED}).
     *
     * @param data       native memory that holds the tensor: host memory for CPU and CUDA_HOST, or, for device
     *                   memory, a segment whose address is the device pointer and whose size is the allocation's
     *                   (it is never dereferenced); element {@code [0, ..., 0]} is at {@code data + byteOffset}
     * @param dtype      element type (must pass {@link DType#check})
     * @param shape      extents, {@code 0 <= ndim <= 64}
     * @param strides    strides in elements, or {@code null} for compact row-major; negative and zero allowed
     * @param byteOffset bytes from {@code data} to element {@code [0, ..., 0]}
     * @param device     where {@code data} lives
     * @param readOnly   whether the consumer must not write (forced on when {@code data} is a read-only segment)
     * @param owner      closed by the deleter (keeps {@code data} alive until the consumer is done); may be null
     * @return a live handle; after a return the handle owns the struct and {@code owner} (closing it, or the
     *         consumer's deleter call after {@link ExportedTensor#transferOwnership()}, closes {@code owner}).
     *         After a throw nothing was exported and the caller still owns {@code owner}.
     * @throws ValidationException if shape, strides or offset are inconsistent or reach outside {@code data}
     * @throws UnsupportedFeatureException for a dtype this library cannot lay out or a heap segment
     */
    public static ExportedTensor exportVersioned(MemorySegment data, DType dtype, long[] shape, long[] strides,
                                                 long byteOffset, Device device, boolean readOnly, AutoCloseable owner) {
        return export(true, data, dtype, shape, strides, byteOffset, device, readOnly, owner);
    }

    /**
     * Like {@link #exportVersioned(MemorySegment, DType, long[], long[], long, Device, boolean, AutoCloseable)},
     * for data produced asynchronously: first {@code producer} makes the data ready on the consumer's stream
     * (as the Python protocol's {@code stream} argument requires; nothing happens for
     * {@link ConsumerStream.Kind#NO_SYNC}), then the tensor is exported. Ownership as in the other overload;
     * a throw from the synchronisation leaves nothing exported.
     *
     * @param consumer the consumer's stream, parsed with {@link ConsumerStream#of} for {@code device}
     * @throws ValidationException {@code DEVICE} if {@code consumer} was parsed for another device
     */
    public static ExportedTensor exportVersioned(MemorySegment data, DType dtype, long[] shape, long[] strides,
                                                 long byteOffset, Device device, boolean readOnly, AutoCloseable owner,
                                                 StreamSynchronizer producer, ConsumerStream consumer) {
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(consumer, "consumer");
        Objects.requireNonNull(device, "device");
        if (!consumer.device().equals(device)) {
            throw new ValidationException(Category.DEVICE, "stream", "the consumer stream belongs to "
                    + describe(consumer.device()) + " but the data lives on " + describe(device));
        }
        producer.makeReady(consumer);
        return export(true, data, dtype, shape, strides, byteOffset, device, readOnly, owner);
    }

    /**
     * Exports {@code data} as a legacy {@code DLManagedTensor} (no version, no flags: a legacy consumer
     * assumes it may write) for consumers that do not speak DLPack 1.x. Parameters and ownership as in
     * {@link #exportVersioned}; strides are always written (never NULL).
     */
    public static ExportedTensor exportLegacy(MemorySegment data, DType dtype, long[] shape, long[] strides,
                                              long byteOffset, Device device, AutoCloseable owner) {
        return export(false, data, dtype, shape, strides, byteOffset, device, false, owner);
    }

    private static ExportedTensor export(boolean versioned, MemorySegment data, DType dtype, long[] shape,
                                         long[] strides, long byteOffset, Device device, boolean readOnly,
                                         AutoCloseable owner) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(device, "device");
        if (!data.isNative()) {
            throw new UnsupportedFeatureException("data", "a heap segment cannot be exported; DLPack needs native memory");
        }
        dtype.check("dtype");
        if (!versioned && data.isReadOnly()) {
            throw new UnsupportedFeatureException("data", "a read-only segment cannot be exported as a legacy "
                    + "DLManagedTensor (no READ_ONLY flag); use exportVersioned");
        }
        readOnly |= data.isReadOnly(); // the flag must tell the truth
        if (!versioned && dtype.isSubByte()) {
            // a legacy consumer cannot be told that sub-byte elements are padded
            throw new UnsupportedFeatureException("dtype", "sub-byte type " + dtype
                    + " cannot be exported as a legacy DLManagedTensor (no padding flag); use exportVersioned");
        }
        if (shape.length > Geometry.MAX_NDIM) {
            throw new ValidationException(Category.SIZE, "ndim", "expected at most " + Geometry.MAX_NDIM
                    + " dimensions but found " + shape.length);
        }
        long[] shapeCopy = shape.clone();
        long[] stridesCopy = strides == null ? null : strides.clone();
        Geometry g = Geometry.of(dtype, false, shapeCopy, stridesCopy, byteOffset, "");
        if (g.extent > 0) {
            long first = byteOffset + g.start; // exact: checked by Geometry
            if (first < 0 || first + g.extent > data.byteSize()) {
                throw new ValidationException(Category.LENGTH, "data", String.format(java.util.Locale.ROOT,
                        "the tensor spans bytes [%d, %d) of data but data has %d bytes", first, first + g.extent,
                        data.byteSize()));
            }
        } else if (byteOffset > data.byteSize()) {
            throw new ValidationException(Category.LENGTH, "byte_offset", "expected at most " + data.byteSize()
                    + " but found " + byteOffset);
        }
        int ndim = shapeCopy.length;
        long header = versioned ? DLManagedTensorVersioned.sizeof() : DLManagedTensor.sizeof();
        long block = header + 16L * ndim;
        MemorySegment m = Native.calloc(block);
        MemorySegment shapePtr = m.asSlice(header, 8L * ndim);
        MemorySegment stridesPtr = m.asSlice(header + 8L * ndim, 8L * ndim);
        for (int i = 0; i < ndim; i++) {
            shapePtr.setAtIndex(ValueLayout.JAVA_LONG, i, shapeCopy[i]);
            stridesPtr.setAtIndex(ValueLayout.JAVA_LONG, i, g.strides[i]);
        }
        MemorySegment t = versioned ? DLManagedTensorVersioned.dl_tensor(m) : DLManagedTensor.dl_tensor(m);
        DLTensor.data(t, MemorySegment.ofAddress(data.address()));
        MemorySegment dev = DLTensor.device(t);
        DLDevice.device_type(dev, device.type().code());
        DLDevice.device_id(dev, device.id());
        DLTensor.ndim(t, ndim);
        MemorySegment dt = DLTensor.dtype(t);
        DLDataType.code(dt, (byte) dtype.code());
        DLDataType.bits(dt, (byte) dtype.bits());
        DLDataType.lanes(dt, (short) dtype.lanes());
        DLTensor.shape(t, ndim == 0 ? MemorySegment.NULL : shapePtr);
        DLTensor.strides(t, ndim == 0 ? MemorySegment.NULL : stridesPtr);
        DLTensor.byte_offset(t, byteOffset);
        long key = Exports.REGISTRY.register(new Exports.State(m, owner,
                versioned ? "DLManagedTensorVersioned" : "DLManagedTensor"));
        if (versioned) {
            MemorySegment v = DLManagedTensorVersioned.version(m);
            DLPackVersion.major(v, MAJOR_VERSION);
            DLPackVersion.minor(v, MINOR_VERSION);
            DLManagedTensorVersioned.manager_ctx(m, MemorySegment.ofAddress(key));
            DLManagedTensorVersioned.deleter(m, Exports.DELETE_VERSIONED);
            DLManagedTensorVersioned.flags(m, (readOnly ? FLAG_READ_ONLY : 0)
                    | (dtype.isSubByte() ? FLAG_IS_SUBBYTE_TYPE_PADDED : 0));
        } else {
            DLManagedTensor.manager_ctx(m, MemorySegment.ofAddress(key));
            DLManagedTensor.deleter(m, Exports.DELETE_LEGACY);
        }
        return new ExportedTensor(m, key, versioned);
    }

    // ------------------------------------------------------------------------------------------ import

    /**
     * Imports a {@code DLManagedTensorVersioned} produced by native code. The version is checked first: a
     * major version other than 1 is rejected after calling the deleter, without reading any other field.
     * Then flags, device (against {@code options}), dtype, ndim, shape, strides (NULL strides are accepted
     * only for ndim 0, or for producers older than 1.2) and byte offset are validated with exact arithmetic.
     *
     * @param tensor  the struct's address
     * @param options what the caller expects (device)
     * @return a handle that owns the tensor and calls its deleter exactly once when closed. After a return the
     *         handle owns the tensor; after a throw the deleter has already been called (except for a NULL
     *         pointer, which owns nothing).
     * @throws ValidationException for any malformed field (category and field path say which)
     * @throws UnsupportedFeatureException for a valid tensor this library cannot represent (e.g. lanes != 1)
     */
    public static ImportedTensor importVersioned(MemorySegment tensor, ImportOptions options) {
        Objects.requireNonNull(options, "options");
        return ForeignImport.take(ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, tensor, owned -> {
            MemorySegment v = DLManagedTensorVersioned.version(owned);
            int major = DLPackVersion.major(v);
            int minor = DLPackVersion.minor(v);
            if (major != MAJOR_VERSION) {
                throw new ValidationException(Category.VERSION, "version.major", String.format(java.util.Locale.ROOT,
                        "expected DLPack major version %d but found %s.%s", MAJOR_VERSION,
                        Integer.toUnsignedString(major), Integer.toUnsignedString(minor)));
            }
            long flags = DLManagedTensorVersioned.flags(owned);
            if ((flags & ~KNOWN_FLAGS) != 0) {
                throw new ValidationException(Category.SCHEMA, "flags", String.format(java.util.Locale.ROOT,
                        "unknown flag bits 0x%x (DLPack 1.%d defines 0x%x)", flags & ~KNOWN_FLAGS, MINOR_VERSION, KNOWN_FLAGS));
            }
            boolean nullStridesAllowed = Integer.compareUnsigned(minor, 2) < 0;
            return wrap(ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, owned, new ImportedTensor.Version(major, minor),
                    DLManagedTensorVersioned.dl_tensor(owned), flags, nullStridesAllowed, options);
        });
    }

    /**
     * Imports a legacy {@code DLManagedTensor} produced by native code (no version, no flags: writable, NULL
     * strides mean compact row-major, sub-byte types packed). Validation and ownership as in
     * {@link #importVersioned}: after a return the handle owns the tensor; after a throw its deleter has
     * already been called (except for a NULL pointer).
     */
    public static ImportedTensor importLegacy(MemorySegment tensor, ImportOptions options) {
        Objects.requireNonNull(options, "options");
        return ForeignImport.take(ForeignImport.Kind.DL_MANAGED_TENSOR, tensor, owned ->
                wrap(ForeignImport.Kind.DL_MANAGED_TENSOR, owned, null, DLManagedTensor.dl_tensor(owned), 0, true, options));
    }

    /**
     * Imports a tensor this library exported, as a consumer would: {@code exported} is transferred first
     * (it becomes CONSUMED), then imported. After a return the result owns the tensor; after a throw its
     * deleter has been called.
     */
    public static ImportedTensor importTensor(ExportedTensor exported, ImportOptions options) {
        Objects.requireNonNull(exported, "exported");
        Objects.requireNonNull(options, "options");
        boolean versioned = exported.isVersioned();
        MemorySegment p = exported.transferOwnership();
        return versioned ? importVersioned(p, options) : importLegacy(p, options);
    }

    private static ImportedTensor wrap(ForeignImport.Kind kind, MemorySegment owned, ImportedTensor.Version version,
                                       MemorySegment t, long flags, boolean nullStridesAllowed, ImportOptions options) {
        MemorySegment dev = DLTensor.device(t);
        int typeCode = DLDevice.device_type(dev);
        int id = DLDevice.device_id(dev);
        DeviceType type = DeviceType.of(typeCode);
        if (type == null) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device.device_type",
                    "unknown DLDeviceType " + typeCode);
        }
        if (id < 0 || (type == DeviceType.CPU && id != 0)) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device.device_id", "expected "
                    + (type == DeviceType.CPU ? "device id 0 for kDLCPU" : "a device id >= 0") + " but found " + id);
        }
        Device device = new Device(type, id);
        if (options.expectedDevice() != null && !options.expectedDevice().equals(device)) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device", "expected " + describe(options.expectedDevice())
                    + " but found " + describe(device));
        }
        MemorySegment dtSeg = DLTensor.dtype(t);
        DType dtype = new DType(Byte.toUnsignedInt(DLDataType.code(dtSeg)), Byte.toUnsignedInt(DLDataType.bits(dtSeg)),
                Short.toUnsignedInt(DLDataType.lanes(dtSeg)));
        dtype.check("dl_tensor.dtype");
        boolean padded = (flags & FLAG_IS_SUBBYTE_TYPE_PADDED) != 0;
        if (padded && !dtype.isSubByte()) {
            throw new ValidationException(Category.SCHEMA, "flags", "IS_SUBBYTE_TYPE_PADDED is set but " + dtype
                    + " is not a sub-byte type");
        }
        int ndim = DLTensor.ndim(t);
        if (ndim < 0 || ndim > Geometry.MAX_NDIM) {
            throw new ValidationException(Category.SIZE, "dl_tensor.ndim", "expected 0.." + Geometry.MAX_NDIM
                    + " dimensions but found " + ndim);
        }
        long[] shape = readLongs(DLTensor.shape(t), ndim, "dl_tensor.shape");
        MemorySegment stridesPtr = DLTensor.strides(t);
        if (stridesPtr.equals(MemorySegment.NULL) && ndim != 0 && !nullStridesAllowed) {
            throw new ValidationException(Category.NULL_POINTER, "dl_tensor.strides",
                    "expected strides (DLPack >= 1.2 forbids NULL strides when ndim != 0) but found NULL");
        }
        long[] strides = stridesPtr.equals(MemorySegment.NULL) ? null : readLongs(stridesPtr, ndim, "dl_tensor.strides");
        long byteOffset = DLTensor.byte_offset(t);
        Geometry g = Geometry.of(dtype, !padded, shape, strides, byteOffset, "dl_tensor");
        MemorySegment data = DLTensor.data(t);
        if (g.extent > 0) {
            if (data.equals(MemorySegment.NULL)) {
                throw new ValidationException(Category.NULL_POINTER, "dl_tensor.data",
                        "expected a data pointer for " + g.elements + " elements but found NULL");
            }
            long first;
            long end;
            try {
                first = Math.addExact(Math.addExact(data.address(), byteOffset), g.start);
                end = Math.addExact(first, g.extent);
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, "dl_tensor.byte_offset",
                        "data + byte_offset + extent overflows the address space");
            }
            if (first < 0 || end < 0) {
                throw new ValidationException(Category.SIZE, "dl_tensor.strides",
                        "negative strides reach below address 0");
            }
        }
        boolean readOnly = (flags & FLAG_READ_ONLY) != 0;
        boolean copied = (flags & FLAG_IS_COPIED) != 0;
        return ImportedTensor.create(kind, owned, version, dtype, device, g, byteOffset, readOnly, copied, padded, data);
    }

    private static long[] readLongs(MemorySegment p, int n, String path) {
        if (n == 0) {
            return new long[0];
        }
        if (p.equals(MemorySegment.NULL)) {
            throw new ValidationException(Category.NULL_POINTER, path, "expected " + n + " values but found NULL");
        }
        if (p.address() % 8 != 0) {
            throw new ValidationException(Category.ALIGNMENT, path, "expected an 8-byte aligned int64 array but found address 0x"
                    + Long.toHexString(p.address()));
        }
        return p.reinterpret(8L * n).toArray(ValueLayout.JAVA_LONG);
    }

    static String describe(Device d) {
        return d.type() + ":" + d.id();
    }
}
