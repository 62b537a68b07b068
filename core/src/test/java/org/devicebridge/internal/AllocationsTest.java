package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** The exact count: every allocation shows, every free takes it back, a pool's idle block is the pool's. */
class AllocationsTest {
    @Test
    void everyMallocCallocAndAlignedBlockIsCountedUntilFreed() {
        Allocations.Snapshot before = Allocations.inUse();
        MemorySegment a = Native.malloc(24);
        MemorySegment b = Native.calloc(1000);
        MemorySegment c = Native.alignedAlloc(64, 4096);
        Allocations.Snapshot held = Allocations.inUse().minus(before);
        assertEquals(3, held.blocks(Allocations.Kind.HEAP));
        assertTrue(held.bytes(Allocations.Kind.HEAP) >= 24 + 1000 + 4096, held.toString());
        Native.free(a);
        Native.free(MemorySegment.ofAddress(b.address())); // freed by address only: the size is the block's own
        Native.free(c);
        Native.free(MemorySegment.NULL); // as in C: nothing
        assertTrue(Allocations.inUse().minus(before).isZero(), () -> Allocations.inUse().minus(before).toString());
    }

    @Test
    void aKeptBlockIsThePoolsAndInUseAgainWhenReused() {
        Allocations.Snapshot before = Allocations.inUse();
        MemorySegment block = Native.malloc(256);
        Native.kept(block);
        assertTrue(Allocations.inUse().minus(before).isZero(), "a pool's idle block is not in use");
        Native.reused(block);
        assertEquals(1, Allocations.inUse().minus(before).blocks(Allocations.Kind.HEAP));
        Native.free(block);
        assertTrue(Allocations.inUse().minus(before).isZero());
    }

    @Test
    void aTrackedArenaCountsUntilItClosesAndAFailedCloseKeepsIt() {
        Allocations.Snapshot before = Allocations.inUse();
        Arena arena = Allocations.track(Arena.ofShared());
        assertEquals(1, Allocations.inUse().minus(before).blocks(Allocations.Kind.ARENA));
        arena.close();
        assertTrue(Allocations.inUse().minus(before).isZero());
        assertThrows(IllegalStateException.class, () -> Allocations.track(arena), "a closed arena is not counted");
        assertTrue(Allocations.inUse().minus(before).isZero());
    }

    @Test
    void aDifferenceNamesWhatGrew() {
        Allocations.Snapshot before = Allocations.inUse();
        MemorySegment a = Native.malloc(8);
        try {
            Allocations.Snapshot growth = Allocations.inUse().minus(before);
            assertTrue(growth.hasGrowth());
            assertFalse(growth.isZero());
            assertTrue(growth.describe(true).startsWith("1 malloc block(s)"), growth.describe(true));
        } finally {
            Native.free(a);
        }
    }
}
