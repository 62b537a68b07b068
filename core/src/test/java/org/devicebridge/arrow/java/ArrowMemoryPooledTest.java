package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.devicebridge.InvalidArgumentException;
import org.junit.jupiter.api.Test;

/**
 * {@link ArrowMemory#pooled pooled Arrow memory}: freed large blocks are kept up to the capacity (oldest given back first) and
 * reused by the next buffer of their size, small ones are not; accounting stays exact; trim and close give
 * the blocks back; large blocks are whole, aligned huge pages.
 */
class ArrowMemoryPooledTest {
    private static final long MIB = 1L << 20;

    @Test
    void aFreedLargeBlockServesTheNextBufferOfItsSize() {
        long live = ArrowMemory.liveBytes();
        try (ArrowMemory memory = ArrowMemory.pooled(64 * MIB);
             RootAllocator allocator = memory.newPooledRootAllocator()) {
            long address;
            try (ArrowBuf b = allocator.buffer(20 * MIB)) {
                address = b.memoryAddress();
                assertEquals(0, address % FfmAllocationManager.HUGE_PAGE, "large blocks start on a huge page");
                assertEquals(20 * MIB, allocator.getAllocatedMemory(), "accounting: the size asked for");
                b.setLong(20 * MIB - 8, 42);
            }
            assertEquals(0, allocator.getAllocatedMemory());
            assertEquals(20 * MIB, memory.keptBytes(), "the block is kept, in whole huge pages");
            try (ArrowBuf again = allocator.buffer(20 * MIB)) {
                assertEquals(address, again.memoryAddress(), "reused");
                assertEquals(0, memory.keptBytes());
            }
            try (ArrowBuf small = allocator.buffer(MIB)) {
                small.setByte(0, 1);
            }
            assertEquals(20 * MIB, memory.keptBytes(), "blocks below 2 MiB are libc's to reuse");
            memory.trim();
            assertEquals(0, memory.keptBytes());
        }
        assertEquals(live, ArrowMemory.liveBytes());
    }

    @Test
    void theOldestBlocksGoBackFirstAndBlocksOverTheCapacityAreNotKept() {
        try (ArrowMemory memory = ArrowMemory.pooled(10 * MIB);
             RootAllocator allocator = memory.newPooledRootAllocator()) {
            ArrowBuf a = allocator.buffer(4 * MIB);
            ArrowBuf b = allocator.buffer(8 * MIB);
            ArrowBuf huge = allocator.buffer(16 * MIB);
            long aAddress = a.memoryAddress();
            a.close();
            b.close(); // 4 + 8 > 10: the 4 MiB block (the oldest) goes back
            assertEquals(8 * MIB, memory.keptBytes());
            huge.close();
            assertEquals(8 * MIB, memory.keptBytes(), "larger than the capacity: given back");
            try (ArrowBuf c = allocator.buffer(4 * MIB)) {
                assertEquals(8 * MIB, memory.keptBytes(), "no 4 MiB block kept any more");
                assertNotEquals(0, c.memoryAddress());
            }
            assertEquals(4 * MIB, memory.keptBytes(), "the 8 MiB block (now the oldest) gave way to the 4 MiB one");
            try (ArrowBuf d = allocator.buffer(4 * MIB)) {
                assertEquals(0, memory.keptBytes(), "and serves the next 4 MiB buffer");
                assertNotEquals(aAddress, 0);
            }
        }
    }

    @Test
    void afterCloseTheAllocatorsStillWorkAndKeepNothing() {
        ArrowMemory memory = ArrowMemory.pooled(64 * MIB);
        try (RootAllocator allocator = memory.newPooledRootAllocator()) {
            try (BigIntVector v = new BigIntVector("v", allocator)) {
                v.allocateNew(4 << 20); // 32 MiB of values
                v.setSafe((4 << 20) - 1, 7);
                v.setValueCount(4 << 20);
                assertEquals(7, v.get((4 << 20) - 1));
            }
            long kept = memory.keptBytes();
            assertEquals(0, kept % FfmAllocationManager.HUGE_PAGE, "whole huge pages");
            assertEquals(true, kept >= 32 * MIB, "the 32 MiB of values kept: " + kept);
            memory.close();
            memory.close(); // idempotent
            assertEquals(0, memory.keptBytes());
            try (ArrowBuf b = allocator.buffer(4 * MIB)) {
                b.setByte(0, 1);
            }
            assertEquals(0, memory.keptBytes(), "nothing kept after close");
        }
    }

    @Test
    void aNegativeCapacityIsTyped() {
        assertThrows(InvalidArgumentException.class, () -> ArrowMemory.pooled(-1));
    }
}
