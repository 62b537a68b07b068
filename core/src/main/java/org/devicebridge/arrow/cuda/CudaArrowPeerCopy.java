package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceRange;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Closing;

/**
 * Copies a CUDA Arrow batch to another device (or into a fresh allocation on its own): every buffer lands
 * in one new stream-ordered allocation of the destination device, packed at
 * {@value HostDeviceTransfer#ALIGNMENT}-byte aligned offsets as {@link CudaArrowUpload} packs them, with one
 * {@code cuMemcpyPeerAsync} per buffer on the destination's stream. Nothing goes through the host: the
 * copies use NVLink or PCIe peer-to-peer where the driver can (faster still after
 * {@link org.devicebridge.cuda.Cuda#enablePeerAccess}), host staging inside the driver otherwise.
 *
 * <p>Stateless and thread-safe as far as its arguments are; the caller keeps owning the source batch and
 * both streams, and owns the returned batch.
 */
final class CudaArrowPeerCopy {
    private CudaArrowPeerCopy() {}

    /**
     * Queues the copy of {@code batch} to {@code stream}'s device: an event recorded on {@code sourceStream}
     * (where the batch is ready) makes {@code stream} wait (a cross-device wait, no host block), then the
     * buffers are copied on {@code stream}. The returned batch is ready for work queued on {@code stream}
     * afterwards.
     *
     * <p>What it keeps alive: a reference to every allocation of the source batch that a copy reads (for an
     * import, the producer's memory, whose {@code release} waits for it) is handed to {@code stream}
     * ({@link CudaStream#closeAfterQueuedWork}) and dropped only once an event recorded on {@code stream} after
     * the copies completed. What the caller may touch before that event: it may close the source batch at
     * once (its memory is freed after the copies, not under them), but must not queue work that changes the
     * source's bytes unless it is ordered after {@code stream}.
     *
     * <p>See {@link CudaArrow#copyAsync}: {@code stream} is {@code copies.stream()}.
     */
    static CudaArrowBatch copyAsync(CudaArrowBatch batch, CudaStream sourceStream, DeviceCopies copies) {
        requireNativeAccess();
        Cuda.require();
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(sourceStream, "sourceStream");
        CudaStream stream = Objects.requireNonNull(copies, "copies").stream();
        if (batch.device().kind() == DeviceKind.CUDA_HOST) {
            throw new UnsupportedFeatureException("device_type", "a batch of pinned host memory"
                    + " (ARROW_DEVICE_CUDA_HOST) is reachable from every device: upload it instead of copying it");
        }
        if (sourceStream.device().ordinal() != batch.device().ordinal()) {
            throw new InvalidArgumentException("sourceStream", String.format(Locale.ROOT,
                    "expected a stream of device %d (the batch's) but found one of device %d",
                    batch.device().ordinal(), sourceStream.device().ordinal()));
        }
        ArrayNode root = batch.root();
        List<DeviceBuffer> memory = batch.memory();
        List<ArrayNode> nodes = Nodes.collect(root);
        List<Slot> slots = new ArrayList<>();
        long total = 0;
        for (ArrayNode node : nodes) {
            for (int i = 0; i < node.bufferCount(); i++) {
                long address = Nodes.address(node, i);
                long len = node.bufferLength(i);
                if (address == 0 || len == 0) {
                    continue;
                }
                String path = FieldPath.join(node.path(), "buffers[" + i + "]");
                if (len < 0) {
                    throw new UnsupportedFeatureException(path, "the byte length of this buffer is unknown (imported"
                            + " at MINIMAL): import at DEFAULT or above to copy the batch");
                }
                long offset = align(total);
                slots.add(new Slot(node, i, containing(memory, address, len, path), offset, len));
                total = Math.addExact(offset, len);
            }
        }
        try (CudaEvent ready = CudaEvent.acquire(sourceStream.device())) {
            ready.record(sourceStream);
            stream.waitEvent(ready);
        }
        // the source's memory outlives the copies even if the caller closes the batch now
        References read = retainRead(slots);
        DeviceBuffer dst;
        try {
            dst = DeviceBuffer.allocateAsync(stream.device(), total, stream);
        } catch (RuntimeException | Error e) {
            read.closeAfter(e);
            throw e;
        }
        boolean handedOver = false;
        try {
            long base = dst.address();
            Map<ArrayNode, long[]> placed = new IdentityHashMap<>();
            for (ArrayNode node : nodes) {
                long[] a = new long[node.bufferCount()];
                for (int i = 0; i < a.length; i++) {
                    // an empty but non-NULL buffer stays non-NULL, pointing at the allocation's start, as an upload does
                    a[i] = Nodes.address(node, i) == 0 ? 0 : base;
                }
                placed.put(node, a);
            }
            for (Slot s : slots) {
                CudaCopies.copyPeerAsync(s.source(), dst, s.offset(), stream);
                placed.get(s.node())[s.buffer()] = base + s.offset();
            }
            handedOver = true; // after a throw the stream waited, then dropped them
            stream.closeAfterQueuedWork(read);
            ArrayNode moved = Nodes.relocate(root, placed);
            return new CudaArrowBatch("Arrow batch copied from device " + batch.device().ordinal(), batch.schema(),
                    moved, stream.device(), new CudaArrowBatch.Holdings(List.of(dst), dst::close, null));
        } catch (RuntimeException | Error e) {
            dst.close();
            if (!handedOver) {
                try {
                    stream.closeAfterQueuedWork(read); // copies queued before the failure may still read
                } catch (RuntimeException | Error more) {
                    e.addSuppressed(more);
                }
            }
            throw e;
        }
    }

