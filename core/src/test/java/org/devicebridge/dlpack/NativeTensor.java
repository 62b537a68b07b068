package org.devicebridge.dlpack;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.Native;

/**
 * A hand-made "native producer" tensor: every field settable (including nonsense), written into arena
 * memory, with a counting deleter upcall that records which struct it was called with.
 */
final class NativeTensor {
    static final AtomicInteger DELETES = new AtomicInteger();
    static final ConcurrentLinkedQueue<Long> DELETED = new ConcurrentLinkedQueue<>();
    static final MemorySegment DELETER = Native.upcallStub(MethodHandles.lookup(), NativeTensor.class, "delete",
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private static void delete(MemorySegment self) {
        DELETES.incrementAndGet();
        DELETED.add(self.address());
    }

    static void reset() {
        DELETES.set(0);
        DELETED.clear();
    }

    boolean versioned = true;
    int major = 1;
    int minor = 3;
    long flags;
    /** Data address; {@code -1} means "a fresh 4096-byte arena buffer". */
    long data = -1;
    int deviceType = 1;
    int deviceId;
    Integer ndim; // null: shape.length
    int code = DType.KDL_FLOAT;
    int bits = 32;
    int lanes = 1;
    long[] shape = {2, 3};
    long[] strides = {3, 1};
    boolean nullShape;
    boolean nullStrides;
    long shapeAddressDelta; // added to the shape pointer (misalignment tests)
    long stridesAddressDelta;
    long byteOffset;
    boolean withDeleter = true;

    static NativeTensor cpu() {
        return new NativeTensor();
    }

    NativeTensor legacy() {
        versioned = false;
        return this;
    }

    /** Writes the struct into {@code arena}; returns its address. */
    MemorySegment build(Arena arena) {
        MemorySegment m = arena.allocate(versioned ? DLManagedTensorVersioned.layout() : DLManagedTensor.layout());
        MemorySegment t;
        if (versioned) {
            MemorySegment v = DLManagedTensorVersioned.version(m);
            DLPackVersion.major(v, major);
            DLPackVersion.minor(v, minor);
            DLManagedTensorVersioned.flags(m, flags);
            DLManagedTensorVersioned.deleter(m, withDeleter ? DELETER : MemorySegment.NULL);
            t = DLManagedTensorVersioned.dl_tensor(m);
        } else {
            DLManagedTensor.deleter(m, withDeleter ? DELETER : MemorySegment.NULL);
            t = DLManagedTensor.dl_tensor(m);
        }
        MemorySegment buf = data == -1 ? arena.allocate(4096, 256) : MemorySegment.ofAddress(data);
        DLTensor.data(t, buf);
        DLDevice.device_type(DLTensor.device(t), deviceType);
        DLDevice.device_id(DLTensor.device(t), deviceId);
        DLTensor.ndim(t, ndim != null ? ndim : shape.length);
        MemorySegment dt = DLTensor.dtype(t);
        DLDataType.code(dt, (byte) code);
        DLDataType.bits(dt, (byte) bits);
        DLDataType.lanes(dt, (short) lanes);
        DLTensor.shape(t, nullShape ? MemorySegment.NULL : longs(arena, shape, shapeAddressDelta));
        DLTensor.strides(t, nullStrides ? MemorySegment.NULL : longs(arena, strides, stridesAddressDelta));
        DLTensor.byte_offset(t, byteOffset);
        return m;
    }

    private static MemorySegment longs(Arena arena, long[] values, long delta) {
        MemorySegment s = arena.allocate(8L * values.length + 16, 8);
        MemorySegment p = s.asSlice(delta);
        for (int i = 0; i < values.length; i++) {
            p.set(ValueLayout.JAVA_LONG_UNALIGNED, 8L * i, values[i]);
        }
        return p;
    }
}
