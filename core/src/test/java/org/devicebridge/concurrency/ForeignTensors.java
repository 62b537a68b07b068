package org.devicebridge.concurrency;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;

/**
 * A native producer of DLManagedTensorVersioned values numbered 0..n-1 (the number is the manager_ctx),
 * whose deleter counts calls per number, whatever thread it runs on.
 */
final class ForeignTensors implements AutoCloseable {
    static volatile AtomicIntegerArray deletes = new AtomicIntegerArray(0);

    static final MemorySegment DELETER;

    static {
        try {
            DELETER = Linker.nativeLinker().upcallStub(MethodHandles.lookup().findStatic(ForeignTensors.class, "delete",
                    java.lang.invoke.MethodType.methodType(void.class, MemorySegment.class)),
                    FunctionDescriptor.ofVoid(ValueLayout.ADDRESS), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static void delete(MemorySegment self) {
        try {
            long id = DLManagedTensorVersioned.manager_ctx(self.reinterpret(DLManagedTensorVersioned.sizeof())).address();
            deletes.incrementAndGet((int) id);
        } catch (Throwable t) {
            t.printStackTrace(); // an exception escaping an upcall would kill the JVM
        }
    }

    private final Arena arena = Arena.ofShared();
    private final MemorySegment data = arena.allocate(16, 16);
    private final MemorySegment shape = arena.allocate(ValueLayout.JAVA_LONG);
    private final MemorySegment strides = arena.allocate(ValueLayout.JAVA_LONG);

    ForeignTensors(int n) {
        deletes = new AtomicIntegerArray(n);
        shape.set(ValueLayout.JAVA_LONG, 0, 4);
        strides.set(ValueLayout.JAVA_LONG, 0, 1);
    }

    /** Tensor number {@code id}: 4 float32 values on the CPU. */
    MemorySegment tensor(int id) {
        MemorySegment t = arena.allocate(DLManagedTensorVersioned.layout());
        MemorySegment v = DLManagedTensorVersioned.version(t);
        DLPackVersion.major(v, 1);
        DLPackVersion.minor(v, 3);
        DLManagedTensorVersioned.manager_ctx(t, MemorySegment.ofAddress(id));
        DLManagedTensorVersioned.deleter(t, DELETER);
        MemorySegment dl = DLManagedTensorVersioned.dl_tensor(t);
        DLTensor.data(dl, data);
        MemorySegment dev = DLTensor.device(dl);
        DLDevice.device_type(dev, 1);
        DLDevice.device_id(dev, 0);
        DLTensor.ndim(dl, 1);
        MemorySegment dt = DLTensor.dtype(dl);
        DLDataType.code(dt, (byte) 2);
        DLDataType.bits(dt, (byte) 32);
        DLDataType.lanes(dt, (short) 1);
        DLTensor.shape(dl, shape);
        DLTensor.strides(dl, strides);
        return t;
    }

    /** Asserts that every tensor's deleter ran exactly once. */
    static void assertEachDeletedOnce() {
        AtomicIntegerArray d = deletes;
        for (int i = 0; i < d.length(); i++) {
            if (d.get(i) != 1) {
                throw new AssertionError("tensor " + i + ": expected exactly 1 deleter call but found " + d.get(i));
            }
        }
    }

    static long totalDeletes() {
        long sum = 0;
        for (int i = 0; i < deletes.length(); i++) {
            sum += deletes.get(i);
        }
        return sum;
    }

    @Override
    public void close() {
        arena.close();
    }
}
