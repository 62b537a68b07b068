package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigDecimal;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link CudaArrow#exportPinnedHost}: Arrow Java batches whose buffers are pinned host memory go out as
 * {@code ARROW_DEVICE_CUDA_HOST} without a copy; a buffer the driver does not report as pinned (ordinary Arrow
 * memory, or the narrowed copy of a decimal32 made from an ordinary allocator) is refused with nothing held.
 */
class CudaHostExportTest {
    private static final int ROWS = 100;
    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
    }

    @AfterEach
    void tearDown() {
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    /** {@code pinned} as one Arrow allocation of {@code allocator} (freed by the test, not by Arrow Java). */
    private ArrowBuf wrap(PinnedHostBuffer pinned) {
        MemorySegment s = pinned.segment();
        return allocator.wrapForeignAllocation(new ForeignAllocation(s.byteSize(), s.address()) {
            @Override
            protected void release0() {
                // the PinnedHostBuffer frees it
            }
        });
    }

    /** An int32 vector of {@link #ROWS} rows (every 7th null) whose validity and data lie in {@code memory}. */
    private IntVector pinnedInts(ArrowBuf memory) {
        ArrowBuf validity = memory.slice(0, 64);
        ArrowBuf data = memory.slice(64, 4L * ROWS);
        validity.setZero(0, 64);
        int nulls = 0;
        for (int i = 0; i < ROWS; i++) {
            if (i % 7 == 3) {
                nulls++;
            } else {
                validity.setByte(i >>> 3, validity.getByte(i >>> 3) | (1 << (i & 7)));
            }
            data.setInt(4L * i, i * 31);
        }
        IntVector v = new IntVector("x", allocator);
        v.loadFieldBuffers(new ArrowFieldNode(ROWS, nulls), List.of(validity, data));
        return v;
    }

    @Test
    @RequiresCuda
    void aBatchInPinnedMemoryIsExportedAsCudaHostWithoutACopy() {
        try (PinnedHostBuffer pinned = PinnedHostBuffer.allocate(64 + 4L * ROWS); Arena arena = Arena.ofConfined()) {
            ArrowBuf memory = wrap(pinned);
            try (IntVector ints = pinnedInts(memory); VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(ints))) {
                memory.close();
                root.setRowCount(ROWS);
                MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
                int before = ExportTestSupport.exportedArrays();
                CudaArrow.exportPinnedHost(root, null, out);
                assertEquals(DeviceKind.CUDA_HOST.code(), ArrowDeviceArray.device_type(out));
                assertTrue(ArrowDeviceArray.device_id(out) >= 0);
                assertEquals(0L, ArrowDeviceArray.sync_event(out).address(), "host data is ready: no event");
                MemorySegment array = out.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
                MemorySegment child = ArrowArray.children(array).reinterpret(8).getAtIndex(ValueLayout.ADDRESS, 0)
                        .reinterpret(ArrowArray.sizeof());
                long data = ArrowArray.buffers(child).reinterpret(16).getAtIndex(ValueLayout.JAVA_LONG, 1);
                assertEquals(pinned.segment().address() + 64, data, "the pinned buffer itself, not a copy");
                assertTrue(ExportTestSupport.exportedArrays() > before);
                Callbacks.invokeVoidPointer(ArrowArray.release(array), array);
                assertEquals(before, ExportTestSupport.exportedArrays(), "released by the consumer's release");
            }
        }
    }

    @Test
    @RequiresCuda
    void ordinaryMemoryAndANarrowedCopyFromAnOrdinaryAllocatorAreRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            try (IntVector plain = new IntVector("x", allocator)) {
                plain.allocateNew(4);
                plain.setSafe(0, 1);
                plain.setValueCount(4);
                try (VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(plain))) {
                    root.setRowCount(4);
                    ValidationException e = assertThrows(ValidationException.class,
                            () -> CudaArrow.exportPinnedHost(root, null, out));
                    assertEquals(ValidationException.Category.DEVICE, e.category());
                    assertEquals(0L, ArrowArray.release(out).address(), "the output is untouched");
                }
            }
            try (PinnedHostBuffer pinned = PinnedHostBuffer.allocate(64 + 16L * 4)) {
                ArrowBuf memory = wrap(pinned);
                DecimalVector d = new DecimalVector(new Field("d", FieldType.nullable(new ArrowType.Decimal(9, 2, 32)), null),
                        allocator);
                ArrowBuf validity = memory.slice(0, 64);
                ArrowBuf values = memory.slice(64, 16L * 4);
                validity.setZero(0, 64);
                values.setZero(0, 16L * 4);
                d.loadFieldBuffers(new ArrowFieldNode(4, 4), List.of(validity, values));
                memory.close();
                try (d; VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(d))) {
                    d.setSafe(1, BigDecimal.valueOf(12345, 2));
                    root.setRowCount(4);
                    ValidationException e = assertThrows(ValidationException.class,
                            () -> CudaArrow.exportPinnedHost(root, null, out));
                    assertTrue(e.getMessage().contains("children[0].buffers[1]"), e.getMessage());
                }
            }
        }
    }

    @Test
    void withoutADriverTheCudaHostExportThrowsTyped() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present");
        try (VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(new IntVector("x", allocator)));
             Arena arena = Arena.ofConfined()) {
            assertThrows(CudaUnavailableException.class,
                    () -> CudaArrow.exportPinnedHost(root, null, arena.allocate(ArrowDeviceArray.layout())));
        }
    }
}
