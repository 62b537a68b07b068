package org.devicebridge.arrow.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.HostCopies;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.RefCount;

/**
 * The CUDA side of one import, handed to the arrow import as its {@link DeviceCopier}: {@link #prepare}
 * checks the device and the buffer pointers, makes the consumer's stream wait on the sync event and wraps
 * the producer's allocations; copies come from a {@link HostCopier} over those allocations. Then either
 * {@link #finish} (the import returned) or {@link #abandon} (it threw, the struct is released).
 * Single-threaded, as an import is.
 */
final class CudaImport implements DeviceCopier {
    private final ValidationLevel level;
    private final CudaStream stream;
    private final HostDeviceTransfer transfer;
    private final List<DeviceBuffer> wraps = new ArrayList<>();
    private DeviceKind type;
    private int device;
    private Shared shared;
    private HostCopier copier;

    /** Arguments already checked (by {@link CudaArrowImport}'s entry points); {@code transfer} is used at DEFAULT and FULL only. */
    CudaImport(ValidationLevel level, CudaStream stream, HostDeviceTransfer transfer) {
        this.level = level;
        this.stream = stream;
        this.transfer = transfer;
    }

    @Override
    public void prepare(DeviceKind deviceType, long deviceId, MemorySegment syncEvent, ArrayNode structure) {
        if (deviceType != DeviceKind.CUDA && deviceType != DeviceKind.CUDA_HOST
                && deviceType != DeviceKind.CUDA_MANAGED) {
            throw new ValidationException(Category.DEVICE, "device_type", "expected "
                    + DeviceKind.CUDA.arrowName() + ", " + DeviceKind.CUDA_HOST.arrowName() + " or "
                    + DeviceKind.CUDA_MANAGED.arrowName() + " but found " + deviceType.code());
        }
        if (deviceId < 0 || deviceId >= Cuda.deviceCount()) {
            throw new ValidationException(Category.DEVICE, "device_id", "expected a CUDA device ordinal in [0, "
                    + Cuda.deviceCount() + ") but found " + deviceId);
        }
        if (deviceId != stream.device().ordinal()) {
            throw new ValidationException(Category.DEVICE, "device_id", "expected " + stream.device().ordinal()
                    + " (the device of the consumer's stream) but found " + deviceId);
        }
        this.type = deviceType;
        this.device = (int) deviceId;
        if (!syncEvent.equals(MemorySegment.NULL)) {
            long event = syncEvent.reinterpret(8).get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            if (event != 0) {
                stream.waitEvent(event); // every copy below is queued on this stream, after the wait
            }
        }
        TreeMap<Long, Long> ranges = new TreeMap<>();
        checkPointers(structure, deviceType, device, ranges);
        shared = new Shared(ranges.keySet().stream().mapToLong(Long::longValue).toArray());
        for (Map.Entry<Long, Long> r : ranges.entrySet()) {
            shared.retain();
            try {
                wraps.add(DeviceBuffer.wrap(r.getKey(), r.getValue(), stream.device(), shared));
            } catch (RuntimeException | Error e) {
                shared.close();
                throw e;
            }
        }
        if (CudaArrowImport.reads(level)) {
            copier = new HostCopier(transfer, stream, wraps);
        }
    }

    @Override
    public HostCopies copyToHost(List<ArrayNode> nodes) {
        if (copier == null) {
            throw new IllegalStateException("copies asked for before prepare, or at " + level);
        }
        return copier.copyToHost(nodes);
    }

