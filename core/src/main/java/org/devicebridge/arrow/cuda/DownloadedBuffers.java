package org.devicebridge.arrow.cuda;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.HostCopies;

/**
 * The host copies a download made of every buffer of a device batch, in one block allocated in the
 * caller's Arrow allocator (so a pinned allocator gives a pinned block, which the copy engine fills
 * directly) and laid out by a {@link CopyPlan}: first the source a re-read of the batch's struct validates from (as a
 * {@link DeviceCopier} that copies nothing more: every range it is asked for was downloaded already), then
 * the memory the host view handed to Arrow Java points at. So Arrow Java reads the very bytes that were
 * validated. A buffer of no bytes is found at {@value CopyPlan#ALIGNMENT} zero bytes after the copies (a
 * non-NULL buffer stays non-NULL).
 *
 * <p>Owns the block until {@link #free()}, which runs once whoever calls it (the download on a failure,
 * the host view's release step, possibly on an Arrow Java thread), and not before {@link #arrived()}: a
 * block freed while copies may still write into it is returned to its allocator once they finished. While the downloaded vectors live, the
 * allocator counts these bytes twice: once for the block, once for the foreign allocation Arrow Java wraps
 * over the buffers in it (the bridge's import wraps foreign memory; it has no entry point that derives the
 * vectors' buffers from an {@link ArrowBuf} it is given).
 */
final class DownloadedBuffers implements DeviceCopier, HostCopies {
    /** Blocks not yet freed, for tests. */
    static final AtomicInteger LIVE = new AtomicInteger();

    private final CopyPlan plan;
    private final ArrowBuf block; // released by free()
    private final MemorySegment data;  // the plan's host block, then ALIGNMENT zero bytes
    private boolean freeAsked; // guarded by this
    private boolean copying = true; // guarded by this: copies may write into the block until arrived()

    private DownloadedBuffers(CopyPlan plan, ArrowBuf block, MemorySegment data) {
        this.plan = plan;
        this.block = block;
        this.data = data;
    }

    /**
     * A block for the copies of {@code plan}: {@link CopyPlan#hostBytes()} bytes starting
     * {@value CopyPlan#ALIGNMENT}-byte aligned (see {@link #data()}), not yet filled, allocated in
     * {@code allocator}. The caller owns it.
     *
     * @throws org.apache.arrow.memory.OutOfMemoryException if the allocator refuses
     */
    static DownloadedBuffers allocate(CopyPlan plan, BufferAllocator allocator) {
        long total = plan.hostBytes();
        // 64 spare bytes for alignment and 64 zero bytes that buffers of no bytes point at. Not zeroed as a
        // whole: every byte a buffer exposes is overwritten by the copies; just the shared zero bytes are cleared.
        long blockBytes = Math.addExact(total, 2L * CopyPlan.ALIGNMENT);
        ArrowBuf block = allocator.buffer(blockBytes);
        MemorySegment all = MemorySegment.ofAddress(block.memoryAddress()).reinterpret(blockBytes);
        long skew = (-all.address()) & (CopyPlan.ALIGNMENT - 1);
        MemorySegment data = all.asSlice(skew, total + CopyPlan.ALIGNMENT);
        data.asSlice(total, CopyPlan.ALIGNMENT).fill((byte) 0);
        LIVE.incrementAndGet();
        return new DownloadedBuffers(plan, block, data);
    }

    /** Where the plan's copies land: {@link CopyPlan#hostBytes()} bytes, {@value CopyPlan#ALIGNMENT}-byte aligned. */
    MemorySegment data() {
        return data.asSlice(0, plan.hostBytes());
    }

    @Override
    public MemorySegment find(long deviceAddress, long byteSize) {
        if (byteSize == 0) {
            return data.asSlice(plan.hostBytes(), 0);
        }
        long at = plan.find(deviceAddress, byteSize);
        return at < 0 ? null : data.asSlice(at, byteSize);
    }

    /**
     * These copies, whatever is asked: a range that was not downloaded is then missing, which the reader
     * rejects (a {@code DEVICE} validation error).
     */
    @Override
    public HostCopies copyToHost(List<ArrayNode> nodes) {
        return this;
    }

    /**
     * Frees the block, once (later calls do nothing): now if no copy writes into it any more, else at
     * {@link #arrived()}.
     */
    void free() {
        synchronized (this) {
            if (freeAsked) {
                return;
            }
            freeAsked = true;
            if (copying) {
                return;
            }
        }
        release();
    }

    /** Says that no copy writes into the block any more (the batch arrived, or failed and was waited for). */
    void arrived() {
        synchronized (this) {
            if (!copying) {
                return;
            }
            copying = false;
            if (!freeAsked) {
                return;
            }
        }
        release();
    }

    private void release() {
        LIVE.decrementAndGet();
        block.close();
    }
}
