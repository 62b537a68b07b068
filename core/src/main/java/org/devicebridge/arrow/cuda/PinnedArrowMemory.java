package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.BufferLedger;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.PinnedHostPool;

/**
 * Arrow Java memory in page-locked host memory: an allocation manager whose buffers are blocks of a
 * {@link PinnedHostPool}, so that a {@code VectorSchemaRoot} built in an allocator of
 * {@link #newRootAllocator()} can be copied to and from the GPU by the copy engine directly, with no
 * staging copy. The steady state calls no {@code cuMemHostAlloc}: a released buffer's block goes back to
 * the pool and serves the next buffer of its size class.
 *
 * <p>{@link #isPinned(ArrowBuf)} tells the transfer code, in O(1), whether a buffer (or a slice of one) is
 * such memory. Accounting is exact, as with {@link ArrowMemory}: an allocation's {@code getSize()} is the
 * size Arrow asked for; the pool's block may be larger ({@link PinnedHostPool#blockSize(long)}).
 *
 * <p>Ownership: the caller owns this object and its pool, and closes it after the allocators made from it
 * (closing an allocator reports leaked buffers, as Arrow does). {@link #close()} frees the pinned memory
 * when no buffer is left, otherwise once the last one is released. Thread-safe.
 */
public final class PinnedArrowMemory implements AutoCloseable {
    private final PinnedHostPool pool;
    private final AllocationManager.Factory factory;

    private PinnedArrowMemory(PinnedHostPool pool) {
        this.pool = pool;
        this.factory = Factory.of(pool);
    }

    /**
     * Pinned Arrow memory over a new, empty pool.
     *
     * @return an object the caller owns and closes
     * @throws CudaUnavailableException without a CUDA driver (the plain FFM memory of {@link ArrowMemory}
     *         works there)
     */
    public static PinnedArrowMemory create() {
        requireNativeAccess();
        requireArrowJava("PinnedArrowMemory.create");
        return new PinnedArrowMemory(PinnedHostPool.create());
    }

    /**
     * Pinned Arrow memory over a new, empty pool whose large blocks are used {@code rotation} in turn (see
     * {@link PinnedHostPool}: downloads into a block freed several batches ago run at the link's rate; 1 saves
     * that memory).
     *
     * @param rotation how many blocks of one large size class the pool uses in turn, {@code >= 1}
     * @return an object the caller owns and closes
     * @throws org.devicebridge.InvalidArgumentException if {@code rotation < 1}
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static PinnedArrowMemory create(int rotation) {
        requireNativeAccess();
        requireArrowJava("PinnedArrowMemory.create");
        return new PinnedArrowMemory(PinnedHostPool.create(rotation));
    }

    /**
     * The allocation manager factory, for {@code RootAllocator.configBuilder().allocationManagerFactory(...)}.
     *
     * @return this memory's factory (its allocations fail with
     *         {@link org.devicebridge.HandleClosedException} once this object is closed)
     */
    public AllocationManager.Factory factory() {
        return factory;
    }

    /**
     * A root allocator over this pinned memory with no limit (Arrow Java is made ready first, as by
     * {@link ArrowMemory#newRootAllocator()}).
     *
     * @return a new allocator the caller owns and closes before this object
     * @throws org.devicebridge.HandleClosedException if this object was closed
     * @throws org.devicebridge.ArrowJavaUnavailableException if Arrow Java cannot initialise
     */
    public RootAllocator newRootAllocator() {
        return newRootAllocator(Long.MAX_VALUE);
    }

    /**
     * A root allocator over this pinned memory, limited to {@code limit} bytes.
     *
     * @param limit the most bytes the allocator may hold at once, {@code > 0}
     * @return a new allocator the caller owns and closes before this object
     * @throws InvalidArgumentException if {@code limit <= 0}
     * @throws org.devicebridge.HandleClosedException if this object was closed
     * @throws org.devicebridge.ArrowJavaUnavailableException if Arrow Java cannot initialise
     */
    public RootAllocator newRootAllocator(long limit) {
        if (!pool.isLive()) {
            throw new org.devicebridge.HandleClosedException("pinned Arrow memory is closed");
        }
        return ArrowMemory.newRootAllocator(factory, limit);
    }

