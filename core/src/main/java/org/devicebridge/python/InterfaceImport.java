package org.devicebridge.python;

import static org.devicebridge.python.ArrayInterfaces.CUDA;
import static org.devicebridge.python.ArrayInterfaces.HOST;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;

/**
 * The import side of the array interfaces ({@link ArrayInterfaces}): from a checked
 * {@link InterfaceDictionary} to a zero-copy DLPack view of its memory (and of its mask), on the right device,
 * with the consumer's stream made to wait on the producer's. Stateless and thread-safe.
 */
final class InterfaceImport {
    private InterfaceImport() {}

    /**
     * Imports {@code producer}'s dictionary {@code name} (the public methods checked the arguments). After a
     * return the caller owns the array; after a throw nothing new.
     */
    static InterfaceArray importInterface(PyObjectRef producer, String name, ConsumerStream consumer,
                                          ImportOptions options) {
        InterfaceDictionary data = InterfaceDictionary.read(producer, name);
        ImportedTensor tensor = null;
        try {
            Device device = deviceOf(data, name, options);
            MemorySegment stream = sync(data, name, device, consumer);
            tensor = view(producer, data, name, device, options);
            ImportedTensor mask = data.mask() == null ? null : importMask(data, name, device, consumer, options);
            return new InterfaceArray(tensor, mask, data.version(), stream);
        } catch (RuntimeException | Error e) {
            if (tensor != null) {
                tensor.close();
            }
            throw e;
        } finally {
            if (data.mask() != null) {
                data.mask().close(); // the mask tensor, if made, holds its own reference
            }
        }
    }

    /** Imports the mask of {@code data} (not null), on {@code data}'s device and made ready on the same stream. */
    private static ImportedTensor importMask(InterfaceDictionary data, String name, Device device,
                                             ConsumerStream consumer, ImportOptions options) {
        String path = name + ".mask";
        PyObjectRef maskObject = data.mask();
        InterfaceDictionary m = InterfaceDictionary.read(maskObject, name);
        try {
            if (m.mask() != null) {
                throw new UnsupportedFeatureException(path + ".mask", "a mask with its own mask is not supported");
            }
            DType t = m.dtype();
            if (t.code() != DType.KDL_BOOL && t.code() != DType.KDL_INT && t.code() != DType.KDL_UINT) {
                throw new UnsupportedFeatureException(path + ".typestr", "expected a bool or integer mask but found "
                        + InterfaceTypes.typestrOf(t, path));
            }
            checkBroadcastable(m.shape(), data.shape(), path + ".shape");
            Device maskDevice = device;
            if (name.equals(CUDA) && options.expectedDevice() == null && m.pointer() != 0) {
                maskDevice = deviceOf(m, path, options);
            }
            if (!maskDevice.equals(device)) {
                throw new ValidationException(Category.DEVICE, path, "expected the mask on " + device.kind() + ":"
                        + device.ordinal() + " like the data but found " + maskDevice.kind() + ":" + maskDevice.ordinal());
            }
            sync(m, path, device, consumer);
            return view(maskObject, m, path, device, options);
        } finally {
            if (m.mask() != null) {
                m.mask().close();
            }
        }
    }

    /** NumPy broadcasting: aligned from the last dimension, each mask extent 1 or equal; no more dimensions. */
    private static void checkBroadcastable(long[] mask, long[] data, String path) {
        boolean ok = mask.length <= data.length;
        for (int i = 1; ok && i <= mask.length; i++) {
            long m = mask[mask.length - i];
            ok = m == 1 || m == data[data.length - i];
        }
        if (!ok) {
            throw new ValidationException(Category.LENGTH, path, "expected a mask shape broadcastable to "
                    + Arrays.toString(data) + " but found " + Arrays.toString(mask));
        }
    }


    /** The device the data is labelled with: the expected one, CPU for host data, else the driver's answer. */
    private static Device deviceOf(InterfaceDictionary data, String path, ImportOptions options) {
        Device expected = options.expectedDevice();
        if (expected != null) {
            return expected;
        }
        if (path.startsWith(HOST)) {
            return Device.CPU;
        }
        if (data.pointer() == 0) {
            return Device.cuda(0); // an empty array: nothing to find
        }
        PointerAttributes a = PointerAttributes.of(data.pointer());
        int ordinal = Math.max(0, a.deviceOrdinal());
        return switch (a.kind()) {
            case CUDA -> a.managed() ? new Device(DeviceKind.CUDA_MANAGED, ordinal) : Device.cuda(ordinal);
            case CUDA_MANAGED -> new Device(DeviceKind.CUDA_MANAGED, ordinal);
            case CUDA_HOST -> Device.cudaHost(ordinal);
            default -> throw new ValidationException(Category.DEVICE, path + ".data[0]", "expected memory the GPU can"
                    + " reach (device, pinned or managed) but found " + a.kind() + " memory at 0x"
                    + Long.toHexString(data.pointer()));
        };
    }

