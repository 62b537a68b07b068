package org.devicebridge.dlpack;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ForeignImport;

/**
 * The import side of {@link DLPack} once a struct is taken: validates a {@code DLTensor} in place (device,
 * dtype, shape, strides, the data range) and wraps it as an {@link ImportedTensor}.
 */
final class TensorReader {
    private TensorReader() {}


    /**
     * Validates the struct {@code owned} holds, of {@code kind} (a {@code DLManagedTensorVersioned}'s version and
     * flags first, then its {@code DLTensor}, read in place) and wraps it. After a return the handle owns
     * {@code owned}; after a throw the caller still does (it releases it).
     *
     * @param local null for a foreign tensor, else what is left to release of one this library exported
     *              ({@link ImportedTensor#create})
     */
    static ImportedTensor wrap(ForeignImport.Kind kind, MemorySegment owned, ImportOptions options, Arena arena,
                               Exports.LocalRelease local) {
        long flags = 0;
        long t = TensorStruct.L_TENSOR;
        // NULL strides with ndim != 0: compact row-major before DLPack 1.2 (and in a legacy struct), refused since
        boolean nullStridesAllowed = true;
        if (kind == ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED) {
            int major = owned.get(ValueLayout.JAVA_INT, TensorStruct.V_MAJOR);
            int minor = owned.get(ValueLayout.JAVA_INT, TensorStruct.V_MINOR);
            if (major != DLPack.MAJOR_VERSION) {
                throw new ValidationException(Category.VERSION, "version.major", String.format(java.util.Locale.ROOT,
                        "expected DLPack major version %d but found %s.%s", DLPack.MAJOR_VERSION,
                        Integer.toUnsignedString(major), Integer.toUnsignedString(minor)));
            }
            flags = owned.get(ValueLayout.JAVA_LONG, TensorStruct.V_FLAGS);
            if ((flags & ~DLPack.KNOWN_FLAGS) != 0) {
                throw new ValidationException(Category.SCHEMA, "flags", String.format(java.util.Locale.ROOT,
                        "unknown flag bits 0x%x (DLPack 1.%d defines 0x%x)", flags & ~DLPack.KNOWN_FLAGS,
                        DLPack.MINOR_VERSION, DLPack.KNOWN_FLAGS));
            }
            nullStridesAllowed = Integer.compareUnsigned(minor, 2) < 0;
            t = TensorStruct.V_TENSOR;
        }
        int typeCode = owned.get(ValueLayout.JAVA_INT, t + TensorStruct.DEVICE_TYPE);
        int id = owned.get(ValueLayout.JAVA_INT, t + TensorStruct.DEVICE_ID);
        DeviceKind type = DeviceKind.fromCode(typeCode).orElse(null);
        if (type == null) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device.device_type",
                    "unknown DLDeviceType " + typeCode);
        }
        if (id < 0 || (type == DeviceKind.CPU && id != 0)) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device.device_id", "expected "
                    + (type == DeviceKind.CPU ? "device id 0 for kDLCPU" : "a device id >= 0") + " but found " + id);
        }
        // the handle makes the Device; here it is made only for a message or the driver's check
        Device expected = options.expectedDevice();
        if (expected != null && (expected.kind() != type || expected.ordinal() != id)) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device", "expected " + DLPack.describe(expected)
                    + " but found " + DLPack.describe(device(type, id)));
        }
        DType dtype = DType.of(Byte.toUnsignedInt(owned.get(ValueLayout.JAVA_BYTE, t + TensorStruct.CODE)),
                Byte.toUnsignedInt(owned.get(ValueLayout.JAVA_BYTE, t + TensorStruct.BITS)),
                Short.toUnsignedInt(owned.get(ValueLayout.JAVA_SHORT, t + TensorStruct.LANES)), "dl_tensor.dtype");
        boolean padded = (flags & DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED) != 0;
        if (padded && !dtype.isSubByte()) {
            throw new ValidationException(Category.SCHEMA, "flags", "IS_SUBBYTE_TYPE_PADDED is set but " + dtype
                    + " is not a sub-byte type");
        }
        int ndim = owned.get(ValueLayout.JAVA_INT, t + TensorStruct.NDIM);
        if (ndim < 0 || ndim > Geometry.MAX_NDIM) {
            throw new ValidationException(Category.SIZE, "dl_tensor.ndim", "expected 0.." + Geometry.MAX_NDIM
                    + " dimensions but found " + ndim);
        }
        long[] shape = readLongs(TensorStruct.pointer(owned, t + TensorStruct.SHAPE), ndim, "dl_tensor.shape");
        long stridesPtr = TensorStruct.pointer(owned, t + TensorStruct.STRIDES);
        if (stridesPtr == 0 && ndim != 0 && !nullStridesAllowed) {
            throw new ValidationException(Category.NULL_POINTER, "dl_tensor.strides",
                    "expected strides (DLPack >= 1.2 forbids NULL strides when ndim != 0) but found NULL");
        }
        long[] strides = stridesPtr == 0 ? null : readLongs(stridesPtr, ndim, "dl_tensor.strides");
        long byteOffset = owned.get(ValueLayout.JAVA_LONG, t + TensorStruct.BYTE_OFFSET);
        Geometry g = padded ? Geometry.of(dtype, shape, strides, byteOffset, "dl_tensor")
                : Geometry.packed(dtype, shape, strides, byteOffset, "dl_tensor");
        long data = TensorStruct.pointer(owned, t + TensorStruct.DATA);
        if (g.extent() > 0) {
            if (data == 0) {
                throw new ValidationException(Category.NULL_POINTER, "dl_tensor.data",
                        "expected a data pointer for " + g.elements() + " elements but found NULL");
            }
            long first;
            long end;
            try {
                first = Math.addExact(Math.addExact(data, byteOffset), g.start());
                end = Math.addExact(first, g.extent());
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, "dl_tensor.byte_offset",
                        "data + byte_offset + extent overflows the address space");
            }
            if (first < 0 || end < 0) {
                throw new ValidationException(Category.SIZE, "dl_tensor.strides",
                        "negative strides reach below address 0");
            }
            if (options.pointerCheck() == ImportOptions.PointerCheck.DRIVER) {
                DLPackCuda.confirmPointer(device(type, id), first, g.extent());
            }
        }
        return ImportedTensor.create(kind, owned, local, g, arena);
    }

    private static Device device(DeviceKind type, int id) {
        return type == DeviceKind.CPU ? Device.CPU : new Device(type, id);
    }

    /** The {@code n} int64 values at {@code address}, checked for NULL and alignment first. */
    private static long[] readLongs(long address, int n, String path) {
        if (n == 0) {
            return new long[0];
        }
        if (address == 0) {
            throw new ValidationException(Category.NULL_POINTER, path, "expected " + n + " values but found NULL");
        }
        if (address % 8 != 0) {
            throw new ValidationException(Category.ALIGNMENT, path, "expected an 8-byte aligned int64 array but found address 0x"
                    + Long.toHexString(address));
        }
        MemorySegment s = MemorySegment.ofAddress(address).reinterpret(8L * n);
        long[] values = new long[n];
        for (int i = 0; i < n; i++) { // a few values: a loop beats a bulk copy's setup
            values[i] = s.getAtIndex(ValueLayout.JAVA_LONG, i);
        }
        return values;
    }
}
