package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import org.devicebridge.internal.CacheLinePadding;
import org.devicebridge.internal.HandleCleaner;
import org.devicebridge.internal.Native;

/**
 * The malloc blocks export writes a managed tensor into (struct, shape, strides). A tensor exported and
 * imported here ({@link DLPack#importTensor}) frees its block right after the import, usually on the
 * thread that exported it; so each platform thread keeps the last small block it freed for its next
 * export, which then needs no malloc and no free downcall. Everything else goes to malloc and free.
 *
 * <p>Small blocks are all {@value #SMALL} bytes (a versioned tensor of up to 11 dimensions), so that any
 * small request fits a kept one; every block is a real malloc block, so a native consumer frees it with
 * the deleter as any other. A thread keeps at most one block, freed when the thread is gone (its
 * {@link Thread} unreachable). Virtual threads keep none.
 */
final class StructBlocks {
    /** Bytes of every small block. */
    static final long SMALL = 256;

    /**
     * One thread's kept block; only that thread touches it while it runs, the cleaner after it died. The
     * slot holds its block only while {@code kept}; otherwise {@code block} is the last block it held, maybe
     * in use or freed since, never read. A round trip that gives the same block back writes only the flag:
     * storing a reference into this long-lived object costs a GC card mark, which contends across threads.
     */
    private static class SlotFields extends CacheLinePadding {
        MemorySegment block;
        boolean kept;
    }

    /** A {@link SlotFields} padded after its fields too: written on every round trip, by its thread alone. */
    @SuppressWarnings("unused")
    private static final class Slot extends SlotFields implements Runnable {
        private long q0, q1, q2, q3, q4, q5, q6, q7;

        /** Frees the kept block once the thread is gone. */
        @Override
        public void run() {
            if (kept) {
                kept = false;
                Native.reused(block);
                Native.free(block);
            }
        }
    }

    private static final ThreadLocal<Slot> SLOTS = ThreadLocal.withInitial(() -> {
        Slot slot = new Slot();
        HandleCleaner.register(Thread.currentThread(), slot);
        return slot;
    });

    private StructBlocks() {}

    /** A block of at least {@code bytes} bytes, uninitialised; give it back with {@link #free}. */
    static MemorySegment allocate(long bytes) {
        if (bytes > SMALL) {
            return Native.malloc(bytes);
        }
        if (!Thread.currentThread().isVirtual()) {
            Slot slot = SLOTS.get();
            if (slot.kept) {
                slot.kept = false;
                Native.reused(slot.block);
                return slot.block;
            }
        }
        return Native.malloc(SMALL);
    }

    /** Frees a block from {@link #allocate}, or keeps it for this thread's next export. */
    static void free(MemorySegment block) {
        if (block.byteSize() == SMALL && !Thread.currentThread().isVirtual()) {
            Slot slot = SLOTS.get();
            if (!slot.kept) {
                Native.kept(block); // counted as the thread's, not as a leak
                if (slot.block != block) {
                    slot.block = block;
                }
                slot.kept = true;
                return;
            }
        }
        Native.free(block);
    }
}
