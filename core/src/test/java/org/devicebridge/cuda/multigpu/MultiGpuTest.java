package org.devicebridge.cuda.multigpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Device 1 end to end, on a machine with two GPUs: contexts (the caller's context is current again after
 * every call for another device), pointer attributes naming ordinal 1, DLPack and Arrow device arrays with
 * {@code device_id = 1} (and memory of device 0 labelled 1 rejected), a stream of device 1 waiting on an
 * event of device 0, peer copies of bytes and of whole Arrow batches, and peer access. Every test skips,
 * saying why, where fewer than two devices exist; handles, device memory and exports are back to their
 * baselines after each test.
 */
@RequiresCuda
@Tag("multigpu")
class MultiGpuTest {
    private static final int D0 = 0;
    private static final int D1 = 1;
    private static final int BYTES = 1 << 20;

    private long liveBefore;
    private long deviceBytesBefore;

    @BeforeEach
    void needsTwoDevices() {
        int n = Cuda.deviceCount();
        assumeTrue(n >= 2, "multi-GPU test skipped: this machine has " + n + " CUDA device(s), two are needed");
        liveBefore = HandleTracker.liveHandles();
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
    }

    @AfterEach
    void nothingLeaked() {
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
    }

    // ---- contexts -------------------------------------------------------------------------------

    private static MemorySegment currentContext(Arena arena) {
        MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
        Cuda.check("cuCtxGetCurrent", cuda_driver_h.cuCtxGetCurrent(out));
        return out.get(ValueLayout.ADDRESS, 0);
    }

    private static MemorySegment primaryContext(Arena arena, int ordinal) {
        MemorySegment dev = arena.allocate(ValueLayout.JAVA_INT);
        Cuda.check("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, ordinal));
        MemorySegment ctx = arena.allocate(ValueLayout.ADDRESS);
        Cuda.check("cuDevicePrimaryCtxRetain", cuda_driver_h.cuDevicePrimaryCtxRetain(ctx, dev.get(ValueLayout.JAVA_INT, 0)));
        return ctx.get(ValueLayout.ADDRESS, 0);
    }

    private static void releasePrimary(Arena arena, int ordinal) {
        MemorySegment dev = arena.allocate(ValueLayout.JAVA_INT);
        Cuda.check("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, ordinal));
        Cuda.check("cuDevicePrimaryCtxRelease_v2", cuda_driver_h.cuDevicePrimaryCtxRelease_v2(dev.get(ValueLayout.JAVA_INT, 0)));
    }

    @Test
    void callsForDeviceOneLeaveTheCallersContextOfDeviceZeroCurrent() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ctx0 = primaryContext(arena, D0);
            MemorySegment before = currentContext(arena);
            Cuda.check("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(ctx0));
            try {
                try (CudaStream s1 = CudaStream.create(Device.cuda(D1));
                     DeviceBuffer b1 = DeviceBuffer.allocateAsync(Device.cuda(D1), BYTES, s1);
                     DeviceBuffer m1 = DeviceBuffer.allocate(Device.cuda(D1), BYTES);
                     CudaEvent e1 = CudaEvent.acquire(Device.cuda(D1))) {
                    assertEquals(ctx0.address(), currentContext(arena).address(), "after create/allocate on device 1");
                    CudaCopies.fillAsync(b1.range(0, BYTES), (byte) 7, s1);
                    CudaCopies.fill(m1.range(0, BYTES), (byte) 9);
                    e1.record(s1);
                    e1.synchronize();
                    s1.synchronize();
                    assertTrue(s1.query());
                    assertEquals(D1, PointerAttributes.query(b1.address()).deviceOrdinal());
                    Cuda.synchronize(Device.cuda(D1));
                    assertTrue(Cuda.properties(Device.cuda(D1)).totalMemoryBytes() > 0);
                    assertEquals(ctx0.address(), currentContext(arena).address(), "after copies, events, queries");
                }
                assertEquals(ctx0.address(), currentContext(arena).address(), "after the frees on device 1");
            } finally {
                Cuda.check("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(before));
                releasePrimary(arena, D0);
            }
        }
    }

    // ---- pointer attributes and DLPack ----------------------------------------------------------

    private static ExportedTensor labelled(DeviceBuffer b, Device label) {
        MemorySegment data = MemorySegment.ofAddress(b.address()).reinterpret(b.byteSize());
        return DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, b.byteSize() / 4).withDevice(label));
    }

