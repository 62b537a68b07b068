package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import org.devicebridge.DeviceKind;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.charset.StandardCharsets;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.PinnedHostPool;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/**
 * {@link PinnedArrowMemory}: typed failure without a driver (the plain FFM memory still works), and on a
 * GPU a {@code VectorSchemaRoot} built in pinned memory (every buffer host-pinned by the driver's own
 * account, {@link PinnedArrowMemory#isPinned} true for it and its slices, false for FFM memory), exact
 * accounting, and a second batch of the same shape served with no {@code cuMemHostAlloc}.
 */
class PinnedArrowMemoryTest {

    @Test
    void withoutADriverThePinnedManagerFailsTypedAndThePlainOneWorks() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present");
        assertThrows(CudaUnavailableException.class, PinnedArrowMemory::create);
        try (BufferAllocator plain = ArrowMemory.newRootAllocator(); ArrowBuf buf = plain.buffer(100)) {
            buf.setLong(0, 7);
            assertEquals(7, buf.getLong(0));
            assertFalse(PinnedArrowMemory.isPinned(buf));
        }
    }

    private static VectorSchemaRoot batch(BufferAllocator allocator, int rows) {
        BigIntVector ids = new BigIntVector("id", allocator);
        VarCharVector names = new VarCharVector("name", allocator);
        ids.allocateNew(rows);
        names.allocateNew(rows);
        for (int i = 0; i < rows; i++) {
            if (i % 11 == 0) {
                ids.setNull(i);
                names.setNull(i);
            } else {
                ids.set(i, i);
                names.setSafe(i, ("row " + i).getBytes(StandardCharsets.UTF_8));
            }
        }
        ids.setValueCount(rows);
        names.setValueCount(rows);
        return VectorSchemaRoot.of(ids, names);
    }

    @Test
    @RequiresCuda
    void aRootBuiltInPinnedMemoryIsHostPinnedBufferByBuffer() {
        CudaCounters.Snapshot start = CudaCounters.snapshot();
        try (PinnedArrowMemory pinned = PinnedArrowMemory.create()) {
            try (BufferAllocator allocator = pinned.newRootAllocator();
                 BufferAllocator plain = ArrowMemory.newRootAllocator()) {
                try (VectorSchemaRoot root = batch(allocator, 100_000)) {
                    for (FieldVector v : root.getFieldVectors()) {
                        for (ArrowBuf buf : v.getFieldBuffers()) {
                            assertTrue(PinnedArrowMemory.isPinned(buf), v.getName());
                            assertTrue(pinned.owns(buf));
                            assertTrue(PinnedArrowMemory.isPinned(buf.slice(8, 16)));
                            PointerAttributes a = PointerAttributes.query(buf.memoryAddress());
                            assertEquals(DeviceKind.CUDA_HOST, a.kind(), v.getName());
                        }
                    }
                    // Arrow accounts what it asked for; the pool lends blocks of the size classes, never less
                    assertTrue(allocator.getAllocatedMemory() > 0);
                    assertTrue(allocator.getAllocatedMemory() <= pinned.pool().lentBytes());
                    // each allocation is 64-byte aligned (a vector's buffers may be slices of one allocation:
                    // Arrow Java puts validity and data of a fixed-width vector in one, so they need not be)
                    for (long size : new long[] {1, 63, 1000, 1 << 20, 5 << 20}) {
                        try (ArrowBuf one = allocator.buffer(size)) {
                            assertEquals(0, one.memoryAddress() % 64, "allocation of " + size + " bytes");
                        }
                    }
                    try (ArrowBuf ffm = plain.buffer(64)) {
                        assertFalse(PinnedArrowMemory.isPinned(ffm));
                    }
                }
                for (int i = 0; i < PinnedHostPool.DEFAULT_ROTATION; i++) {
                    batch(allocator, 100_000).close(); // its large blocks are used in turn: carved once each
                }
                long calls = CudaCounters.snapshot().memHostAllocCalls();
                for (int i = 0; i < 5; i++) {
                    batch(allocator, 100_000).close();
                }
                assertEquals(calls, CudaCounters.snapshot().memHostAllocCalls(), "steady state: no cuMemHostAlloc");
                assertEquals(0, allocator.getAllocatedMemory());
            }
            assertEquals(0, pinned.pool().lentBlocks());
        }
        assertEquals(start.pinnedBytesOutstanding(), CudaCounters.snapshot().pinnedBytesOutstanding());
    }

    @Test
    @RequiresCuda
    void aReleasedBufferIsNoLongerPinnedAndAClosedMemoryRefusesAllocators() {
        PinnedArrowMemory pinned = PinnedArrowMemory.create();
        try (BufferAllocator allocator = pinned.newRootAllocator()) {
            ArrowBuf buf = allocator.buffer(1000);
            assertTrue(PinnedArrowMemory.isPinned(buf));
            buf.close();
            assertFalse(PinnedArrowMemory.isPinned(buf));
        }
        pinned.close();
        assertThrows(org.devicebridge.HandleClosedException.class, pinned::newRootAllocator);
    }
}