    /**
     * The pool the buffers come from (owned by this object: do not close it directly).
     *
     * @return the pool
     */
    public PinnedHostPool pool() {
        return pool;
    }

    /**
     * Whether {@code buffer} is pinned memory of this object's pool (see {@link #isPinned(ArrowBuf)}).
     *
     * @param buffer any Arrow buffer
     * @return {@code true} if its bytes are a live block of this pool
     */
    public boolean owns(ArrowBuf buffer) {
        PinnedAllocation a = allocationOf(buffer);
        return a != null && a.pool == pool && a.covers(buffer);
    }

    /**
     * Whether {@code buffer} (or the slice of a buffer it is) lies in pinned memory of any
     * {@code PinnedArrowMemory}, with a reference still held: the copy engine may then read and write its
     * bytes directly. O(1): the buffer's allocation is asked, no address is looked up. A buffer wrapping
     * pinned memory some other way (an import) answers {@code false}; ask the driver
     * ({@code PointerAttributes}) for those.
     *
     * @param buffer any Arrow buffer
     * @return {@code true} if every byte of it is pinned memory of a pool
     */
    public static boolean isPinned(ArrowBuf buffer) {
        requireArrowJava("PinnedArrowMemory.isPinned");
        PinnedAllocation a = allocationOf(buffer);
        return a != null && a.covers(buffer);
    }

    private static PinnedAllocation allocationOf(ArrowBuf buffer) {
        ReferenceManager rm = Objects.requireNonNull(buffer, "buffer").getReferenceManager();
        return rm instanceof BufferLedger ledger && ledger.getAllocationManager() instanceof PinnedAllocation a
                ? a : null;
    }

    /**
     * Closes the pool: its pinned memory is freed now if no buffer is left, otherwise when the last buffer
     * is released. Idempotent.
     */
    @Override
    public void close() {
        pool.close();
    }

    /** The factory: one pool block per allocation. */
    private record Factory(PinnedHostPool pool) implements AllocationManager.Factory {
        /**
         * Here, not in the constructor: widening a {@code Factory} to Arrow's interface makes the verifier load
         * Arrow, and the outer class must verify without Arrow Java to throw its typed exception.
         */
        static AllocationManager.Factory of(PinnedHostPool pool) {
            return new Factory(pool);
        }

        @Override
        public AllocationManager create(BufferAllocator accountingAllocator, long size) {
            MemorySegment block = pool.allocate(size);
            try {
                return new PinnedAllocation(accountingAllocator, pool, block, size);
            } catch (RuntimeException | Error e) {
                pool.free(block);
                throw e;
            }
        }

        @Override
        public ArrowBuf empty() {
            return Empty.BUFFER;
        }
    }

    /** The zero-length buffer (no memory behind it; in a holder, as an ArrowBuf initialises BaseAllocator). */
    private static final class Empty {
        static final ArrowBuf BUFFER = new ArrowBuf(ReferenceManager.NO_OP, null, 0,
                Arena.global().allocate(64, 64).address());
    }

    /** One Arrow allocation: a block of the pool, given back when Arrow releases its last reference. */
    private static final class PinnedAllocation extends AllocationManager {
        private static final VarHandle BLOCK;

        static {
            try {
                BLOCK = MethodHandles.lookup().findVarHandle(PinnedAllocation.class, "block", MemorySegment.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final PinnedHostPool pool;
        private final long address;
        private final long size;
        @SuppressWarnings("unused") // through BLOCK; null once given back
        private volatile MemorySegment block;

        PinnedAllocation(BufferAllocator accountingAllocator, PinnedHostPool pool, MemorySegment block, long size) {
            super(accountingAllocator);
            this.pool = pool;
            this.block = block;
            this.address = block.address();
            this.size = size;
        }

        boolean covers(ArrowBuf buffer) {
            long offset = buffer.memoryAddress() - address;
            return BLOCK.getVolatile(this) != null && buffer.refCnt() > 0
                    && offset >= 0 && buffer.capacity() <= size - offset;
        }

        @Override
        public long getSize() {
            return size;
        }

        @Override
        protected long memoryAddress() {
            return address;
        }

        @Override
        protected void release0() {
            MemorySegment b = (MemorySegment) BLOCK.getAndSet(this, (MemorySegment) null);
            if (b != null) {
                pool.free(b);
            }
        }
    }
}
