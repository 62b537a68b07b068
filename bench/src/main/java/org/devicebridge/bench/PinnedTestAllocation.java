package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.cuda.PinnedHostBuffer;

/**
 * An Arrow Java allocator of pinned host memory ({@link PinnedHostBuffer}s, kept and reused by size when
 * released, so that a steady state of equal batches calls no {@code cuMemHostAlloc}), standing in for the
 * pinned allocation manager of issue 14 until it lands: a root built in it is page-locked, so uploads and
 * downloads need no staging. Closing the factory frees the kept memory. Thread-safe; not for production.
 */
final class PinnedTestAllocation implements AllocationManager.Factory, AutoCloseable {
    private static final long EMPTY_ADDRESS = Arena.global().allocate(64, 64).address();

    private final List<PinnedHostBuffer> free = new ArrayList<>();

    /**
     * A root allocator whose memory comes from this factory; the caller closes it before the factory.
     *
     * @return a new allocator
     */
    RootAllocator newAllocator() {
        return new RootAllocator(RootAllocator.configBuilder().allocationManagerFactory(this).build());
    }

    @Override
    public AllocationManager create(BufferAllocator accountingAllocator, long size) {
        PinnedHostBuffer memory = null;
        synchronized (free) {
            for (int i = 0; i < free.size(); i++) {
                long have = free.get(i).byteSize();
                if (have >= size && have <= 2 * size + 4096) {
                    memory = free.remove(i);
                    break;
                }
            }
        }
        if (memory == null) {
            memory = PinnedHostBuffer.allocate(Math.max(64, size));
        }
        return new Manager(accountingAllocator, memory, size, this);
    }

    @Override
    public ArrowBuf empty() {
        return new ArrowBuf(ReferenceManager.NO_OP, null, 0, EMPTY_ADDRESS);
    }

    private void giveBack(PinnedHostBuffer memory) {
        synchronized (free) {
            free.add(memory);
        }
    }

    /** Frees the memory kept for reuse; memory still allocated is freed by its own release. */
    @Override
    public void close() {
        synchronized (free) {
            free.forEach(PinnedHostBuffer::close);
            free.clear();
        }
    }

    private static final class Manager extends AllocationManager {
        private final PinnedHostBuffer memory;
        private final long size;
        private final PinnedTestAllocation owner;

        Manager(BufferAllocator accountingAllocator, PinnedHostBuffer memory, long size, PinnedTestAllocation owner) {
            super(accountingAllocator);
            this.memory = memory;
            this.size = size;
            this.owner = owner;
        }

        @Override
        public long getSize() {
            return size;
        }

        @Override
        protected long memoryAddress() {
            return memory.segment().address();
        }

        @Override
        protected void release0() {
            owner.giveBack(memory);
        }
    }
}
