package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
 * copies of what cannot be shared. Single-threaded, one per export.
 */
final class IpcExportPlanner {
    private final List<DeviceBuffer> memory;
    private final IpcExport.Memory policy;
    final List<byte[]> handles = new ArrayList<>();
    final List<DeviceBuffer> held = new ArrayList<>();
    /** The reference in {@link #held} of each handle's allocation, in handle order. */
    final List<DeviceBuffer> byHandle = new ArrayList<>();
    /** The index of the handle of the export's own copy, or -1 when nothing is copied. */
    int copyHandle = -1;
    private final Map<Long, Integer> handleOf = new HashMap<>(); // allocation address -> handle index
    private final Map<Long, DeviceBuffer> unshareable = new HashMap<>(); // address -> our reference
    private final Map<ArrayNode, BufferRef[]> refs = new IdentityHashMap<>();
    private final List<Pending> pending = new ArrayList<>();
    private CudaStream queuedOn; // the stream copies were queued on, if any
    long copyBytes;

    /** A buffer to copy: node {@code node}'s buffer {@code buffer} from {@code source} to {@code offset}. */
    private record Pending(ArrayNode node, int buffer, DeviceRange source, long offset) {}

    IpcExportPlanner(List<DeviceBuffer> memory, IpcExport.Memory policy) {
        this.memory = memory;
        this.policy = policy;
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
        BufferRef[] out = new BufferRef[n.bufferCount()];
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
            Integer h = share(holder, path);
            if (h != null) {
                out[i] = new BufferRef(h, address - holder.address(), len);
            } else if (len > 0) {
                long at = align(copyBytes);
                pending.add(new Pending(n, i, holder.range(address - holder.address(), len), at));
                copyBytes = Math.addExact(at, len);
            }
        }
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
                refs.get(c.node())[c.buffer()] = new BufferRef(h, c.offset(), c.source().byteSize());
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
        return new Node(n.length(), n.nullCount(), n.offset(), Arrays.asList(refs.get(n)), children,
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
