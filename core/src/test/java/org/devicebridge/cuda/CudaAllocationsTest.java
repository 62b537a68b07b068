package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.devicebridge.Device;
import org.devicebridge.internal.Allocations;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/**
 * The exact leak count sees device and pinned memory: a device allocation, a pinned buffer and a block lent
 * by a pinned pool count until freed; a pool's slabs are the pool's, not in use.
 */
@RequiresCuda
class CudaAllocationsTest {
    @Test
    void aDeviceAllocationCountsUntilClosed() {
        Allocations.Snapshot before = Allocations.inUse();
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(0), 1 << 20)) {
            Allocations.Snapshot held = Allocations.inUse().minus(before);
            assertEquals(1, held.blocks(Allocations.Kind.DEVICE), held.toString());
            assertEquals(1 << 20, held.bytes(Allocations.Kind.DEVICE), held.toString());
            assertEquals(1, held.handles(), held.toString());
        }
        assertTrue(Allocations.inUse().minus(before).isZero(), () -> Allocations.inUse().minus(before).toString());
    }

    @Test
    void aPinnedBufferCountsUntilClosed() {
        Allocations.Snapshot before = Allocations.inUse();
        try (PinnedHostBuffer b = PinnedHostBuffer.allocate(4096)) {
            b.segment().fill((byte) 1); // makes the handle's own arena: counted too
            Allocations.Snapshot held = Allocations.inUse().minus(before);
            assertEquals(1, held.blocks(Allocations.Kind.PINNED), held.toString());
            assertEquals(4096, held.bytes(Allocations.Kind.PINNED), held.toString());
            assertEquals(1, held.blocks(Allocations.Kind.ARENA), held.toString());
        }
        assertTrue(Allocations.inUse().minus(before).isZero(), () -> Allocations.inUse().minus(before).toString());
    }

    @Test
    void aPoolsSlabsAreThePoolsAndALentBlockIsInUse() {
        Allocations.Snapshot before = Allocations.inUse();
        try (PinnedHostPool pool = PinnedHostPool.create()) {
            Allocations.Snapshot withPool = Allocations.inUse();
            MemorySegment block = pool.allocate(1000);
            Allocations.Snapshot lent = Allocations.inUse().minus(withPool);
            assertEquals(1, lent.blocks(Allocations.Kind.POOL_BLOCK), lent.toString());
            assertEquals(1024, lent.bytes(Allocations.Kind.POOL_BLOCK), lent.toString());
            assertEquals(0, lent.blocks(Allocations.Kind.PINNED), "the slab is the pool's: " + lent);
            assertEquals(0, lent.handles(), "the slab's handle is the pool's: " + lent);
            pool.free(block);
            assertTrue(Allocations.inUse().minus(withPool).isZero(), "the idle slab is not in use: "
                    + Allocations.inUse().minus(withPool));
            assertTrue(Allocations.pooled().blocks(Allocations.Kind.PINNED) >= 1, "the pool keeps its slab");
        }
        assertTrue(Allocations.inUse().minus(before).isZero(), () -> Allocations.inUse().minus(before).toString());
    }
}