    /** Makes {@code consumer} wait on the producer's stream (v3 semantics); returns that stream, or null. */
    private static MemorySegment sync(InterfaceDictionary data, String path, Device device, ConsumerStream consumer) {
        if (data.stream() == null) {
            return null;
        }
        MemorySegment producerStream = MemorySegment.ofAddress(data.stream());
        if (consumer.needsSync()) {
            if (!consumer.device().equals(device)) {
                throw new ValidationException(Category.DEVICE, path + ".stream", "the consumer stream belongs to "
                        + consumer.device().kind() + ":" + consumer.device().ordinal() + " but the data lives on "
                        + device.kind() + ":" + device.ordinal());
            }
            consumer.waitForCuda(producerStream);
        }
        return producerStream;
    }

    /** Describes the memory as a DLPack tensor (the checks of a DLPack export and import run) and imports it. */
    private static ImportedTensor view(PyObjectRef producer, InterfaceDictionary data, String path, Device device,
                                       ImportOptions options) {
        String p = path + ".";
        int ndim = data.shape().length;
        int itemSize = data.dtype().bits() / 8;
        long[] elementStrides = null;
        if (data.byteStrides() != null) {
            if (data.byteStrides().length != ndim) {
                throw new ValidationException(Category.STRUCTURE, p + "strides", "expected " + ndim
                        + " strides (one per dimension) but found " + data.byteStrides().length);
            }
            elementStrides = new long[ndim];
            for (int i = 0; i < ndim; i++) {
                if (data.byteStrides()[i] % itemSize != 0) {
                    throw new UnsupportedFeatureException(p + "strides[" + i + "]", "byte stride " + data.byteStrides()[i]
                            + " is not a multiple of the item size " + itemSize + " (DLPack strides count elements)");
                }
                elementStrides[i] = data.byteStrides()[i] / itemSize;
            }
        }
        for (int i = 0; i < ndim; i++) {
            if (data.shape()[i] < 0) {
                throw new ValidationException(Category.SIZE, p + "shape[" + i + "]", "expected an extent >= 0 but found "
                        + data.shape()[i]);
            }
        }
        if (data.offset() < 0) {
            throw new ValidationException(Category.SIZE, p + "offset", "expected an offset >= 0 but found " + data.offset());
        }
        ByteRange r = ByteRange.of(data.shape(), data.byteStrides(), itemSize, p + "strides");
        long origin;
        try {
            origin = Math.addExact(data.pointer(), data.offset());
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, p + "offset", "data[0] + offset overflows the address space");
        }
        MemorySegment segment;
        long byteOffset;
        if (r.extent() == 0) {
            segment = MemorySegment.ofAddress(origin);
            byteOffset = 0;
        } else {
            if (data.pointer() == 0) {
                throw new ValidationException(Category.NULL_POINTER, p + "data[0]", "expected a data pointer for "
                        + "a non-empty array but found NULL");
            }
            long first = origin + r.low(); // r.low() <= 0
            if (first < 0 || first > Long.MAX_VALUE - r.extent()) {
                throw new ValidationException(Category.SIZE, p + "strides", "the array's bytes reach outside the address space");
            }
            segment = MemorySegment.ofAddress(first).reinterpret(r.extent()); // sized from the checked range
            byteOffset = -r.low();
        }
        TensorSpec spec = TensorSpec.of(segment, data.dtype(), data.shape()).withByteOffset(byteOffset).withDevice(device);
        if (elementStrides != null) {
            spec = spec.withStrides(elementStrides);
        }
        if (data.readOnly()) {
            spec = spec.withFlags(TensorFlag.READ_ONLY);
        }
        PyObjectRef owner = producer.newReference();
        org.devicebridge.dlpack.ExportedTensor exported;
        try {
            exported = DLPack.exportVersioned(spec, owner);
        } catch (RuntimeException | Error e) {
            owner.close();
            throw e;
        }
        return DLPack.importTensor(exported, options); // closes owner on a throw
    }
}
