package org.devicebridge.arrow.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.arrow.ArrowDeviceType;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ArrowStreamException;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;
import org.devicebridge.internal.RefCount;

/**
 * Zero-copy import of CUDA {@code ArrowDeviceArray}s (and the batches of a CUDA
 * {@code ArrowDeviceArrayStream}) as {@link CudaArrowBatch}es. The consumer's stream is made to wait on the
 * producer's {@code sync_event} ({@code cuStreamWaitEvent}); the host blocks only for validation at
 * {@link ValidationLevel#DEFAULT} or {@link ValidationLevel#FULL}, which copies the buffers to the host.
 *
 * <p>Ownership, the same for every import: after a return the caller owns the returned batch; after a
 * throw the input struct has already been released (also when the CUDA driver is missing).
 */
public final class CudaArrowImport {
    private CudaArrowImport() {}

    /**
     * Imports the CUDA {@code ArrowDeviceArray} at {@code arrowDeviceArrayPtr} (device type
     * {@link ArrowDeviceType#CUDA}, {@link ArrowDeviceType#CUDA_HOST} or {@link ArrowDeviceType#CUDA_MANAGED})
     * of type {@code schema} (borrowed), without copying its buffers. The struct is moved and checked at
     * {@link ValidationLevel#MINIMAL} (no device memory is read); {@code stream} is made to wait on the
     * producer's {@code sync_event} ({@code cuStreamWaitEvent}, the host does not block); every non-NULL
     * buffer's pointer attributes must show memory of the declared kind on {@code device_id}, and
     * {@code device_id} must be {@code stream}'s device.
     *
     * <p>At {@link ValidationLevel#DEFAULT} and {@link ValidationLevel#FULL} the buffers are also copied to
     * the host through {@code transfer}, ordered on {@code stream} after the wait, and checked by the CPU
     * validator: one host synchronisation per device allocation holding buffers, plus one before that
     * when variable-size data buffers must first be sized from their last offsets.
     *
     * <p>Ownership: after a return the caller owns the returned batch; the producer's {@code release} is
     * called once when the batch and every export of it are closed. After a throw the struct has already
     * been released (also when the CUDA driver is missing).
     *
     * @param transfer needed at DEFAULT and FULL; may be null at NONE and MINIMAL
     * @throws ValidationException {@link Category#DEVICE} for a non-CUDA device type, a wrong
     *         {@code device_id}, or a buffer that is not memory of the declared kind on that device (for
     *         example a host pointer labelled CUDA); other categories for malformed arrays
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                   ValidationLevel level, CudaStream stream,
                                                   HostDeviceTransfer transfer) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(arrowDeviceArrayPtr, "arrowDeviceArrayPtr");
        Objects.requireNonNull(level, "level");
        ImportedArray imported = ArrowImport.importDeviceArray(schema, arrowDeviceArrayPtr, structLevel(level));
        return toCuda(schema, imported, level, stream, transfer);
    }

    /**
     * {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, CudaStream, HostDeviceTransfer)} at
     * MINIMAL. Ownership as there: after a throw the struct has already been released.
     */
    public static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                   CudaStream stream) {
        return importDeviceArray(schema, arrowDeviceArrayPtr, ValidationLevel.MINIMAL, stream, null);
    }

    /**
     * Pulls the next batch of an imported CUDA {@code ArrowDeviceArrayStream} (see
     * {@link ArrowImport#importDeviceStream}) and imports it as
     * {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, CudaStream, HostDeviceTransfer)}
     * does: {@code stream} waits on the batch's sync event, pointers are checked, and DEFAULT/FULL copy to
     * the host for validation. Returns {@code null} at the end of the stream.
     *
     * <p>Ownership: the caller owns a returned batch and still owns {@code deviceStream}; after a throw the
     * batch the producer handed over (if any) has been released.
     *
     * @throws ArrowStreamException if the producer's {@code get_next} returned an errno
     * @throws ValidationException as for a single import
     * @throws CudaUnavailableException without a CUDA driver (nothing is pulled then)
     */
    public static CudaArrowBatch importNext(ImportedArrayStream deviceStream, ValidationLevel level, CudaStream stream,
                                            HostDeviceTransfer transfer) {
        Cuda.require();
        Objects.requireNonNull(deviceStream, "deviceStream");
        Objects.requireNonNull(level, "level");
        ImportedArray imported = deviceStream.next(structLevel(level));
        return imported == null ? null : toCuda(deviceStream.schema(), imported, level, stream, transfer);
    }

    private static ValidationLevel structLevel(ValidationLevel level) {
        return level == ValidationLevel.NONE ? ValidationLevel.NONE : ValidationLevel.MINIMAL;
    }

    /** The CUDA part of an import: takes {@code imported} and releases it on every failure. */
    private static CudaArrowBatch toCuda(SchemaNode schema, ImportedArray imported, ValidationLevel level,
                                         CudaStream stream, HostDeviceTransfer transfer) {
        Shared shared = null;
        try {
            Cuda.require();
            Objects.requireNonNull(stream, "stream");
            boolean reads = level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL;
            if (reads) {
                Objects.requireNonNull(transfer, "transfer (needed to validate at " + level + ")");
                CudaArrowSupport.sameDevice(transfer, stream);
            }
            ArrowDeviceType type = imported.deviceType();
            if (type != ArrowDeviceType.CUDA && type != ArrowDeviceType.CUDA_HOST && type != ArrowDeviceType.CUDA_MANAGED) {
                throw new ValidationException(Category.DEVICE, "device_type", "expected "
                        + ArrowDeviceType.CUDA.cName() + ", " + ArrowDeviceType.CUDA_HOST.cName() + " or "
                        + ArrowDeviceType.CUDA_MANAGED.cName() + " but found " + type.code());
            }
            long id = imported.deviceId();
            if (id < 0 || id >= Cuda.deviceCount()) {
                throw new ValidationException(Category.DEVICE, "device_id", "expected a CUDA device ordinal in [0, "
                        + Cuda.deviceCount() + ") but found " + id);
            }
            int device = (int) id;
            if (device != stream.device()) {
                throw new ValidationException(Category.DEVICE, "device_id", "expected " + stream.device()
                        + " (the device of the consumer's stream) but found " + id);
            }
            MemorySegment sync = imported.syncEvent();
            if (!sync.equals(MemorySegment.NULL)) {
                long event = sync.reinterpret(8).get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                if (event != 0) {
                    stream.waitEvent(event);
                }
            }
            ArrayNode root = imported.root();
            TreeMap<Long, Long> ranges = new TreeMap<>();
            checkPointers(root, type, device, ranges);
            shared = new Shared(imported, ranges.keySet());
            List<DeviceBuffer> wraps = new ArrayList<>(ranges.size());
            try {
                for (Map.Entry<Long, Long> r : ranges.entrySet()) {
                    shared.retain();
                    try {
                        wraps.add(DeviceBuffer.wrap(r.getKey(), r.getValue(), device, shared));
                    } catch (RuntimeException | Error e) {
                        shared.close();
                        throw e;
                    }
                }
                if (reads) {
                    root = resolveLengths(root, wraps, transfer, stream);
                    mirror(schema, root, wraps, transfer, stream, level).close();
                }
                List<DeviceBuffer> held = List.copyOf(wraps);
                CudaArrowBatch batch = new CudaArrowBatch(CudaArrowBatch.describe("imported CUDA ArrowDeviceArray", root,
                        device), schema, root, device, type, held, () -> CudaArrowSupport.closeAll(held));
                shared.close(); // the creator's reference: the wraps now keep the struct alive
                return batch;
            } catch (RuntimeException | Error e) {
                try {
                    CudaArrowSupport.closeAll(wraps);
                } finally {
                    shared.close();
                }
                throw e;
            }
        } catch (RuntimeException | Error e) {
            if (shared == null) {
                imported.close();
            }
            throw e;
        }
    }

    /**
     * Releases the imported struct when the last wrap of its memory (and the importer's own reference) is
     * closed; the one reference count of the library counts them.
     */
    private static final class Shared implements AutoCloseable {
        private final RefCount refs;

        Shared(ImportedArray imported, java.util.Set<Long> rangeStarts) {
            long[] starts = rangeStarts.stream().mapToLong(Long::longValue).toArray();
            this.refs = new RefCount(() -> {
                for (long start : starts) {
                    PointerAttributes.invalidate(start);
                }
                imported.close();
            });
        }

        void retain() {
            if (!refs.retain()) {
                throw new IllegalStateException("the imported struct was already released");
            }
        }

        @Override
        public void close() {
            refs.release();
        }
    }

    private static void checkPointers(ArrayNode n, ArrowDeviceType type, int device, TreeMap<Long, Long> ranges) {
        for (int i = 0; i < n.bufferCount(); i++) {
            long addr = Nodes.address(n, i);
            long len = n.bufferLength(i);
            if (addr == 0) {
                continue;
            }
            String path = FieldPath.join(n.path(), "buffers[" + i + "]");
            PointerAttributes a;
            try {
                a = PointerAttributes.of(addr);
            } catch (CudaException e) {
                throw new ValidationException(Category.DEVICE, path,
                        "expected a CUDA pointer but the driver rejected it: " + e.getMessage());
            }
            boolean ok = type == ArrowDeviceType.CUDA_HOST ? a.memoryType() == PointerAttributes.MemoryType.HOST
                    : (a.memoryType() == PointerAttributes.MemoryType.DEVICE
                    || a.memoryType() == PointerAttributes.MemoryType.UNIFIED) && a.deviceOrdinal() == device;
            if (!ok) {
                String expected = type == ArrowDeviceType.CUDA_HOST ? "pinned host memory (ARROW_DEVICE_CUDA_HOST)"
                        : "device memory of device " + device;
                String found = a.memoryType() == PointerAttributes.MemoryType.UNREGISTERED_HOST ? "unregistered host memory"
                        : a.memoryType().name().toLowerCase(Locale.ROOT) + " memory of device " + a.deviceOrdinal();
                throw new ValidationException(Category.DEVICE, path, "expected " + expected + " but found " + found);
            }
            if (a.rangeSize() > 0) {
                long end = a.rangeStart() + a.rangeSize();
                if (len > 0 && (len > end - addr)) {
                    throw new ValidationException(Category.DEVICE, path, "expected " + len
                            + " bytes within the device allocation but found only " + (end - addr));
                }
                ranges.merge(a.rangeStart(), a.rangeSize(), Math::max);
            } else if (len > 0) {
                ranges.merge(addr, len, Math::max);
            } else if (len < 0) {
                throw new ValidationException(Category.DEVICE, path,
                        "expected the driver to know the allocation of this buffer but it reports none");
            }
        }
        for (ArrayNode c : n.children()) {
            checkPointers(c, type, device, ranges);
        }
        if (n.dictionary() != null) {
            checkPointers(n.dictionary(), type, device, ranges);
        }
    }

    // ------------------------------------------------------------------ device-array validation on the host
    // replaced by the flat view (lead): resolveLengths, mirror and copyToHost keep CudaArrow's validation
    // of device arrays working as it was until the flat view validates device arrays itself.

    /** A value that sizes one node's unsized buffers: {@code bytes} at {@code address} on the device. */
    private record LengthRead(ArrayNode node, long address, long bytes) {}

    /**
     * Sizes the data buffers an import at MINIMAL left unsized: a variable-size binary's data buffer from
     * its last offset, a view's variadic buffers from its sizes buffer. Copies only those values (one
     * host synchronisation per allocation); returns {@code root} itself when nothing is missing.
     */
    static ArrayNode resolveLengths(ArrayNode root, List<DeviceBuffer> memory, HostDeviceTransfer transfer,
                                    CudaStream stream) {
        List<LengthRead> reads = new ArrayList<>();
        for (ArrayNode node : Nodes.collect(root)) {
            Layout layout = node.type().layout();
            if ((layout == Layout.VARIABLE || layout == Layout.LARGE_VARIABLE) && node.bufferLength(2) < 0) {
                int w = layout.offsetWidth();
                long at = Math.addExact(Nodes.address(node, 1),
                        Math.multiplyExact(Math.addExact(node.offset(), node.length()), w));
                reads.add(new LengthRead(node, at, w));
            } else if (layout == Layout.VIEW && node.bufferCount() > 3 && node.bufferLength(2) < 0) {
                int last = node.bufferCount() - 1;
                reads.add(new LengthRead(node, Nodes.address(node, last), node.bufferLength(last)));
            }
        }
        if (reads.isEmpty()) {
            return root;
        }
        Map<ArrayNode, long[]> lengths = new IdentityHashMap<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment[] dst = new MemorySegment[reads.size()];
            long[] addrs = new long[reads.size()];
            for (int k = 0; k < reads.size(); k++) {
                dst[k] = arena.allocate(reads.get(k).bytes(), 8);
                addrs[k] = reads.get(k).address();
            }
            copyToHost(memory, addrs, dst, transfer, stream, "buffers");
            for (int k = 0; k < reads.size(); k++) {
                ArrayNode node = reads.get(k).node();
                long[] lens = Nodes.lengths(node);
                Layout layout = node.type().layout();
                String path = FieldPath.join(node.path(), "buffers[1]");
                if (layout == Layout.VIEW) {
                    for (int i = 0; i < lens.length - 3; i++) {
                        long size = dst[k].getAtIndex(ValueLayout.JAVA_LONG, i);
                        if (size < 0) {
                            throw new ValidationException(Category.SIZE, FieldPath.join(node.path(),
                                    "buffers[" + (lens.length - 1) + "]"),
                                    "expected a non-negative size of variadic buffer " + i + " but found " + size);
                        }
                        lens[2 + i] = size;
                    }
                } else {
                    long last = layout.offsetWidth() == 4 ? dst[k].get(ValueLayout.JAVA_INT, 0)
                            : dst[k].get(ValueLayout.JAVA_LONG, 0);
                    if (last < 0) {
                        throw new ValidationException(Category.CONTENT, path,
                                "expected a non-negative last offset but found " + last);
                    }
                    lens[2] = last;
                }
                lengths.put(node, lens);
            }
        }
        return Nodes.resize(root, lengths);
    }

    /** One buffer's copy into the host block: buffer {@code buffer} of {@code node}, at {@code place}. */
    private record HostCopy(ArrayNode node, int buffer, long place, long bytes) {}

    /**
     * Copies every buffer of {@code root} (all sized) into one malloc'ed host block, builds an
     * {@code ArrowArray} tree over it and imports that at {@code level}. The returned array owns the block.
     */
    static ImportedArray mirror(SchemaNode schema, ArrayNode root, List<DeviceBuffer> memory,
                                HostDeviceTransfer transfer, CudaStream stream, ValidationLevel level) {
        List<ArrayNode> nodes = Nodes.collect(root);
        long total = 0;
        List<HostCopy> copies = new ArrayList<>();
        for (ArrayNode node : nodes) {
            for (int i = 0; i < node.bufferCount(); i++) {
                long len = node.bufferLength(i);
                if (Nodes.address(node, i) == 0) {
                    continue;
                }
                if (len < 0) {
                    throw new UnsupportedFeatureException(FieldPath.join(node.path(), "buffers[" + i + "]"),
                            "expected a known buffer length but found none");
                }
                copies.add(new HostCopy(node, i, total, len));
                total = Math.addExact(total, Math.addExact(len, HostDeviceTransfer.ALIGNMENT - 1)
                        & -HostDeviceTransfer.ALIGNMENT);
            }
        }
        // 64 spare bytes for alignment and 64 zero bytes that zero-length buffers point at.
        long blockBytes = Math.addExact(total, 2L * HostDeviceTransfer.ALIGNMENT);
        // malloc, not calloc: every byte a buffer exposes is overwritten by the copy below, so zeroing the
        // whole block first would only add a pass over memory; just the shared zero block is cleared.
        MemorySegment block = Native.malloc(blockBytes);
        MemorySegment rootStruct = MemorySegment.NULL;
        boolean handedOver = false;
        try {
            long skew = (-block.address()) & (HostDeviceTransfer.ALIGNMENT - 1);
            MemorySegment data = block.asSlice(skew, total + HostDeviceTransfer.ALIGNMENT);
            data.asSlice(total, HostDeviceTransfer.ALIGNMENT).fill((byte) 0);
            Map<ArrayNode, long[]> hostAddrs = new IdentityHashMap<>();
            for (ArrayNode node : nodes) {
                hostAddrs.put(node, new long[node.bufferCount()]);
            }
            List<Long> addrs = new ArrayList<>();
            List<MemorySegment> dsts = new ArrayList<>();
            for (HostCopy c : copies) {
                hostAddrs.get(c.node())[c.buffer()] = c.bytes() == 0 ? data.address() + total : data.address() + c.place();
                if (c.bytes() > 0) {
                    addrs.add(Nodes.address(c.node(), c.buffer()));
                    dsts.add(data.asSlice(c.place(), c.bytes()));
                }
            }
            copyToHost(memory, addrs.stream().mapToLong(Long::longValue).toArray(), dsts.toArray(new MemorySegment[0]),
                    transfer, stream, "buffers");
            rootStruct = Native.calloc(ArrowArray.sizeof());
            CudaStructs.write(root, (node, i) -> hostAddrs.get(node)[i], rootStruct, () -> Native.free(block));
            handedOver = true;
            return ArrowImport.importArray(schema, rootStruct, level);
        } finally {
            if (!handedOver) {
                Native.free(block);
            }
            Native.free(rootStruct);
        }
    }

    /**
     * Copies device ranges into host segments, grouped by the device allocation holding them: one
     * {@link HostDeviceTransfer#download} (one synchronisation) per allocation.
     */
    private static void copyToHost(List<DeviceBuffer> memory, long[] addrs, MemorySegment[] dst,
                                   HostDeviceTransfer transfer, CudaStream stream, String path) {
        Map<DeviceBuffer, List<Integer>> groups = new LinkedHashMap<>();
        for (int k = 0; k < addrs.length; k++) {
            long a = addrs[k];
            long len = dst[k].byteSize();
            DeviceBuffer holder = null;
            for (DeviceBuffer m : memory) {
                long start = m.address();
                if (a - start >= 0 && a - start <= m.byteSize() && len <= m.byteSize() - (a - start)) {
                    holder = m;
                    break;
                }
            }
            if (holder == null) {
                throw new ValidationException(Category.DEVICE, path, String.format(Locale.ROOT,
                        "expected %d bytes at 0x%x within one device allocation of the array but found none", len, a));
            }
            groups.computeIfAbsent(holder, h -> new ArrayList<>()).add(k);
        }
        for (Map.Entry<DeviceBuffer, List<Integer>> g : groups.entrySet()) {
            List<Integer> ks = g.getValue();
            long[] offsets = new long[ks.size()];
            List<MemorySegment> ds = new ArrayList<>(ks.size());
            long start = g.getKey().address();
            for (int j = 0; j < ks.size(); j++) {
                offsets[j] = addrs[ks.get(j)] - start;
                ds.add(dst[ks.get(j)]);
            }
            transfer.download(g.getKey(), offsets, ds, stream);
        }
    }
}
