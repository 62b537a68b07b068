package org.devicebridge.arrow.java;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import org.apache.arrow.memory.AllocationManager;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;

/**
 * Arrow Java memory on FFM, as {@link ArrowMemory}'s, that keeps freed large blocks (2 MiB and more) for
 * the next buffers of the same size, up to a capacity, instead of giving them back to the OS at once. A
 * buffer made from a kept block was touched before, so filling it costs no page faults: downloading a
 * 1 GiB batch from the GPU into a fresh root of such an allocator runs at the speed of the copy, not of
 * the kernel's page-fault path (several times slower on fresh pages; see bench/RESULTS.md). It is what Netty's pooled allocator does
 * for small buffers, for the large ones that batches moved to and from a GPU are made of. Small blocks
 * behave exactly as with {@link ArrowMemory} (libc's heap reuses them).
 *
 * <p>The memory a batch used stays with this object (at most {@link #capacity()} bytes, oldest given back
 * first) until {@link #trim()} or {@link #close()}; the allocators' accounting counts only buffers in use,
 * exactly as with {@link ArrowMemory}.
 *
 * <p>Ownership: the caller owns this object and closes it, typically after the allocators made from it;
 * closing gives the kept blocks back to the OS, and from then on its allocators still work but keep
 * nothing (each buffer's memory goes back when Arrow releases it). A forgotten object is reported as a
 * leak and its blocks are given back by the library's Cleaner. Thread-safe.
 */
public final class PooledArrowMemory extends NativeHandle {
    private final HostBlockCache cache;
    private final AllocationManager.Factory factory;
    private final long capacity;

    private PooledArrowMemory(HostBlockCache cache, long capacity) {
        super("pooled Arrow memory (" + capacity + " bytes kept at most)", cache::close);
        this.cache = cache;
        this.capacity = capacity;
        this.factory = FfmAllocationManager.factory(cache);
    }

    /**
     * Pooled Arrow memory that keeps up to {@code capacity} bytes of freed blocks.
     *
     * @param capacity the most bytes kept for reuse, {@code >= 0} (0 keeps nothing)
     * @return an object the caller owns and closes
     * @throws InvalidArgumentException if {@code capacity} is negative
     */
    public static PooledArrowMemory create(long capacity) {
        requireNativeAccess();
        requireArrowJava("PooledArrowMemory.create");
        if (capacity < 0) {
            throw new InvalidArgumentException("capacity", "expected a byte capacity >= 0 but found " + capacity);
        }
        return new PooledArrowMemory(new HostBlockCache(capacity), capacity);
    }

    /**
     * The allocation manager factory, for {@code RootAllocator.configBuilder().allocationManagerFactory(...)}.
     *
     * @return this memory's factory
     */
    public AllocationManager.Factory factory() {
        return factory;
    }

    /**
     * A root allocator over this memory with no limit (Arrow Java is made ready first, as by
     * {@link ArrowMemory#newRootAllocator()}).
     *
     * @return a new allocator the caller owns and closes
     * @throws org.devicebridge.ArrowJavaUnavailableException if Arrow Java cannot initialise
     */
    public RootAllocator newRootAllocator() {
        return ArrowMemory.newRootAllocator(factory, Long.MAX_VALUE);
    }

    /**
     * A root allocator over this memory, limited to {@code limit} bytes.
     *
     * @param limit the most bytes the allocator may hold at once, {@code > 0}
     * @return a new allocator the caller owns and closes
     * @throws InvalidArgumentException if {@code limit <= 0}
     * @throws org.devicebridge.ArrowJavaUnavailableException if Arrow Java cannot initialise
     */
    public RootAllocator newRootAllocator(long limit) {
        return ArrowMemory.newRootAllocator(factory, limit);
    }

    /** {@return the most bytes of freed blocks this object keeps} */
    public long capacity() {
        return capacity;
    }

    /** {@return the bytes of freed blocks kept now, ready for reuse} */
    public long keptBytes() {
        return cache.cachedBytes();
    }

    /** Gives every kept block back to the OS now; later frees are kept again. */
    public void trim() {
        cache.trim();
    }
}
