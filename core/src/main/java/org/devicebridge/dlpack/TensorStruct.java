package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;

/**
 * Where each field of the two managed tensor structs lies, from the generated layouts, so that export and
 * import read and write a struct in place: no slice per nested struct, and pointers read with the plain
 * {@link ValueLayout#ADDRESS} (the generated pointer layouts carry a target layout whose size lookup costs
 * an {@code Optional} per read). The one home of these offsets for the export, the import and the deleters.
 *
 * {@snippet lang=c :
 * typedef struct {
 *   void* data;
 *   DLDevice device;        // { DLDeviceType device_type; int32_t device_id; }
 *   int32_t ndim;
 *   DLDataType dtype;       // { uint8_t code; uint8_t bits; uint16_t lanes; }
 *   int64_t* shape;
 *   int64_t* strides;
 *   uint64_t byte_offset;
 * } DLTensor;
 * }
 */
final class TensorStruct {
    /** Bytes of the versioned and the legacy struct. */
    static final long VERSIONED_SIZE = DLManagedTensorVersioned.sizeof();
    static final long LEGACY_SIZE = DLManagedTensor.sizeof();

    /** Offsets in {@code DLManagedTensorVersioned}. */
    static final long V_MAJOR = DLManagedTensorVersioned.version$offset() + DLPackVersion.major$offset();
    static final long V_MINOR = DLManagedTensorVersioned.version$offset() + DLPackVersion.minor$offset();
    static final long V_MANAGER_CTX = DLManagedTensorVersioned.manager_ctx$offset();
    static final long V_DELETER = DLManagedTensorVersioned.deleter$offset();
    static final long V_FLAGS = DLManagedTensorVersioned.flags$offset();
    static final long V_TENSOR = DLManagedTensorVersioned.dl_tensor$offset();

    /** Offsets in the legacy {@code DLManagedTensor}. */
    static final long L_MANAGER_CTX = DLManagedTensor.manager_ctx$offset();
    static final long L_DELETER = DLManagedTensor.deleter$offset();
    static final long L_TENSOR = DLManagedTensor.dl_tensor$offset();

    /** Offsets in {@code DLTensor}. */
    static final long DATA = DLTensor.data$offset();
    static final long DEVICE_TYPE = DLTensor.device$offset() + DLDevice.device_type$offset();
    static final long DEVICE_ID = DLTensor.device$offset() + DLDevice.device_id$offset();
    static final long NDIM = DLTensor.ndim$offset();
    static final long CODE = DLTensor.dtype$offset() + DLDataType.code$offset();
    static final long BITS = DLTensor.dtype$offset() + DLDataType.bits$offset();
    static final long LANES = DLTensor.dtype$offset() + DLDataType.lanes$offset();
    static final long SHAPE = DLTensor.shape$offset();
    static final long STRIDES = DLTensor.strides$offset();
    static final long BYTE_OFFSET = DLTensor.byte_offset$offset();

    private TensorStruct() {}

    /** The pointer at {@code offset} of {@code s}, as an address (0 for NULL). */
    static long pointer(MemorySegment s, long offset) {
        return s.get(ValueLayout.ADDRESS, offset).address();
    }

    /** Writes the address {@code address} as the pointer at {@code offset} of {@code s}. */
    static void pointer(MemorySegment s, long offset, long address) {
        s.set(ValueLayout.ADDRESS, offset, MemorySegment.ofAddress(address));
    }
}
