package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentSkipListMap;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.internal.Allocations;

/**
 * A pool of page-locked host memory: blocks carved from {@link PinnedHostBuffer}s ({@code cuMemHostAlloc},
 * portable to every context) and reused, so that a steady state of allocations and frees calls the driver
 * no more. What Arrow Java's pinned memory ({@code org.devicebridge.arrow.cuda.PinnedArrowMemory}) is made
 * of; usable on its own.
 *
 * <h2>Size classes</h2>
 * A request is served from a block of its size class: powers of two from {@value #MIN_BLOCK} bytes to
 * {@value #SMALL_MAX} bytes, carved from slabs of up to 4 MiB; above that, four classes per power of two
 * ({@code 2^e * 5/4, 6/4, 7/4, 8/4}: at most a quarter wasted), one {@code cuMemHostAlloc} per block. Every
 * block is aligned to at least 64 bytes (a slab block to its size, a large one to a page). A freed block
 * goes back to its class; the pool frees nothing before it closes.
 *
 * <h2>Large blocks in turn</h2>
 * The blocks of a large class up to {@value #ROTATION_MAX} bytes are used in turn: the pool lends the one
 * freed longest ago, and allocates a new one rather than reuse a freed one while the class has fewer than
 * {@code rotation} blocks ({@value #DEFAULT_ROTATION} by default; 1 reuses a freed block at once). Why: the
 * copy engine writes into memory whose lines the cores still cache at about half the link's rate, and a
 * block that was just read (the checks of the last downloaded batch, the caller's own reads of it) is such
 * memory, and a block freed several batches earlier no longer is (the B6 download rows in bench/RESULTS.md
 * show the difference). The price is pinned memory: up to
 * {@code rotation} blocks of each such class in use. Larger blocks push their own lines out of the caches as
 * they are written, and small ones are reused at once (most recently freed first).
 *
 * <h2>Ownership</h2>
 * The caller owns the pool and closes it; each {@link #allocate} lends a block until its {@link #free}.
 * {@link #close()} frees the memory at once when no block is lent, otherwise when the last lent block is
 * freed (a block must never be freed under the code still using it); the segments it lent become
 * inaccessible then. After close, {@link #allocate} throws and {@link #free} still takes blocks back.
 *
 * <p>Thread-safe: one lock guards the free lists (allocate and free are short and never call the driver
 * in a steady state); {@link #contains} takes the same lock.
 */
public final class PinnedHostPool extends NativeHandle {
    /** The smallest block. */
    public static final long MIN_BLOCK = 64;
    /** The largest block carved from a slab; larger ones have their own {@code cuMemHostAlloc}. */
    public static final long SMALL_MAX = 256 * 1024;
    private static final long SLAB_MIN = 64 * 1024;
    private static final long SLAB_MAX = 4 * 1024 * 1024;
    private static final int BLOCKS_PER_SLAB = 32;
    /** The largest block of a class whose blocks are used in turn (see the class comment). */
    public static final long ROTATION_MAX = 64L << 20;
    /** How many blocks of such a class are used in turn by default. */
    public static final int DEFAULT_ROTATION = 4;

    private final State state;

    private PinnedHostPool(State state) {
        super("pinned host pool", state::shutdown);
        this.state = state;
    }

    /**
     * An empty pool: no pinned memory is allocated until the first {@link #allocate}.
     *
     * @return a pool the caller owns and closes
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static PinnedHostPool create() {
        return create(DEFAULT_ROTATION);
    }

    /**
     * An empty pool whose large blocks up to {@value #ROTATION_MAX} bytes are used {@code rotation} in turn
     * per size class (see the class comment).
     *
     * @param rotation how many blocks of such a class are used in turn, {@code >= 1} (1: a freed block is
     *     reused at once, no memory beyond what is lent at most)
     * @return a pool the caller owns and closes
     * @throws InvalidArgumentException if {@code rotation < 1}
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static PinnedHostPool create(int rotation) {
        if (rotation < 1) {
            throw new InvalidArgumentException("rotation", "expected at least 1 block in turn but found " + rotation);
        }
        CudaDriver.require();
        return new PinnedHostPool(new State(rotation));
    }

    /**
     * Lends a block of at least {@code bytes} pinned bytes (the block of {@link #blockSize(long)}): the
     * returned segment is {@code bytes} long, aligned to at least 64 bytes, not zeroed, and stays accessible
     * until the pool frees its memory (see the class comment). Calls {@code cuMemHostAlloc} only when the
     * size class has no free block.
     *
     * @param bytes the size wanted, {@code > 0}
     * @return the block, which the caller gives back with {@link #free}
     * @throws InvalidArgumentException if {@code bytes <= 0}
     * @throws org.devicebridge.HandleClosedException if the pool was closed
     * @throws CudaException if the driver fails to allocate
     */
    public MemorySegment allocate(long bytes) {
        if (bytes <= 0) {
            throw new InvalidArgumentException("bytes", "expected a byte size > 0 but found " + bytes);
        }
        ensureLive();
        return state.allocate(bytes);
    }

