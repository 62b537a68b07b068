package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import org.devicebridge.internal.Native;

/**
 * Freed large blocks of host memory kept for reuse, up to a capacity, oldest given back first: a block
 * that is reused was touched before, so filling it costs no page faults (fresh pages fill several times
 * more slowly). Blocks are keyed by
 * their exact size, which {@link FfmAllocationManager} rounds to whole huge pages.
 *
 * <p>Thread-safe: every method holds this object's lock (blocks this large are few and their users slow).
 */
final class HostBlockCache {
    private final long capacity;
    private final Map<Long, ArrayDeque<long[]>> bySize = new HashMap<>(); // size -> {address, stamp}, oldest first
    private long cached;
    private long stamp;
    private boolean closed;

    HostBlockCache(long capacity) {
        this.capacity = capacity;
    }

    /** A kept block of exactly {@code size} bytes (the most recently freed one), or 0. */
    synchronized long take(long size) {
        ArrayDeque<long[]> blocks = bySize.get(size);
        if (blocks == null || blocks.isEmpty()) {
            return 0;
        }
        cached -= size;
        long address = blocks.pollLast()[0];
        Native.reused(MemorySegment.ofAddress(address));
        return address;
    }

    /**
     * Keeps the block at {@code address} of {@code size} bytes, giving back the oldest kept blocks to make
     * room; {@code false} (the caller frees it) when closed or larger than the capacity.
     */
    synchronized boolean offer(long address, long size) {
        if (closed || size > capacity) {
            return false;
        }
        while (cached + size > capacity) {
            freeOldest();
        }
        bySize.computeIfAbsent(size, s -> new ArrayDeque<>()).addLast(new long[] {address, stamp++});
        cached += size;
        Native.kept(MemorySegment.ofAddress(address)); // the cache's, not a leak
        return true;
    }

    /** Bytes kept now. */
    synchronized long cachedBytes() {
        return cached;
    }

    /** Gives every kept block back to libc (and the OS). */
    synchronized void trim() {
        for (ArrayDeque<long[]> blocks : bySize.values()) {
            for (long[] b : blocks) {
                Native.reused(MemorySegment.ofAddress(b[0]));
                Native.free(MemorySegment.ofAddress(b[0]));
            }
            blocks.clear();
        }
        bySize.clear();
        cached = 0;
    }

    /** Trims, and keeps nothing from now on. Idempotent. */
    synchronized void close() {
        closed = true;
        trim();
    }

    private void freeOldest() {
        Map.Entry<Long, ArrayDeque<long[]>> oldest = null;
        for (Map.Entry<Long, ArrayDeque<long[]>> e : bySize.entrySet()) {
            if (!e.getValue().isEmpty() && (oldest == null || e.getValue().peekFirst()[1] < oldest.getValue().peekFirst()[1])) {
                oldest = e;
            }
        }
        long[] block = oldest.getValue().pollFirst();
        cached -= oldest.getKey();
        Native.reused(MemorySegment.ofAddress(block[0]));
        Native.free(MemorySegment.ofAddress(block[0]));
    }
}
