package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.devicebridge.Device;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.ipc.IpcBatchDescriptor.BufferRef;
import org.devicebridge.ipc.IpcBatchDescriptor.Node;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceRange;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Closing;

/**
 * Decides, buffer by buffer, which allocation handle and offset the descriptor names, and queues the
 * copies of what cannot be shared. Memory of the device's IPC-shareable pool is named by its pool pointer where
 * the export goes over a channel that can send the pool ({@link Pools}), else copied as the default pool's is.
 * Single-threaded, one per export.
 */
final class IpcExportPlanner {
    /** Where pool memory can go: the channel's index of a device's shareable pool, sent to the reader if need be. */
    interface Pools {
        /**
         * {@return the index, among the pools the reader holds, of {@code device}'s IPC-shareable pool (sent now if
         * it was not yet), or -1 where the reader cannot take pools}
         */
        int indexOf(Device device);
    }

    /** Where a buffer lies, before the allocations are numbered: a handle's index, or a pool pointer's. */
    private record Ref(boolean pool, int index, long offset, long size) {}

    private final List<DeviceBuffer> memory;
    private final IpcExport.Memory policy;
    private final Pools pools;
    final List<byte[]> handles = new ArrayList<>();
    final List<PoolPointer> poolPointers = new ArrayList<>();
    final List<DeviceBuffer> held = new ArrayList<>();
    /** The reference in {@link #held} of each handle's allocation, in handle order. */
    final List<DeviceBuffer> byHandle = new ArrayList<>();
    /** The index of the handle of the export's own copy, or -1 when nothing is copied. */
    int copyHandle = -1;
    private final Map<Long, Integer> handleOf = new HashMap<>(); // allocation address -> handle index
    private final Map<Long, Integer> poolPointerOf = new HashMap<>(); // allocation address -> pool pointer index
    private final Map<Long, DeviceBuffer> unshareable = new HashMap<>(); // address -> our reference
    private final Map<ArrayNode, Ref[]> refs = new IdentityHashMap<>();
    private final List<Pending> pending = new ArrayList<>();
    private CudaStream queuedOn; // the stream copies were queued on, if any
    long copyBytes;

    /** A buffer to copy: node {@code node}'s buffer {@code buffer} from {@code source} to {@code offset}. */
    private record Pending(ArrayNode node, int buffer, DeviceRange source, long offset) {}

    /** A planner for {@code memory} (the batch's allocations); {@code pools} is null where no pool can be sent. */
    IpcExportPlanner(List<DeviceBuffer> memory, IpcExport.Memory policy, Pools pools) {
        this.memory = memory;
        this.policy = policy;
        this.pools = pools;
    }

    /** Plans every node of the tree, depth first: a node, its children, then its dictionary. */
    void planTree(ArrayNode n) {
        plan(n);
        for (ArrayNode c : n.children()) {
            planTree(c);
        }
        if (n.dictionary() != null) {
            planTree(n.dictionary());
        }
    }

    private void plan(ArrayNode n) {
        Ref[] out = new Ref[n.bufferCount()];
        refs.put(n, out);
        for (int i = 0; i < out.length; i++) {
            long address = n.bufferPointer(i).address();
            if (address == 0) {
                continue;
            }
            String path = FieldPath.join(n.path(), "buffers[" + i + "]");
            long len = n.bufferLength(i);
            if (len < 0) {
                throw new UnsupportedFeatureException(path, "the byte length of this buffer is unknown (imported"
                        + " at MINIMAL): import at DEFAULT or above to share the batch through CUDA IPC");
            }
            DeviceBuffer holder = holder(address, len);
            if (holder == null) {
                if (len == 0) {
                    continue; // an empty buffer outside the batch's memory: written as NULL, as readers accept
                }
                throw new InvalidArgumentException(path, String.format(Locale.ROOT, "expected the buffer's %d"
                        + " bytes at 0x%x inside the batch's device memory but found none holding them", len, address));
            }
            Integer p = pools == null ? null : sharePool(holder);
            Integer h = p != null ? null : share(holder, path);
            if (p != null) {
                out[i] = new Ref(true, p, address - holder.address(), len);
            } else if (h != null) {
                out[i] = new Ref(false, h, address - holder.address(), len);
            } else if (len > 0) {
                long at = align(copyBytes);
                pending.add(new Pending(n, i, holder.range(address - holder.address(), len), at));
                copyBytes = Math.addExact(at, len);
            }
        }
    }