    /**
     * Gives back a block lent by {@link #allocate} (also after the pool was closed). The block may be reused
     * at once: nothing may still read or write it, the GPU included (synchronise first).
     *
     * @param block a segment {@link #allocate} returned, not yet freed
     * @throws InvalidArgumentException if {@code block} is not a block this pool lent (or was freed already);
     *         nothing was freed
     */
    public void free(MemorySegment block) {
        state.free(Objects.requireNonNull(block, "block"));
    }

    /**
     * Whether {@code range} lies inside one block this pool has lent and that is not yet freed: the cheap
     * test for "this memory is pinned, the copy engine may read and write it directly".
     *
     * @param range the bytes (only its address and size are read)
     * @return {@code true} if every byte of {@code range} is pinned memory of this pool
     */
    public boolean contains(MemorySegment range) {
        return state.contains(range.address(), range.byteSize());
    }

    /**
     * The block size a request of {@code bytes} is served from.
     *
     * @param bytes the size wanted, {@code > 0}
     * @return the size of its class
     * @throws InvalidArgumentException if {@code bytes <= 0}
     */
    public static long blockSize(long bytes) {
        if (bytes <= 0) {
            throw new InvalidArgumentException("bytes", "expected a byte size > 0 but found " + bytes);
        }
        if (bytes <= MIN_BLOCK) {
            return MIN_BLOCK;
        }
        if (bytes <= SMALL_MAX) {
            return Long.highestOneBit(bytes - 1) << 1;
        }
        int e = 63 - Long.numberOfLeadingZeros(bytes - 1); // 2^e < bytes <= 2^(e+1)
        long step = 1L << (e - 2);
        return Math.addExact(bytes, step - 1) & -step;
    }

    /**
     * The pool's figures at one moment (for this package's tests; the public view is the three accessors).
     *
     * @param reservedBytes pinned bytes the pool holds (every slab and large block, lent or free)
     * @param lentBytes bytes of the blocks lent now (block sizes, not requested sizes)
     * @param lentBlocks blocks lent now
     * @param slabs {@code cuMemHostAlloc} allocations the pool holds
     */
    record Stats(long reservedBytes, long lentBytes, long lentBlocks, long slabs) {}

    /** {@return the pool's figures now, as one snapshot} */
    Stats stats() {
        return state.stats();
    }

    /** {@return the pinned bytes the pool holds now (every slab and large block, lent or free)} */
    public long reservedBytes() {
        return state.stats().reservedBytes();
    }

    /** {@return the bytes of the blocks lent now (block sizes, not requested sizes)} */
    public long lentBytes() {
        return state.stats().lentBytes();
    }

    /** {@return the number of blocks lent now} */
    public long lentBlocks() {
        return state.stats().lentBlocks();
    }

    /** One cuMemHostAlloc: a slab of equal blocks, or one large block. */
    private static final class Chunk {
        final PinnedHostBuffer buffer;
        final MemorySegment segment;
        final long base;
        final long blockSize;
        final boolean[] lent;
        final Block[] blocks;

        Chunk(PinnedHostBuffer buffer, long blockSize) {
            this.buffer = buffer;
            this.segment = buffer.segment();
            this.base = segment.address();
            this.blockSize = blockSize;
            int n = Math.toIntExact(buffer.byteSize() / blockSize);
            this.lent = new boolean[n];
            this.blocks = new Block[n];
            for (int i = 0; i < n; i++) {
                blocks[i] = new Block(this, i);
            }
        }
    }

    private record Block(Chunk chunk, int index) {}

    /** The pool's state, shared with the release action (which must not refer to the handle). */
    private static final class State {
        private final ConcurrentSkipListMap<Long, Chunk> chunks = new ConcurrentSkipListMap<>();
        private final Map<Long, ArrayDeque<Block>> free = new HashMap<>(); // block size -> free blocks, oldest first
        private final Map<Long, Integer> carved = new HashMap<>(); // block size -> blocks (lent or free), large ones
        private final int rotation;
        private boolean closed;
        private long reservedBytes;
        private long lentBytes;
        private long lentBlocks;

        State(int rotation) {
            this.rotation = rotation;
        }

