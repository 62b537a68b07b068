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


    /** Validates the {@code DLTensor} at offset {@code t} of {@code owned}, reading it in place, and wraps it. */
    static ImportedTensor wrap(ForeignImport.Kind kind, MemorySegment owned, ImportedTensor.Version version,
                               long t, long flags, boolean nullStridesAllowed, ImportOptions options,
                               Arena arena, Exports.LocalRelease local) {
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
        Device device = type == DeviceKind.CPU ? Device.CPU : new Device(type, id);
        Device expected = options.expectedDevice();
        if (expected != null && !expected.equals(device)) {
            throw new ValidationException(Category.DEVICE, "dl_tensor.device", "expected " + DLPack.describe(expected)
                    + " but found " + DLPack.describe(device));
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
        Geometry g = Geometry.of(dtype, !padded, shape, strides, byteOffset, "dl_tensor");
        long data = TensorStruct.pointer(owned, t + TensorStruct.DATA);
        if (g.extent > 0) {
            if (data == 0) {
                throw new ValidationException(Category.NULL_POINTER, "dl_tensor.data",
                        "expected a data pointer for " + g.elements + " elements but found NULL");
            }
            long first;
            long end;
            try {
                first = Math.addExact(Math.addExact(data, byteOffset), g.start);
                end = Math.addExact(first, g.extent);
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, "dl_tensor.byte_offset",
                        "data + byte_offset + extent overflows the address space");
            }
            if (first < 0 || end < 0) {
                throw new ValidationException(Category.SIZE, "dl_tensor.strides",
                        "negative strides reach below address 0");
            }
            if (options.pointerCheck() == ImportOptions.PointerCheck.DRIVER) {
                DLPackCuda.confirmPointer(device, first, g.extent);
            }
        }
        boolean readOnly = (flags & DLPack.FLAG_READ_ONLY) != 0;
        boolean copied = (flags & DLPack.FLAG_IS_COPIED) != 0;
        return ImportedTensor.create(kind, owned, local, version, dtype, device, g, byteOffset, readOnly, copied,
                padded, data, arena);
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
