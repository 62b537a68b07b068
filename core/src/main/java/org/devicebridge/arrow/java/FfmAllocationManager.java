package org.devicebridge.arrow.java;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.LongAdder;
import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.ReferenceManager;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.Native;

/**
 * One Arrow Java allocation on the FFM API: {@code aligned_alloc} of the requested size rounded up to
 * {@value #ALIGNMENT} bytes (a downcall: no arena, so freeing costs no handshake), {@code free} when Arrow
 * releases the last reference. {@link #getSize()} is the size Arrow asked for (after its own rounding
 * policy), so the allocator's accounting is exact; the padding to the next multiple of {@value #ALIGNMENT}
 * is not accounted. Large blocks come from {@code mmap} inside libc and go back to the OS on {@code free};
 * small ones go back to libc's heap, which reuses them.
 *
 * <p>Thread-safe as Arrow requires: Arrow calls {@link #release0()} once, under its ledger's lock; a
 * second call (which Arrow never makes) frees nothing.
 */
final class FfmAllocationManager extends AllocationManager {
    /** Alignment of every buffer: Arrow's recommendation (and a cache line). */
    static final long ALIGNMENT = 64;

    private static final LongAdder LIVE_BYTES = new LongAdder();
    private static final LongAdder LIVE_ALLOCATIONS = new LongAdder();
    private static final VarHandle ADDRESS;

    static {
        try {
            ADDRESS = MethodHandles.lookup().findVarHandle(FfmAllocationManager.class, "address", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * The zero-length buffer, at a real, aligned address that is never freed. In a holder: an {@code ArrowBuf}
     * initialises {@code BaseAllocator}, which must not happen before {@link #FACTORY} is Arrow's default.
     */
    private static final class Empty {
        static final ArrowBuf BUFFER = new ArrowBuf(ReferenceManager.NO_OP, null, 0,
                Arena.global().allocate(ALIGNMENT, ALIGNMENT).address());
    }

    static final AllocationManager.Factory FACTORY = new AllocationManager.Factory() {
        @Override
        public AllocationManager create(BufferAllocator accountingAllocator, long size) {
            return allocate(accountingAllocator, size);
        }

        @Override
        public ArrowBuf empty() {
            return Empty.BUFFER;
        }

        @Override
        public String toString() {
            return "devicebridge FFM allocation manager factory";
        }
    };

    private final long size;
    @SuppressWarnings("unused") // written through ADDRESS
    private volatile long address;

    private FfmAllocationManager(BufferAllocator accountingAllocator, long address, long size) {
        super(accountingAllocator);
        this.address = address;
        this.size = size;
    }

    /** Allocates first, then associates with the allocator (freeing again if that fails). */
    private static FfmAllocationManager allocate(BufferAllocator accountingAllocator, long size) {
        if (size < 0) {
            throw new IllegalArgumentException("expected a size >= 0 but found " + size);
        }
        long padded = paddedSize(size);
        MemorySegment p;
        try {
            p = Native.alignedAlloc(ALIGNMENT, padded);
        } catch (RuntimeException e) { // a missing native-access grant, named
            throw NativeCalls.rethrow("aligned_alloc", e);
        }
        if (p.equals(MemorySegment.NULL)) {
            throw new OutOfMemoryException("aligned_alloc(" + ALIGNMENT + ", " + padded + ") returned NULL");
        }
        try {
            FfmAllocationManager m = new FfmAllocationManager(accountingAllocator, p.address(), size);
            LIVE_BYTES.add(size);
            LIVE_ALLOCATIONS.increment();
            return m;
        } catch (RuntimeException | Error e) {
            Native.free(p);
            throw e;
        }
    }

    /** {@code size} rounded up to a multiple of {@link #ALIGNMENT} (at least one), as aligned_alloc wants. */
    static long paddedSize(long size) {
        return Math.max(ALIGNMENT, Math.addExact(size, ALIGNMENT - 1) & -ALIGNMENT);
    }

    @Override
    public long getSize() {
        return size;
    }

    @Override
    protected long memoryAddress() {
        return (long) ADDRESS.getVolatile(this);
    }

    @Override
    protected void release0() {
        long a = (long) ADDRESS.getAndSet(this, 0L);
        if (a != 0) {
            Native.free(MemorySegment.ofAddress(a));
            LIVE_BYTES.add(-size);
            LIVE_ALLOCATIONS.decrement();
        }
    }

    /** Bytes held by live allocations of this manager (their {@link #getSize()}s), process-wide. */
    static long liveBytes() {
        return LIVE_BYTES.sum();
    }

    /** Live allocations of this manager, process-wide. */
    static long liveAllocations() {
        return LIVE_ALLOCATIONS.sum();
    }
}
