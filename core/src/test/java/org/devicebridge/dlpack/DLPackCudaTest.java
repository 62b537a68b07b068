package org.devicebridge.dlpack;

import static org.devicebridge.cuda.Cuda.check;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Device (CUDA) and pinned host (CUDA_HOST) memory through DLPack, and the stream protocol, on a real GPU. */
@RequiresCuda
class DLPackCudaTest {
    private Arena arena;
    private int device;
    private MemorySegment previousContext;
    private long liveBaseline;
    private int exportsBaseline;

    @BeforeEach
    void setUp() {
        Cuda.require();
        arena = Arena.ofConfined();
        MemorySegment dev = arena.allocate(ValueLayout.JAVA_INT);
        check("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, 0));
        device = dev.get(ValueLayout.JAVA_INT, 0);
        MemorySegment prev = arena.allocate(ValueLayout.ADDRESS);
        check("cuCtxGetCurrent", cuda_driver_h.cuCtxGetCurrent(prev));
        previousContext = prev.get(ValueLayout.ADDRESS, 0);
        MemorySegment ctx = arena.allocate(ValueLayout.ADDRESS);
        check("cuDevicePrimaryCtxRetain", cuda_driver_h.cuDevicePrimaryCtxRetain(ctx, device));
        check("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(ctx.get(ValueLayout.ADDRESS, 0)));
        liveBaseline = HandleTracker.liveHandles();
        exportsBaseline = Exports.REGISTRY.size();
    }

    @AfterEach
    void tearDown() {
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
        cuda_driver_h.cuCtxSetCurrent(previousContext);
        cuda_driver_h.cuDevicePrimaryCtxRelease_v2(device);
        arena.close();
    }

    private long deviceAlloc(long bytes) {
        MemorySegment p = arena.allocate(ValueLayout.JAVA_LONG);
        check("cuMemAlloc_v2", cuda_driver_h.cuMemAlloc_v2(p, bytes));
        return p.get(ValueLayout.JAVA_LONG, 0);
    }

    @Test
    void deviceMemoryRoundTripsAsDevicePointersAndIsFreedOnceByTheDeleter() {
        long bytes = 8192; // the tensor spans bytes [256, 256 + 3968)
        long dptr = deviceAlloc(bytes);
        MemorySegment host = arena.allocate(bytes);
        for (int i = 0; i < bytes; i++) {
            host.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13));
        }
        check("cuMemcpyHtoD_v2", cuda_driver_h.cuMemcpyHtoD_v2(dptr, host, bytes));
        AtomicInteger frees = new AtomicInteger();
        AutoCloseable owner = () -> {
            frees.incrementAndGet();
            check("cuMemFree_v2", cuda_driver_h.cuMemFree_v2(dptr));
        };
        ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(MemorySegment.ofAddress(dptr).reinterpret(bytes),
                DType.FLOAT32, 16, 32).withStrides(64, 1).withByteOffset(256).withDevice(Device.cuda(0)), owner);
        try (ImportedTensor t = DLPack.importTensor(e, ImportOptions.expecting(Device.cuda(0)))) {
            assertEquals(dptr + 256, t.devicePointer().address());
            assertEquals((15 * 64 + 31 + 1) * 4L, t.byteExtent());
            assertThrows(UnsupportedFeatureException.class, t::segment);
            MemorySegment back = arena.allocate(128);
            check("cuMemcpyDtoH_v2", cuda_driver_h.cuMemcpyDtoH_v2(back, t.devicePointer().address(), 128));
            assertEquals(-1L, back.mismatch(host.asSlice(256, 128)), "the consumer reads the exporter's device bytes");
            assertEquals(0, frees.get());
        }
        assertEquals(1, frees.get(), "device memory freed exactly once, by the deleter");
    }

    @Test
    void importExpectingAnotherDeviceIsRefusedAndStillFreesOnce() {
        long dptr = deviceAlloc(256);
        AtomicInteger frees = new AtomicInteger();
        ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(MemorySegment.ofAddress(dptr).reinterpret(256),
                DType.INT8, 256).withDevice(Device.cuda(0)), () -> {
                    frees.incrementAndGet();
                    check("cuMemFree_v2", cuda_driver_h.cuMemFree_v2(dptr));
                });
        assertThrows(ValidationException.class, () -> DLPack.importTensor(e, ImportOptions.expecting(Device.CPU)));
        assertEquals(1, frees.get());
    }

    @Test
    void pinnedHostMemoryIsReadableThroughTheSegment() {
        MemorySegment pp = arena.allocate(ValueLayout.ADDRESS);
        check("cuMemHostAlloc", cuda_driver_h.cuMemHostAlloc(pp, 1024, 0));
        MemorySegment pinned = pp.get(ValueLayout.ADDRESS, 0).reinterpret(1024);
        for (int i = 0; i < 256; i++) {
            pinned.setAtIndex(ValueLayout.JAVA_INT, i, i * 3);
        }
        AtomicInteger frees = new AtomicInteger();
        ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(pinned, DType.INT32, 128).withStrides(2)
                .withDevice(Device.cudaHost(0)).withFlags(TensorFlag.READ_ONLY), () -> {
                    frees.incrementAndGet();
                    check("cuMemFreeHost", cuda_driver_h.cuMemFreeHost(pinned));
                });
        try (ImportedTensor t = DLPack.importTensor(e, ImportOptions.expecting(Device.cudaHost(0)))) {
            assertTrue(t.isReadOnly());
            assertEquals(pinned.address(), t.segment().address());
            assertEquals(3 * 2 * 5, t.segment().getAtIndex(ValueLayout.JAVA_INT, 2 * 5));
        }
        assertEquals(1, frees.get());
    }

    @Test
    void theConsumerStreamSeesTheProducersWorkWithoutHostSynchronisation() {
        long n = 1 << 24;
        long dptr = deviceAlloc(n);
        MemorySegment ps = arena.allocate(ValueLayout.ADDRESS);
        MemorySegment cs = arena.allocate(ValueLayout.ADDRESS);
        check("cuStreamCreate", cuda_driver_h.cuStreamCreate(ps, cuda_driver_h.CU_STREAM_NON_BLOCKING()));
        check("cuStreamCreate", cuda_driver_h.cuStreamCreate(cs, cuda_driver_h.CU_STREAM_NON_BLOCKING()));
        MemorySegment producer = ps.get(ValueLayout.ADDRESS, 0);
        MemorySegment consumerStream = cs.get(ValueLayout.ADDRESS, 0);
        MemorySegment pp = arena.allocate(ValueLayout.ADDRESS);
        check("cuMemHostAlloc", cuda_driver_h.cuMemHostAlloc(pp, n, 0));
        MemorySegment pinned = pp.get(ValueLayout.ADDRESS, 0).reinterpret(n);
        try {
            check("cuMemsetD8_v2", cuda_driver_h.cuMemsetD8_v2(dptr, (byte) 0, n));
            check("cuMemsetD8Async", cuda_driver_h.cuMemsetD8Async(dptr, (byte) 7, n, producer));
            ConsumerStream consumer = ConsumerStream.of(Device.cuda(0), consumerStream.address());
            ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(MemorySegment.ofAddress(dptr).reinterpret(n),
                    DType.UINT8, n).withDevice(Device.cuda(0)).withConsumerStream(consumer, c -> c.waitForCuda(producer)));
            try (ImportedTensor t = DLPack.importTensor(e, ImportOptions.expecting(Device.cuda(0)))) {
                check("cuMemcpyDtoHAsync_v2", cuda_driver_h.cuMemcpyDtoHAsync_v2(pinned, t.devicePointer().address(), n,
                        consumerStream));
                check("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(consumerStream));
            }
            assertEquals(7, pinned.get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(7, pinned.get(ValueLayout.JAVA_BYTE, n - 1), "the last byte the producer wrote");
            // the legacy default stream (1) and per-thread default stream (2) are accepted handles too
            ConsumerStream.of(Device.cuda(0), 1L).waitForCuda(producer);
            ConsumerStream.of(Device.cuda(0), 2L).waitForCuda(producer);
            check("cuCtxSynchronize", cuda_driver_h.cuCtxSynchronize());
        } finally {
            cuda_driver_h.cuMemFreeHost(pinned);
            cuda_driver_h.cuStreamDestroy_v2(producer);
            cuda_driver_h.cuStreamDestroy_v2(consumerStream);
            cuda_driver_h.cuMemFree_v2(dptr);
        }
    }
}
