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
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.Native;

/**
 * One Arrow Java allocation on the FFM API: {@code aligned_alloc} of the requested size rounded up to
 * {@value #ALIGNMENT} bytes (a downcall: no arena, so freeing costs no handshake), {@code free} when Arrow
 * releases the last reference. {@link #getSize()} is the size Arrow asked for (after its own rounding
 * policy), so the allocator's accounting is exact; the padding is not accounted. Small blocks go back to
 * libc's heap, which reuses them. Blocks of {@value #HUGE_PAGE} bytes or more are rounded to whole 2 MiB
 * huge pages, aligned to them and advised as huge pages ({@code MADV_HUGEPAGE}): their first touch faults
 * once per 2 MiB (fresh memory fills about 3x faster); they come from {@code mmap} inside libc and go back
 * to the OS on {@code free}, unless a {@link HostBlockCache} (of a pooled {@link ArrowMemory}) keeps them
 * for the next allocation of the same size.
 *
 * <p>Thread-safe as Arrow requires: Arrow calls {@link #release0()} once, under its ledger's lock; a
 * second call (which Arrow never makes) frees nothing.
 */
final class FfmAllocationManager extends AllocationManager {
    /** Alignment of every buffer: Arrow's recommendation (and a cache line). */
    static final long ALIGNMENT = 64;
    /** From this size on a block is whole huge pages (Linux's transparent huge page size on x86-64 and most arm64). */
    static final long HUGE_PAGE = 2L << 20;

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

    static final AllocationManager.Factory FACTORY = factory(null);

    /**
     * A root allocator over {@code factory}, at most {@code limit} bytes. Here rather than in {@link ArrowMemory}:
     * passing the built configuration makes the verifier load Arrow's {@code BaseAllocator.Config}, and a public
     * class whose verification needs Arrow Java could not throw {@link org.devicebridge.ArrowJavaUnavailableException} first.
     */
    static RootAllocator newRootAllocator(AllocationManager.Factory factory, long limit) {
        return new RootAllocator(RootAllocator.configBuilder().allocationManagerFactory(factory).maxAllocation(limit).build());
    }

    /** A factory whose large blocks {@code cache} keeps for reuse ({@code null}: none kept). */
    static AllocationManager.Factory factory(HostBlockCache cache) {
        return new AllocationManager.Factory() {
            @Override
            public AllocationManager create(BufferAllocator accountingAllocator, long size) {
                return allocate(accountingAllocator, size, cache);
            }

            @Override
            public ArrowBuf empty() {
                return Empty.BUFFER;
            }

            @Override
            public String toString() {
                return cache == null ? "devicebridge FFM allocation manager factory"
                        : "devicebridge FFM allocation manager factory (pooled)";
            }
        };
    }

    private final long size;
    private final long blockSize;
    private final HostBlockCache cache;
    @SuppressWarnings("unused") // written through ADDRESS
    private volatile long address;

    private FfmAllocationManager(BufferAllocator accountingAllocator, long address, long size, long blockSize,
                                 HostBlockCache cache) {
        super(accountingAllocator);
        this.address = address;
        this.size = size;
        this.blockSize = blockSize;
        this.cache = cache;
    }

    /** Allocates (or takes a kept block) first, then associates with the allocator (giving it back if that fails). */
    private static FfmAllocationManager allocate(BufferAllocator accountingAllocator, long size, HostBlockCache cache) {
        if (size < 0) {
            throw new IllegalArgumentException("expected a size >= 0 but found " + size);
        }
        long padded = paddedSize(size);
        boolean huge = padded >= HUGE_PAGE;
        long block = huge ? Math.addExact(padded, HUGE_PAGE - 1) & -HUGE_PAGE : padded;
        long kept = huge && cache != null ? cache.take(block) : 0;
        MemorySegment p;
        if (kept != 0) {
            p = MemorySegment.ofAddress(kept);
        } else {
            long alignment = huge ? HUGE_PAGE : ALIGNMENT;
            try {
                p = Native.alignedAlloc(alignment, block);
            } catch (RuntimeException e) { // a missing native-access grant, named
                throw NativeCalls.rethrow("aligned_alloc", e);
            }
            if (p.equals(MemorySegment.NULL)) {
                throw new OutOfMemoryException("aligned_alloc(" + alignment + ", " + block + ") returned NULL");
            }
            if (huge) {
                Native.adviseHugePages(p, block); // a hint: refused, the block is simply made of small pages
            }
        }
        try {
            FfmAllocationManager m = new FfmAllocationManager(accountingAllocator, p.address(), size, block,
                    huge ? cache : null);
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
            if (cache == null || !cache.offer(a, blockSize)) {
                Native.free(MemorySegment.ofAddress(a));
            }
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
