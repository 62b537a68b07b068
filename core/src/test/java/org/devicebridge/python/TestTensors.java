package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.Native;

/**
 * A tiny test-local DLPack producer: tensors whose deleter is a counting Java upcall, so tests can assert
 * that every export is deleted exactly once. The real DLPack API replaces it later.
 */
final class TestTensors {
    static final AtomicInteger DELETES = new AtomicInteger();
    /** Deleter calls per live tensor's struct address (reset when a tensor is made there): 2 is a double delete. */
    static final Map<Long, Integer> DELETES_BY_ADDRESS = new ConcurrentHashMap<>();

    private static final MemorySegment DELETER = Native.upcallStub(MethodHandles.lookup(), TestTensors.class,
            "deleteLegacy", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MemorySegment DELETER_VERSIONED = Native.upcallStub(MethodHandles.lookup(), TestTensors.class,
            "deleteVersioned", FunctionDescriptor.ofVoid(ADDRESS));

    private TestTensors() {}

    /**
     * A float32 tensor of {@code shape} over {@code data} (not owned when {@code ownsData} is false),
     * on device {@code (deviceType, deviceId)}. The struct and its shape array are one calloc'd block.
     */
    static MemorySegment tensor(boolean versioned, MemorySegment data, boolean ownsData, long[] shape,
                                int deviceType, int deviceId, boolean readOnly) {
        long structSize = versioned ? DLManagedTensorVersioned.sizeof() : DLManagedTensor.sizeof();
        MemorySegment block = Native.calloc(structSize + 8L * shape.length);
        // malloc reuses the address of a deleted tensor: the count belongs to the tensor, not the address
        DELETES_BY_ADDRESS.remove(block.address());
        MemorySegment shapeArray = block.asSlice(structSize);
        for (int i = 0; i < shape.length; i++) {
            shapeArray.setAtIndex(JAVA_LONG, i, shape[i]);
        }
        MemorySegment t;
        if (versioned) {
            MemorySegment v = DLManagedTensorVersioned.version(block);
            DLPackVersion.major(v, 1);
            DLPackVersion.minor(v, 0);
            DLManagedTensorVersioned.manager_ctx(block, ownsData ? data : MemorySegment.NULL);
            DLManagedTensorVersioned.deleter(block, DELETER_VERSIONED);
            DLManagedTensorVersioned.flags(block, readOnly ? 1L : 0L);
            t = DLManagedTensorVersioned.dl_tensor(block);
        } else {
            DLManagedTensor.manager_ctx(block, ownsData ? data : MemorySegment.NULL);
            DLManagedTensor.deleter(block, DELETER);
            t = DLManagedTensor.dl_tensor(block);
        }
        DLTensor.data(t, data);
        MemorySegment dev = DLTensor.device(t);
        DLDevice.device_type(dev, deviceType);
        DLDevice.device_id(dev, deviceId);
        DLTensor.ndim(t, shape.length);
        MemorySegment dt = DLTensor.dtype(t);
        DLDataType.code(dt, (byte) 2); // kDLFloat
        DLDataType.bits(dt, (byte) 32);
        DLDataType.lanes(dt, (short) 1);
        DLTensor.shape(t, shapeArray);
        DLTensor.strides(t, MemorySegment.NULL);
        DLTensor.byte_offset(t, 0L);
        return block;
    }

    /** A CPU float32 tensor holding {@code values} in malloc'd memory that the deleter frees. */
    static MemorySegment cpuTensor(boolean versioned, float[] values, long[] shape, boolean readOnly) {
        MemorySegment data = Native.malloc(4L * values.length);
        MemorySegment.copy(values, 0, data, java.lang.foreign.ValueLayout.JAVA_FLOAT, 0, values.length);
        return tensor(versioned, data, true, shape, 1, 0, readOnly);
    }

    /** The DLTensor inside a legacy or versioned managed tensor. */
    static MemorySegment dlTensor(MemorySegment managed, boolean versioned) {
        return versioned
                ? DLManagedTensorVersioned.dl_tensor(managed.reinterpret(DLManagedTensorVersioned.sizeof()))
                : DLManagedTensor.dl_tensor(managed.reinterpret(DLManagedTensor.sizeof()));
    }

    @SuppressWarnings("unused")
    private static void deleteLegacy(MemorySegment self) {
        delete(self, DLManagedTensor.manager_ctx(self.reinterpret(DLManagedTensor.sizeof())));
    }

    @SuppressWarnings("unused")
    private static void deleteVersioned(MemorySegment self) {
        delete(self, DLManagedTensorVersioned.manager_ctx(self.reinterpret(DLManagedTensorVersioned.sizeof())));
    }

    private static void delete(MemorySegment self, MemorySegment ownedData) {
        try {
            DELETES.incrementAndGet();
            DELETES_BY_ADDRESS.merge(self.address(), 1, Integer::sum);
            Native.free(ownedData);
            Native.free(self);
        } catch (Throwable t) {
            System.getLogger("test").log(System.Logger.Level.ERROR, "test deleter failed", t);
        }
    }

    /** Calls a managed tensor's deleter (legacy and versioned have it at different offsets). */
    static void callDeleter(MemorySegment managed, boolean versioned) {
        MemorySegment fn = versioned
                ? DLManagedTensorVersioned.deleter(managed.reinterpret(DLManagedTensorVersioned.sizeof()))
                : DLManagedTensor.deleter(managed.reinterpret(DLManagedTensor.sizeof()));
        org.devicebridge.internal.Callbacks.invokeVoidPointer(fn, managed);
    }
}