    /**
     * The pool pointer index of {@code holder}'s allocation, or {@code null} if it is not memory of an
     * IPC-shareable pool the reader can take.
     */
    private Integer sharePool(DeviceBuffer holder) {
        long key = holder.address();
        Integer k = poolPointerOf.get(key);
        if (k != null || handleOf.containsKey(key) || unshareable.containsKey(key) || !holder.isStreamOrdered()) {
            return k;
        }
        byte[] pointer;
        try {
            pointer = holder.ipcPoolPointer();
        } catch (UnsupportedFeatureException e) {
            return null; // the default pool's: copied, as ever
        }
        int pool = pools.indexOf(holder.device());
        if (pool < 0) {
            return null;
        }
        DeviceBuffer ref = holder.retain(); // the reader frees its import before it acknowledges: kept until then
        held.add(ref);
        k = poolPointers.size();
        poolPointers.add(new PoolPointer(pool, pointer));
        poolPointerOf.put(key, k);
        return k;
    }

    /** The handle index of {@code holder}'s allocation, or {@code null} if it is copied instead. */
    private Integer share(DeviceBuffer holder, String path) {
        long key = holder.address();
        Integer h = handleOf.get(key);
        if (h != null || unshareable.containsKey(key)) {
            return h;
        }
        byte[] handle;
        try {
            handle = holder.ipcHandle();
        } catch (UnsupportedFeatureException | CudaException e) {
            if (policy == IpcExport.Memory.SHARE_ONLY) {
                throw new UnsupportedFeatureException(path, "expected cuMemAlloc memory CUDA IPC can share but"
                        + " found memory it cannot (" + e.getMessage() + "): export with Memory.COPY_UNSHAREABLE"
                        + " to copy such buffers");
            }
            DeviceBuffer ref = holder.retain(); // read by the copies queued on the stream: kept until close
            held.add(ref);
            unshareable.put(key, ref);
            return null;
        }
        DeviceBuffer ref = holder.retain();
        held.add(ref);
        h = handles.size();
        handles.add(handle);
        byHandle.add(ref);
        handleOf.put(key, h);
        return h;
    }

    private DeviceBuffer holder(long address, long len) {
        for (DeviceBuffer b : memory) {
            long start = b.address();
            if (start != 0 && address - start >= 0 && address - start <= b.byteSize() - len) {
                return b;
            }
        }
        return null;
    }

    /**
     * Allocates the copy (if any buffer needs one) on {@code stream}'s device, shares it and queues the copies on
     * {@code stream}.
     */
    void copy(CudaStream stream) {
        if (pending.isEmpty()) {
            return;
        }
        DeviceBuffer copy = DeviceBuffer.allocate(stream.device(), copyBytes);
        held.add(copy);
        int h = handles.size();
        handles.add(copy.ipcHandle());
        byHandle.add(copy);
        copyHandle = h;
        // the copies' sources and destination outlive them even if the export is force-closed at once: the
        // stream holds references of its own until an event after the copies completed
        List<DeviceBuffer> read = new ArrayList<>(unshareable.values());
        read.add(copy);
        AutoCloseable reads = retain(read);
        queuedOn = stream;
        try {
            for (Pending c : pending) {
                CudaCopies.deviceToDeviceAsync(c.source(), copy, c.offset(), stream);
                refs.get(c.node())[c.buffer()] = new Ref(false, h, c.offset(), c.source().byteSize());
            }
        } catch (RuntimeException | Error e) {
            try {
                stream.closeAfterQueuedWork(reads);
            } catch (RuntimeException | Error more) {
                e.addSuppressed(more);
            }
            throw e;
        }
        stream.closeAfterQueuedWork(reads);
    }

    Node node(ArrayNode n) {
        List<Node> children = new ArrayList<>(n.children().size());
        for (ArrayNode c : n.children()) {
            children.add(node(c));
        }
        Ref[] rs = refs.get(n);
        BufferRef[] buffers = new BufferRef[rs.length];
        for (int i = 0; i < rs.length; i++) { // the allocations are numbered now: handles, then pool pointers
            Ref r = rs[i];
            buffers[i] = r == null ? null : new BufferRef(r.pool() ? handles.size() + r.index() : r.index(), r.offset(),
                    r.size());
        }
        return new Node(n.length(), n.nullCount(), n.offset(), Arrays.asList(buffers), children,
                n.dictionary() == null ? null : node(n.dictionary()));
    }

    /** Drops every reference taken, after the stream finished the copies queued on it (if any). */
    void abandon(Throwable failure) {
        if (queuedOn != null) {
            try {
                queuedOn.synchronize();
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
        Closing.closeAllAfter(held, DeviceBuffer::close, failure);
        held.clear();
    }

    /** Our own reference to each of {@code buffers}, closed together; after a throw none is held. */
    private static AutoCloseable retain(List<DeviceBuffer> buffers) {
        List<DeviceBuffer> refs = Closing.takeAll(buffers, DeviceBuffer::retain, DeviceBuffer::close);
        return () -> Closing.closeAll(refs, DeviceBuffer::close);
    }

    private static long align(long v) {
        long a = HostDeviceTransfer.ALIGNMENT;
        return Math.addExact(v, a - 1) & -a;
    }
}
