package org.devicebridge.arrow.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.HostCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceRange;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PendingDownload;
import org.devicebridge.internal.Allocations;

/**
 * Copies device memory of known allocations to the host for validation: each {@link #copyToHost} is one
 * batch of asynchronous copies through a {@link HostDeviceTransfer} (its staging ring for pageable memory),
 * on one stream, with one host wait per staging chunk the batch fills, into one block of a confined arena
 * that lives until {@link #close()} (the end of the import that asked); {@link #copy} also fills blocks the
 * caller allocated (page-locked ones by direct copies, one host wait). Single-threaded, as an import is.
 *
 * <p>Borrows the transfer, the stream and the allocations; owns only its arena.
 */
final class HostCopier implements DeviceCopier, AutoCloseable {
    private final HostDeviceTransfer transfer;
    private final CudaStream stream;
    private final DeviceBuffer[] memory; // sorted by address
    private final long[] starts;
    private final long[] sizes;
    private Arena arena; // made on the first copy: MINIMAL imports copy nothing

    /** A copier out of {@code memory} (every buffer a copy may read lies inside one of them). */
    HostCopier(HostDeviceTransfer transfer, CudaStream stream, List<DeviceBuffer> memory) {
        this.transfer = transfer;
        this.stream = stream;
        this.memory = memory.toArray(new DeviceBuffer[0]);
        Arrays.sort(this.memory, Comparator.comparingLong(DeviceBuffer::address));
        this.starts = new long[this.memory.length];
        this.sizes = new long[this.memory.length];
        for (int k = 0; k < this.memory.length; k++) {
            starts[k] = this.memory[k].address();
            sizes[k] = this.memory[k].byteSize();
        }
    }

    /** Plans copies of these ranges out of this copier's allocations. */
    CopyPlan plan(long[] addresses, long[] byteSizes) {
        return CopyPlan.of(starts, sizes, addresses, byteSizes);
    }

    /** Plans copies of every non-NULL buffer of {@code nodes} ({@link DeviceCopier#copyToHost}). */
    CopyPlan plan(List<ArrayNode> nodes) {
        int count = 0;
        for (ArrayNode node : nodes) {
            count += node.bufferCount();
        }
        long[] addresses = new long[count];
        long[] byteSizes = new long[count]; // 0 for a NULL buffer: CopyPlan skips it
        int k = 0;
        for (ArrayNode node : nodes) {
            for (int i = 0; i < node.bufferCount(); i++, k++) {
                if (!node.isBufferNull(i)) {
                    addresses[k] = Nodes.address(node, i);
                    byteSizes[k] = node.bufferLength(i);
                }
            }
        }
        return plan(addresses, byteSizes);
    }

    @Override
    public HostCopies copyToHost(List<ArrayNode> nodes) {
        CopyPlan plan = plan(nodes);
        if (plan.count() == 0) {
            return (address, size) -> null;
        }
        if (arena == null) {
            arena = Allocations.track(Arena.ofConfined());
        }
        MemorySegment block = arena.allocate(plan.hostBytes(), CopyPlan.ALIGNMENT);
        copy(plan, block);
        return (address, size) -> {
            long at = plan.find(address, size);
            return at < 0 ? null : block.asSlice(at, size);
        };
    }

    /**
     * Runs {@code plan} (made by {@link #plan}) into {@code block}, a host block of at least
     * {@link CopyPlan#hostBytes()} bytes starting {@value CopyPlan#ALIGNMENT}-byte aligned: one batch of
     * copies on the stream, and returns when the data arrived.
     */
    void copy(CopyPlan plan, MemorySegment block) {
        copy(plan.whole(), block, null);
    }

    /**
     * Runs {@code pieces} (of a plan made by {@link #plan}) into {@code block}, as {@link #copy(CopyPlan,
     * MemorySegment)} does, the leading pieces first: {@code whileRestArrives} (if not null) runs once they
     * arrived, while the others may still be arriving (see {@link HostDeviceTransfer#downloadAsync}). Returns, or
     * throws, only once no copy writes into {@code block} any more.
     */
    void copy(CopyPlan.Pieces pieces, MemorySegment block, Runnable whileRestArrives) {
        List<DeviceRange> sources = new ArrayList<>(pieces.count());
        List<MemorySegment> destinations = new ArrayList<>(pieces.count());
        for (int k = 0; k < pieces.count(); k++) {
            int holder = pieces.allocations()[k];
            sources.add(memory[holder].range(pieces.addresses()[k] - starts[holder], pieces.sizes()[k]));
            destinations.add(block.asSlice(pieces.hostOffsets()[k], pieces.sizes()[k]));
        }
        if (whileRestArrives == null) {
            transfer.download(sources, destinations, stream);
            return;
        }
        try (PendingDownload download = transfer.downloadAsync(sources, destinations, pieces.leading(), stream)) {
            download.awaitLeading();
            whileRestArrives.run(); // a throw still waits for every copy: the download's close
            download.await();
        }
    }

    /** Frees the host copies. */
    @Override
    public void close() {
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }
}