        synchronized MemorySegment allocate(long bytes) {
            if (closed) {
                throw new org.devicebridge.HandleClosedException("pinned host pool is closed");
            }
            long size = blockSize(bytes);
            ArrayDeque<Block> list = free.computeIfAbsent(size, k -> new ArrayDeque<>());
            boolean inTurn = size > SMALL_MAX && size <= ROTATION_MAX;
            if (list.isEmpty() || (inTurn && carved.getOrDefault(size, 0) < rotation)) {
                carve(size, list);
            }
            Block b = inTurn ? list.removeFirst() : list.removeLast();
            b.chunk.lent[b.index] = true;
            lentBytes += size;
            lentBlocks++;
            Allocations.allocated(Allocations.Kind.POOL_BLOCK, size);
            return b.chunk.segment.asSlice(b.index * size, bytes);
        }

        /** Allocates one slab (or one large block) of {@code size} blocks and adds them to {@code list}. */
        private void carve(long size, ArrayDeque<Block> list) {
            long chunkBytes = size <= SMALL_MAX
                    ? Math.min(SLAB_MAX, Math.max(SLAB_MIN, size * BLOCKS_PER_SLAB)) : size;
            PinnedHostBuffer buffer = PinnedHostBuffer.allocate(chunkBytes);
            Chunk c;
            try {
                c = new Chunk(buffer, size);
            } catch (RuntimeException | Error e) {
                buffer.close();
                throw e;
            }
            chunks.put(c.base, c);
            reservedBytes += chunkBytes;
            // the chunk (its allocation, handle and arena) is the pool's; what it lends is counted per block
            Allocations.pooled(Allocations.Kind.PINNED, chunkBytes);
            Allocations.pooled(Allocations.Kind.ARENA, 0);
            Allocations.pooledHandles(1);
            if (size > SMALL_MAX) {
                carved.merge(size, 1, Integer::sum);
                list.addFirst(c.blocks[0]); // lent next, before the older free ones
                return;
            }
            for (int i = c.blocks.length - 1; i >= 0; i--) {
                list.add(c.blocks[i]); // lowest address first out
            }
        }

        synchronized void free(MemorySegment block) {
            Block b = lentBlock(block.address(), block.byteSize());
            if (b == null) {
                throw new InvalidArgumentException("block", String.format(Locale.ROOT,
                        "expected a block this pinned host pool lent but found 0x%x (%d bytes): not from this pool,"
                                + " or freed already", block.address(), block.byteSize()));
            }
            b.chunk.lent[b.index] = false;
            lentBytes -= b.chunk.blockSize;
            lentBlocks--;
            Allocations.freed(Allocations.Kind.POOL_BLOCK, b.chunk.blockSize);
            free.get(b.chunk.blockSize).add(b);
            if (closed && lentBlocks == 0) {
                freeAll();
            }
        }

        synchronized boolean contains(long address, long length) {
            Block b = lentBlock(address, length);
            return b != null && length >= 0;
        }

        /** The lent block whose memory holds {@code [address, address + length)}, or null. */
        private Block lentBlock(long address, long length) {
            Map.Entry<Long, Chunk> e = chunks.floorEntry(address);
            if (e == null) {
                return null;
            }
            Chunk c = e.getValue();
            long offset = address - c.base;
            long index = offset / c.blockSize;
            if (index >= c.lent.length || !c.lent[(int) index]
                    || length > (index + 1) * c.blockSize - offset) {
                return null;
            }
            return c.blocks[(int) index];
        }

        synchronized Stats stats() {
            return new Stats(reservedBytes, lentBytes, lentBlocks, chunks.size());
        }

        /** The release action: frees now when nothing is lent, else when the last block comes back. */
        synchronized void shutdown() {
            closed = true;
            if (lentBlocks == 0) {
                freeAll();
            }
        }

        /** cuMemFreeHost of every chunk (each PinnedHostBuffer's close); the first failure is rethrown. */
        private void freeAll() {
            List<Chunk> all = new ArrayList<>(chunks.values());
            chunks.clear();
            free.clear();
            carved.clear();
            reservedBytes = 0;
            RuntimeException first = null;
            for (Chunk c : all) {
                Allocations.unpooled(Allocations.Kind.PINNED, c.buffer.byteSize());
                Allocations.unpooled(Allocations.Kind.ARENA, 0);
                Allocations.pooledHandles(-1);
                try {
                    c.buffer.close();
                } catch (RuntimeException ex) {
                    if (first == null) {
                        first = ex;
                    } else {
                        first.addSuppressed(ex);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
        }
    }
}