    @Test
    void dlpackTensorOnDeviceOneIsConfirmedAndDeviceZeroMemoryLabelledOneIsRejected() {
        try (DeviceBuffer b0 = DeviceBuffer.allocate(Device.cuda(D0), BYTES);
             DeviceBuffer b1 = DeviceBuffer.allocate(Device.cuda(D1), BYTES)) {
            PointerAttributes a = PointerAttributes.query(b1.address());
            assertEquals(DeviceKind.CUDA, a.kind());
            assertEquals(D1, a.deviceOrdinal(), "the driver names ordinal 1");
            try (ImportedTensor t = DLPack.importTensor(labelled(b1, Device.cuda(D1)),
                    ImportOptions.expecting(Device.cuda(D1)).confirmingPointers())) {
                assertEquals(Device.cuda(D1), t.device());
                assertEquals(b1.address(), t.devicePointer().address());
            }
            ValidationException wrong = assertThrows(ValidationException.class, () -> DLPack.importTensor(
                    labelled(b0, Device.cuda(D1)), ImportOptions.expecting(Device.cuda(D1)).confirmingPointers()).close());
            assertEquals(ValidationException.Category.DEVICE, wrong.category());
            assertTrue(wrong.getMessage().contains("device 0"), wrong::getMessage);
            ValidationException back = assertThrows(ValidationException.class, () -> DLPack.importTensor(
                    labelled(b1, Device.cuda(D0)), ImportOptions.expecting(Device.cuda(D0)).confirmingPointers()).close());
            assertEquals(ValidationException.Category.DEVICE, back.category());
        }
    }

    // ---- events and peer copies -----------------------------------------------------------------

