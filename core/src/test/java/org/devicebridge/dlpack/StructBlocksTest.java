package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The per-thread kept struct block: reused by the thread's next export, never shared, never for large ones. */
class StructBlocksTest {

    @Test
    void aFreedSmallBlockIsReusedByTheSameThreadOnly() throws Exception {
        MemorySegment a = StructBlocks.allocate(144);
        assertTrue(a.byteSize() >= 144);
        StructBlocks.free(a);
        MemorySegment b = StructBlocks.allocate(80);
        assertEquals(a.address(), b.address(), "the kept block comes back");
        MemorySegment c = StructBlocks.allocate(80);
        assertNotEquals(b.address(), c.address(), "a thread keeps one block, handed out once");
        StructBlocks.free(b);
        AtomicLong other = new AtomicLong();
        Thread t = new Thread(() -> {
            MemorySegment d = StructBlocks.allocate(80);
            other.set(d.address());
            StructBlocks.free(d);
        });
        t.start();
        t.join();
        assertNotEquals(b.address(), other.get(), "another thread never gets this thread's block");
        StructBlocks.free(c); // the slot is taken: freed
        StructBlocks.free(StructBlocks.allocate(80)); // leave one block kept, as the library does
    }

    @Test
    void theSlotKeepsWhicheverBlockWasFreedWhileItsOwnWasOut() {
        MemorySegment first = StructBlocks.allocate(80); // the kept block, if any, or a new one
        MemorySegment second = StructBlocks.allocate(80); // the slot is empty: a new block
        StructBlocks.free(second);
        MemorySegment again = StructBlocks.allocate(80);
        assertEquals(second.address(), again.address(), "the block freed last is the one kept");
        StructBlocks.free(first); // the slot is empty again: now it keeps the first block
        MemorySegment third = StructBlocks.allocate(80);
        assertEquals(first.address(), third.address(), "the slot changed blocks");
        StructBlocks.free(again); // the slot is empty: kept
        StructBlocks.free(third); // the slot holds one already: freed
        MemorySegment kept = StructBlocks.allocate(80);
        assertEquals(again.address(), kept.address());
        StructBlocks.free(kept);
    }

    @Test
    void largeBlocksAreExactAndSmallOnesShareOneSize() {
        MemorySegment big = StructBlocks.allocate(StructBlocks.SMALL + 8);
        assertEquals(StructBlocks.SMALL + 8, big.byteSize());
        StructBlocks.free(big);
        MemorySegment small = StructBlocks.allocate(8);
        assertEquals(StructBlocks.SMALL, small.byteSize(), "every small block has the one small size");
        StructBlocks.free(small);
    }

    @Test
    void aVirtualThreadAllocatesAndFreesWithoutAKeptBlock() throws Exception {
        AtomicLong size = new AtomicLong();
        Thread.ofVirtual().start(() -> {
            MemorySegment x = StructBlocks.allocate(80);
            size.set(x.byteSize());
            StructBlocks.free(x); // freed at once: a virtual thread has no slot
        }).join();
        assertEquals(StructBlocks.SMALL, size.get());
    }
}
