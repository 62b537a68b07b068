package org.devicebridge.concurrency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.devicebridge.Device;
import org.devicebridge.NativeHandle;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.Test;

/**
 * Ownership under concurrency, each case 10,000 iterations with exact counts: exports released from
 * threads the JVM did not create (pthread), two threads closing the same handle, and exports released by a
 * consumer while the producer keeps exporting. (close() racing the Cleaner: {@link CleanerRaceTest}.)
 */
class ConcurrencyTest {
    static final int N = 10_000;

    @Test
    void exportedTensorDeletedOnANativeThreadClosesItsOwnerExactlyOnce() {
        long exports = ExportRegistry.outstandingExports();
        AtomicIntegerArray owners = new AtomicIntegerArray(N);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(16, 16);
            for (int i = 0; i < N; i++) {
                int id = i;
                ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 4),
                        () -> owners.incrementAndGet(id));
                MemorySegment p = e.transferOwnership().reinterpret(DLManagedTensorVersioned.sizeof());
                NativeThreads.runOnNativeThread(DLManagedTensorVersioned.deleter(p), p);
                assertEquals(1, owners.get(id), "owner closes of tensor " + id + " right after its deleter returned");
            }
        }
        assertEachOnce(owners, "owner");
        assertEquals(exports, ExportRegistry.outstandingExports(), "outstanding exports");
    }

    @Test
    void arrowExportReleasedOnANativeThreadGivesBackEveryBufferReference() {
        long exports = ExportRegistry.outstandingExports();
        try (BufferAllocator allocator = new RootAllocator(); IntVector v = vector(allocator); Arena arena = Arena.ofConfined()) {
            long held = allocator.getAllocatedMemory();
            for (int i = 0; i < N; i++) {
                MemorySegment out = arena.allocate(ArrowArray.layout());
                ArrowJava.exportVector(v, null, out, null);
                assertEquals(exports + 1, ExportRegistry.outstandingExports(), "outstanding exports while exported");
                NativeThreads.runOnNativeThread(ArrowArray.release(out), out);
                assertEquals(MemorySegment.NULL, ArrowArray.release(out), "release marks the struct released");
                assertEquals(exports, ExportRegistry.outstandingExports(), "outstanding exports after release " + i);
                assertEquals(held, allocator.getAllocatedMemory(), "allocator bytes after release " + i);
            }
            assertEquals(16, v.getValueCount()); // the vector stays usable after 10,000 exports
            assertEquals(7, v.get(7));
        }
    }

    @Test
    void twoThreadsClosingTheSameImportedTensorCallItsDeleterExactlyOnce() throws Exception {
        long live = HandleTracker.liveHandles();
        try (ForeignTensors producer = new ForeignTensors(N)) {
            int batch = 1_000;
            for (int start = 0; start < N; start += batch) {
                ImportedTensor[] handles = new ImportedTensor[batch];
                for (int i = 0; i < batch; i++) {
                    handles[i] = DLPack.importVersioned(producer.tensor(start + i), ImportOptions.any());
                }
                closeFromTwoThreads(handles);
                for (ImportedTensor h : handles) {
                    assertEquals(NativeHandle.State.RELEASED, h.state());
                }
            }
            ForeignTensors.assertEachDeletedOnce();
        }
        assertEquals(live, HandleTracker.liveHandles(), "live handles");
    }

    @Test
    void twoThreadsClosingTheSameExportedTensorCloseItsOwnerExactlyOnce() throws Exception {
        long exports = ExportRegistry.outstandingExports();
        AtomicIntegerArray owners = new AtomicIntegerArray(N);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(16, 16);
            int batch = 1_000;
            for (int start = 0; start < N; start += batch) {
                ExportedTensor[] handles = new ExportedTensor[batch];
                for (int i = 0; i < batch; i++) {
                    int id = start + i;
                    handles[i] = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 4),
                            () -> owners.incrementAndGet(id));
                }
                closeFromTwoThreads(handles);
            }
        }
        assertEachOnce(owners, "owner");
        assertEquals(exports, ExportRegistry.outstandingExports(), "outstanding exports");
    }

    @Test
    void exportsReleasedByAConsumerWhileTheProducerKeepsExportingAreEachReleasedOnce() throws Exception {
        long exports = ExportRegistry.outstandingExports();
        AtomicIntegerArray owners = new AtomicIntegerArray(N);
        try (BufferAllocator allocator = new RootAllocator(); IntVector v = vector(allocator); Arena arena = Arena.ofShared()) {
            long held = allocator.getAllocatedMemory();
            MemorySegment data = arena.allocate(16, 16);
            BlockingQueue<MemorySegment[]> queue = new ArrayBlockingQueue<>(64);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread producer = new Thread(() -> {
                try {
                    for (int i = 0; i < N; i++) {
                        int id = i;
                        MemorySegment array = arena.allocate(ArrowArray.layout());
                        ArrowJava.exportVector(v, null, array, null);
                        ExportedTensor t = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 4),
                                () -> owners.incrementAndGet(id));
                        queue.put(new MemorySegment[] {array, t.transferOwnership().reinterpret(DLManagedTensorVersioned.sizeof())});
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "producer");
            Thread consumer = new Thread(() -> {
                try {
                    for (int i = 0; i < N; i++) {
                        MemorySegment[] pair = queue.take();
                        MemorySegment array = pair[0];
                        MemorySegment tensor = pair[1];
                        if (i % 8 == 0) { // now and then from a thread the JVM did not create
                            NativeThreads.runOnNativeThread(ArrowArray.release(array), array);
                            NativeThreads.runOnNativeThread(DLManagedTensorVersioned.deleter(tensor), tensor);
                        } else {
                            NativeThreads.call(ArrowArray.release(array), array);
                            NativeThreads.call(DLManagedTensorVersioned.deleter(tensor), tensor);
                        }
                        if (!MemorySegment.NULL.equals(ArrowArray.release(array))) {
                            throw new AssertionError("export " + i + " not marked released");
                        }
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "consumer");
            producer.start();
            consumer.start();
            producer.join();
            consumer.join();
            if (failure.get() != null) {
                throw new AssertionError(failure.get());
            }
            assertEachOnce(owners, "tensor owner");
            assertEquals(exports, ExportRegistry.outstandingExports(), "outstanding exports");
            assertEquals(held, allocator.getAllocatedMemory(), "allocator bytes: every buffer reference given back");
        }
    }

    // ------------------------------------------------------------------------------------------ helpers

    private static IntVector vector(BufferAllocator allocator) {
        IntVector v = new IntVector("v", allocator);
        v.allocateNew(16);
        for (int i = 0; i < 16; i++) {
            v.set(i, i);
        }
        v.setValueCount(16);
        return v;
    }

    /** Two threads, released together, each closing every handle in the same order. */
    private static void closeFromTwoThreads(AutoCloseable[] handles) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable closer = () -> {
            try {
                go.await();
                for (AutoCloseable h : handles) {
                    h.close();
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        };
        Thread a = new Thread(closer, "closer-a");
        Thread b = new Thread(closer, "closer-b");
        a.start();
        b.start();
        go.countDown();
        a.join();
        b.join();
        if (failure.get() != null) {
            throw new AssertionError("close() threw", failure.get());
        }
    }

    private static void assertEachOnce(AtomicIntegerArray counts, String what) {
        for (int i = 0; i < counts.length(); i++) {
            assertEquals(1, counts.get(i), what + " calls for " + i);
        }
        assertTrue(counts.length() == N);
    }
}