    private static byte[] pattern(long seed) {
        byte[] b = new byte[BYTES];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void aStreamOfDeviceOneWaitsOnAnEventOfDeviceZeroBeforeItsPeerCopy() {
        byte[] want = pattern(1);
        try (Arena arena = Arena.ofConfined();
             CudaStream s0 = CudaStream.create(Device.cuda(D0));
             CudaStream s1 = CudaStream.create(Device.cuda(D1));
             DeviceBuffer b0 = DeviceBuffer.allocate(Device.cuda(D0), BYTES);
             DeviceBuffer b1 = DeviceBuffer.allocate(Device.cuda(D1), BYTES)) {
            MemorySegment host = arena.allocate(BYTES, 64);
            MemorySegment.copy(want, 0, host, ValueLayout.JAVA_BYTE, 0, BYTES);
            CudaCopies.fill(b1.range(0, BYTES), (byte) 0);
            CudaCopies.hostToDeviceAsync(host, b0, 0, s0); // produced on device 0's stream
            try (CudaEvent produced = CudaEvent.acquire(Device.cuda(D0))) {
                produced.record(s0);
                s1.waitEvent(produced); // a stream of device 1 waits on an event of device 0
            }
            CudaCopies.copyPeerAsync(b0.range(0, BYTES), b1, 0, s1);
            s1.synchronize();
            MemorySegment back = arena.allocate(BYTES, 64);
            CudaCopies.deviceToHost(b1, 0, back);
            assertArrayEquals(want, back.toArray(ValueLayout.JAVA_BYTE));
            s0.synchronize();
        }
    }

    @Test
    void synchronousPeerCopiesGoBothWaysAtOffsets() {
        byte[] want = pattern(2);
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer b0 = DeviceBuffer.allocate(Device.cuda(D0), BYTES);
             DeviceBuffer b1 = DeviceBuffer.allocate(Device.cuda(D1), 2L * BYTES);
             DeviceBuffer c0 = DeviceBuffer.allocate(Device.cuda(D0), BYTES)) {
            MemorySegment host = arena.allocate(BYTES, 64);
            MemorySegment.copy(want, 0, host, ValueLayout.JAVA_BYTE, 0, BYTES);
            CudaCopies.hostToDevice(host, b0, 0);
            CudaCopies.copyPeer(b0.range(0, BYTES), b1, BYTES); // 0 -> 1, at an offset
            CudaCopies.copyPeer(b1.range(BYTES, BYTES), c0, 0); // 1 -> 0
            MemorySegment back = arena.allocate(BYTES, 64);
            CudaCopies.deviceToHost(c0, 0, back);
            assertArrayEquals(want, back.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aPeerCopyOnAStreamOfAThirdDeviceIsRejected() {
        assumeTrue(Cuda.deviceCount() >= 3, "needs a third device");
        try (CudaStream s2 = CudaStream.create(Device.cuda(2));
             DeviceBuffer b0 = DeviceBuffer.allocate(Device.cuda(D0), 64);
             DeviceBuffer b1 = DeviceBuffer.allocate(Device.cuda(D1), 64)) {
            assertThrows(InvalidArgumentException.class, () -> CudaCopies.copyPeerAsync(b0.range(0, 64), b1, 0, s2));
        }
    }

    @Test
    void peerAccessIsEnabledOnceOrRefusedTyped() {
        boolean can = Cuda.canAccessPeer(Device.cuda(D0), Device.cuda(D1));
        System.out.println("[multigpu] cuDeviceCanAccessPeer(0, 1) = " + can + ", (1, 0) = " + Cuda.canAccessPeer(Device.cuda(D1), Device.cuda(D0)));
        assertFalse(Cuda.canAccessPeer(Device.cuda(D0), Device.cuda(D0)));
        assertThrows(InvalidArgumentException.class, () -> Cuda.enablePeerAccess(Device.cuda(D0), Device.cuda(D0)));
        if (can) {
            Cuda.enablePeerAccess(Device.cuda(D0), Device.cuda(D1)); // true the first time in this process, false after
            assertFalse(Cuda.enablePeerAccess(Device.cuda(D0), Device.cuda(D1)), "enabling again reports it was enabled already");
        } else {
            assertThrows(UnsupportedFeatureException.class, () -> Cuda.enablePeerAccess(Device.cuda(D0), Device.cuda(D1)));
        }
    }

    // ---- Arrow ----------------------------------------------------------------------------------

    private static VectorSchemaRoot sample(BufferAllocator allocator, int rows) {
        IntVector ints = new IntVector("i", allocator);
        VarCharVector strings = new VarCharVector("s", allocator);
        ints.allocateNew(rows);
        strings.allocateNew(rows);
        for (int r = 0; r < rows; r++) {
            if (r % 7 == 3) {
                ints.setNull(r);
            } else {
                ints.set(r, r * 31 - 5);
            }
            strings.setSafe(r, ("row " + r + " on a GPU").getBytes(StandardCharsets.UTF_8));
        }
        VectorSchemaRoot root = VectorSchemaRoot.of(ints, strings);
        root.setRowCount(rows);
        return root;
    }

    private static void assertSameValues(VectorSchemaRoot want, VectorSchemaRoot got) {
        assertEquals(want.getRowCount(), got.getRowCount());
        for (int i = 0; i < want.getFieldVectors().size(); i++) {
            int col = i;
            assertTrue(VectorEqualsVisitor.vectorEquals(want.getVector(i), got.getVector(i)),
                    () -> "values differ in column " + col);
        }
    }

    @Test
    void arrowDeviceArrayOnDeviceOneExportsDeviceIdOneAndImportsOnAStreamOfDeviceOne() {
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = sample(allocator, 1000);
             Arena arena = Arena.ofConfined();
             CudaStream s1 = CudaStream.create(Device.cuda(D1));
             CudaStream consumer = CudaStream.create(Device.cuda(D1));
             CudaStream s0 = CudaStream.create(Device.cuda(D0));
             HostDeviceTransfer t1 = HostDeviceTransfer.create(Device.cuda(D1), 1 << 20);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(t1, s1))) {
            assertEquals(Device.cuda(D1), batch.device());
            assertEquals(D1, PointerAttributes.query(batch.root().children().get(0).bufferPointer(1).address())
                    .deviceOrdinal(), "uploaded into device 1's memory");
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(s1), out);
            assertEquals(DeviceKind.CUDA.code(), ArrowDeviceArray.device_type(out));
            assertEquals(D1, ArrowDeviceArray.device_id(out));
            try (CudaArrowBatch imported = CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.FULL,
                    DeviceCopies.of(t1, consumer));
                 VectorSchemaRoot down = CudaArrow.download(imported, new DeviceCopies(allocator, t1, consumer))) {
                assertEquals(Device.cuda(D1), imported.device());
                assertSameValues(root, down);
            }
            // the same array offered to a consumer on device 0: rejected by device_id, the struct released
            MemorySegment again = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(s1), again);
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> CudaArrow.importDeviceArray(batch.schema(), again, ValidationLevel.MINIMAL,
                            DeviceCopies.of(s0)).close());
            assertEquals(ValidationException.Category.DEVICE, ex.category());
            assertEquals(0L, org.devicebridge.generated.arrow.ArrowArray.release(again).address(), "released once");
            consumer.synchronize();
            s1.synchronize();
            s0.synchronize();
        }
    }

    @Test
    void deviceZeroMemoryLabelledDeviceOneIsRejectedByTheArrowImport() {
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = sample(allocator, 100);
             Arena arena = Arena.ofConfined();
             CudaStream s0 = CudaStream.create(Device.cuda(D0));
             CudaStream s1 = CudaStream.create(Device.cuda(D1));
             HostDeviceTransfer t0 = HostDeviceTransfer.create(Device.cuda(D0), 1 << 20);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(t0, s0))) {
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(s0), out);
            ArrowDeviceArray.device_id(out, D1); // a producer's wrong label
            ValidationException ex = assertThrows(ValidationException.class,
                    () -> CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.MINIMAL, DeviceCopies.of(s1)).close());
            System.out.println("[multigpu] device 0 memory labelled 1: " + ex.getMessage());
            assertEquals(ValidationException.Category.DEVICE, ex.category());
            assertTrue(ex.getMessage().contains("device 0"), ex::getMessage);
            assertEquals(0L, org.devicebridge.generated.arrow.ArrowArray.release(out).address(), "released once");
            s0.synchronize();
            s1.synchronize();
        }
    }

    @Test
    void anArrowBatchCopiedToDeviceOneKeepsItsValues() {
        try (BufferAllocator allocator = new RootAllocator();
             VectorSchemaRoot root = sample(allocator, 5000);
             CudaStream s0 = CudaStream.create(Device.cuda(D0));
             CudaStream s1 = CudaStream.create(Device.cuda(D1));
             HostDeviceTransfer t0 = HostDeviceTransfer.create(Device.cuda(D0), 1 << 20);
             HostDeviceTransfer t1 = HostDeviceTransfer.create(Device.cuda(D1), 1 << 20)) {
            CudaArrowBatch moved;
            try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(t0, s0))) {
                assertThrows(InvalidArgumentException.class, () -> CudaArrow.copyAsync(batch, s1, DeviceCopies.of(s1)));
                moved = CudaArrow.copy(batch, s0, DeviceCopies.of(s1));
            }
            try (moved; VectorSchemaRoot down = CudaArrow.download(moved, new DeviceCopies(allocator, t1, s1))) {
                assertEquals(Device.cuda(D1), moved.device());
                assertEquals(D1, PointerAttributes.query(moved.root().children().get(1).bufferPointer(2).address())
                        .deviceOrdinal(), "the copy lives in device 1's memory");
                assertSameValues(root, down);
            }
            s1.synchronize();
            s0.synchronize();
        }
    }
}