    /** {@link CudaArrow#copy}: {@link #copyAsync}, then a wait for the destination stream. */
    static CudaArrowBatch copy(CudaArrowBatch batch, CudaStream sourceStream, DeviceCopies copies) {
        CudaArrowBatch copied = copyAsync(batch, sourceStream, copies);
        try {
            copies.stream().synchronize();
        } catch (RuntimeException | Error e) {
            copied.close();
            throw e;
        }
        return copied;
    }

    /** A reference of their own to each allocation the copies of {@code slots} read, dropped together. */
    private static References retainRead(List<Slot> slots) {
        Map<Long, DeviceBuffer> read = new LinkedHashMap<>(); // one reference per allocation
        for (Slot s : slots) {
            read.putIfAbsent(s.source().buffer().address(), s.source().buffer());
        }
        return new References(Closing.takeAll(read.values(), DeviceBuffer::retain, DeviceBuffer::close));
    }

    /** References to device allocations that queued copies read, closed together once the copies ran. */
    record References(List<DeviceBuffer> buffers) implements AutoCloseable {
        @Override
        public void close() {
            Closing.closeAll(buffers, DeviceBuffer::close);
        }

        void closeAfter(Throwable failure) {
            Closing.closeAllAfter(buffers, DeviceBuffer::close, failure);
        }
    }

    /** One source buffer: where it sits in the tree, the range it reads and where it lands. */
    private record Slot(ArrayNode node, int buffer, DeviceRange source, long offset, long bytes) {}

    /** The range of the batch's memory holding {@code [address, address + len)}. */
    private static DeviceRange containing(List<DeviceBuffer> memory, long address, long len, String path) {
        for (DeviceBuffer b : memory) {
            long start = b.address();
            if (address - start >= 0 && address - start <= b.byteSize() - len) {
                return b.range(address - start, len);
            }
        }
        throw new InvalidArgumentException(path, String.format(Locale.ROOT,
                "expected the buffer's %d bytes at 0x%x inside the batch's device memory but found none holding them",
                len, address));
    }

    private static long align(long v) {
        long a = HostDeviceTransfer.ALIGNMENT;
        return Math.addExact(v, a - 1) & -a;
    }
}
