package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.ValidationException;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * CUDA-labelled DLPack imports confirmed with the driver's pointer attributes
 * ({@link ImportOptions#confirmingPointers()}): the label must match the memory kind and device ordinal the
 * driver reports, and the tensor's span must lie inside one allocation; every mismatch is a typed
 * {@code DEVICE} error after which the deleter has run exactly once.
 */
class DLPackPointerCheckTest {
    private static final long BYTES = 4096;
    private Arena arena;
    private AtomicInteger deletes;
    private long liveBaseline;
    private int exportsBaseline;

    @BeforeEach
    void setUp() {
        arena = Arena.ofConfined();
        deletes = new AtomicInteger();
        liveBaseline = HandleTracker.liveHandles();
        exportsBaseline = Exports.REGISTRY.size();
    }

    @AfterEach
    void tearDown() {
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
        arena.close();
    }

    /** Exports {@code floats} float32 values at {@code address} + {@code byteOffset} labelled {@code label}. */
    private ExportedTensor labelled(long address, long byteOffset, long floats, Device label) {
        MemorySegment data = MemorySegment.ofAddress(address).reinterpret(byteOffset + 4 * floats);
        return DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, floats).withByteOffset(byteOffset)
                .withDevice(label), deletes::incrementAndGet);
    }

    private void confirmed(long address, long byteOffset, long floats, Device label) {
        try (ImportedTensor t = DLPack.importTensor(labelled(address, byteOffset, floats, label),
                ImportOptions.expecting(label).confirmingPointers())) {
            assertEquals(label, t.device());
            assertEquals(0, deletes.get(), "the import holds the tensor");
        }
        assertEquals(1, deletes.get(), "deleted exactly once on close");
    }

    private void rejected(long address, long byteOffset, long floats, Device label, String message) {
        ExportedTensor e = labelled(address, byteOffset, floats, label);
        ValidationException ex = assertThrows(ValidationException.class,
                () -> DLPack.importTensor(e, ImportOptions.expecting(label).confirmingPointers()).close());
        System.out.println("[pointer check] " + label + ": " + ex.getMessage());
        assertEquals(ValidationException.Category.DEVICE, ex.category());
        assertTrue(ex.getMessage().contains(message), () -> "message: " + ex.getMessage());
        assertEquals(1, deletes.get(), "the failed import ran the deleter exactly once");
    }

    @Test
    @RequiresCuda
    void deviceMemoryLabelledCudaOfItsOrdinalIsConfirmed() {
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(0), BYTES)) {
            confirmed(b.address(), 256, 512, Device.cuda(0));
        }
    }

    @Test
    @RequiresCuda
    void hostMemoryLabelledCudaIsRejected() {
        MemorySegment host = arena.allocate(BYTES, 256);
        rejected(host.address(), 0, BYTES / 4, Device.cuda(0), "found unregistered host memory");
    }

    @Test
    @RequiresCuda
    void deviceMemoryLabelledWithAnotherOrdinalIsRejected() {
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(0), BYTES)) {
            rejected(b.address(), 0, BYTES / 4, Device.cuda(1), "found device memory of CUDA device 0");
        }
    }

    @Test
    @RequiresCuda
    void deviceMemoryLabelledCudaHostIsRejected() {
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(0), BYTES)) {
            rejected(b.address(), 0, BYTES / 4, Device.cudaHost(0), "expected pinned or registered host memory");
        }
    }

    @Test
    @RequiresCuda
    void pinnedHostMemoryLabelledCudaHostIsConfirmedAndLabelledCudaIsRejected() {
        try (PinnedHostBuffer p = PinnedHostBuffer.allocate(BYTES)) {
            confirmed(p.segment().address(), 0, BYTES / 4, Device.cudaHost(0));
            deletes.set(0);
            rejected(p.segment().address(), 0, BYTES / 4, Device.cuda(0), "found pinned host memory");
        }
    }

    @Test
    @RequiresCuda
    void deviceMemoryLabelledCpuIsRejected() {
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(0), BYTES)) {
            rejected(b.address(), 0, BYTES / 4, Device.CPU, "found device memory of CUDA device 0");
        }
    }

    @Test
    @RequiresCuda
    void aSpanReachingPastTheAllocationIsRejected() {
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(0), BYTES)) {
            rejected(b.address(), 256, BYTES / 4, Device.cuda(0), "within its allocation");
        }
    }

    @Test
    @RequiresCuda
    void theDefaultTrustsTheLabelWithoutAskingTheDriver() {
        MemorySegment host = arena.allocate(BYTES, 256);
        try (ImportedTensor t = DLPack.importTensor(labelled(host.address(), 0, BYTES / 4, Device.cuda(0)),
                ImportOptions.expecting(Device.cuda(0)))) {
            assertEquals(Device.cuda(0), t.device(), "LABEL: host memory standing in for device memory is accepted");
        }
        assertEquals(1, deletes.get());
    }

    @Test
    void withoutADriverConfirmingACudaLabelThrowsTypedAfterRunningTheDeleter() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is loaded here");
        MemorySegment host = arena.allocate(BYTES, 256);
        ExportedTensor e = labelled(host.address(), 0, BYTES / 4, Device.cuda(0));
        assertThrows(CudaUnavailableException.class,
                () -> DLPack.importTensor(e, ImportOptions.any().confirmingPointers()).close());
        assertEquals(1, deletes.get(), "the deleter ran once");
        deletes.set(0);
        confirmed(host.address(), 0, BYTES / 4, Device.CPU); // a CPU label needs no driver to confirm
    }
}
