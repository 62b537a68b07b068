package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
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

    /** One thread's kept block; only that thread touches it while it runs, the cleaner after it died. */
    private static final class Slot implements Runnable {
        MemorySegment block;

        /** Frees the kept block once the thread is gone. */
        @Override
        public void run() {
            MemorySegment b = block;
            block = null;
            if (b != null) {
                Native.reused(b);
                Native.free(b);
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
            MemorySegment b = slot.block;
            if (b != null) {
                slot.block = null;
                Native.reused(b);
                return b;
            }
        }
        return Native.malloc(SMALL);
    }

    /** Frees a block from {@link #allocate}, or keeps it for this thread's next export. */
    static void free(MemorySegment block) {
        if (block.byteSize() == SMALL && !Thread.currentThread().isVirtual()) {
            Slot slot = SLOTS.get();
            if (slot.block == null) {
                Native.kept(block); // counted as the thread's, not as a leak
                slot.block = block;
                return;
            }
        }
        Native.free(block);
    }
}