    /** The import returned {@code imported}: the batch over it, or after a throw everything released. */
    CudaArrowBatch finish(SchemaNode schema, ImportedArray imported) {
        try {
            closeCopier();
            if (shared == null) {
                throw new IllegalStateException("the import returned without preparing the CUDA checks");
            }
            shared.adopt(imported);
        } catch (RuntimeException | Error e) {
            abandon(e);
            imported.close();
            throw e;
        }
        try {
            ArrayNode root = imported.root();
            long[] starts = new long[wraps.size()];
            long[] sizes = new long[wraps.size()];
            for (int k = 0; k < starts.length; k++) { // sorted: the wraps were made in address order
                starts[k] = wraps.get(k).address();
                sizes[k] = wraps.get(k).byteSize();
            }
            checkInside(root, starts, sizes);
            List<DeviceBuffer> held = List.copyOf(wraps);
            Shared ours = shared;
            ours.retain(); // the batch's own reference: a batch with no device allocation (no rows) keeps it too
            CudaArrowBatch batch;
            try {
                batch = new CudaArrowBatch("imported CUDA ArrowDeviceArray", schema, root, new Device(type, device),
                        new CudaArrowBatch.Holdings(held, () -> {
                            try {
                                CudaArrowSupport.closeAll(held);
                            } finally {
                                ours.close();
                            }
                        }, imported));
            } catch (RuntimeException | Error e) {
                ours.close();
                throw e;
            }
            shared.close(); // the creator's reference: the batch and the wraps now keep the struct alive
            return batch;
        } catch (RuntimeException | Error e) {
            abandon(e); // the last reference releases the struct
            throw e;
        }
    }

    /**
     * Drops what {@link #prepare} made: the host copies, the wraps and the creator's reference (which
     * releases the struct once adopted; an import that threw has released it already). Failures are
     * added to {@code failure} when there is one.
     */
    void abandon(Throwable failure) {
        try {
            closeCopier();
            CudaArrowSupport.closeAll(wraps);
        } catch (RuntimeException | Error e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        } finally {
            wraps.clear();
            if (shared != null) {
                Shared s = shared;
                shared = null;
                s.close();
            }
        }
    }

    private void closeCopier() {
        if (copier != null) {
            HostCopier c = copier;
            copier = null;
            c.close();
        }
    }

    /**
     * Releases the imported struct when the last wrap of its memory (and the importer's own reference) is
     * closed; the one reference count of the library counts them. Made before the import returns (its
     * wraps serve the copies that validate it), it adopts the imported array once there is one.
     */
    private static final class Shared implements AutoCloseable {
        private final RefCount refs;
        private volatile ImportedArray imported;

        Shared(long[] rangeStarts) {
            this.refs = new RefCount(() -> {
                for (long start : rangeStarts) {
                    PointerAttributes.invalidate(start);
                }
                ImportedArray a = imported;
                if (a != null) {
                    a.close();
                }
            });
        }

        void adopt(ImportedArray array) {
            this.imported = array;
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

    /**
     * Every buffer of known, non-zero size lies inside one wrapped allocation, the sizes DEFAULT derives
     * from contents included (the pointer checks saw only the sizes the structure gives).
     */
    private static void checkInside(ArrayNode n, long[] starts, long[] sizes) {
        for (int i = 0; i < n.bufferCount(); i++) {
            long addr = Nodes.address(n, i);
            long len = n.bufferLength(i);
            if (addr != 0 && len > 0 && CopyPlan.holder(starts, sizes, addr, len) < 0) {
                throw new ValidationException(Category.DEVICE, FieldPath.join(n.path(), "buffers[" + i + "]"),
                        "expected " + len + " bytes within the device allocation of the buffer but found fewer");
            }
        }
        for (ArrayNode c : n.children()) {
            checkInside(c, starts, sizes);
        }
        if (n.dictionary() != null) {
            checkInside(n.dictionary(), starts, sizes);
        }
    }

    private static void checkPointers(ArrayNode n, DeviceKind type, int device, TreeMap<Long, Long> ranges) {
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
            boolean ok = type == DeviceKind.CUDA_HOST ? a.kind() == DeviceKind.CUDA_HOST
                    : (a.kind() == DeviceKind.CUDA
                    || a.kind() == DeviceKind.CUDA_MANAGED) && a.deviceOrdinal() == device;
            if (!ok) {
                String expected = type == DeviceKind.CUDA_HOST ? "pinned host memory (ARROW_DEVICE_CUDA_HOST)"
                        : "device memory of device " + device;
                String found = switch (a.kind()) {
                    case CPU -> "unregistered host memory";
                    case CUDA_HOST -> "host memory of device " + a.deviceOrdinal();
                    case CUDA_MANAGED -> "managed memory of device " + a.deviceOrdinal();
                    default -> "device memory of device " + a.deviceOrdinal();
                };
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
}
