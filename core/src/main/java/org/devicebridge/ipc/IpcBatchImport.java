package org.devicebridge.ipc;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.HandleBusyException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.ipc.IpcBatchDescriptor.BufferRef;
import org.devicebridge.ipc.IpcBatchDescriptor.Node;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.foreign.CudaStructs;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Closing;

/**
 * A device batch another process shared through CUDA IPC (an {@link IpcBatchDescriptor}, written by this
 * library's {@link IpcBatchExport} or by any process following the format, e.g. CPython with CuPy and
 * pyarrow), mapped into this process zero-copy and imported as a {@link CudaArrowBatch} with the library's
 * validation at the caller's level.
 *
 * <p>{@link #open} maps every allocation ({@code cuIpcOpenMemHandle}; its size is what
 * {@code cuMemGetAddressRange} reports for the mapped base), checks every buffer lies inside its mapping,
 * makes the caller's stream wait on the exporter's event, and imports the batch as
 * {@link CudaArrow#importDeviceArray} imports a C producer's {@code ArrowDeviceArray}. The mappings
 * close when the batch and every export made of it are closed; from then on {@link #closeMessage()} gives the
 * message to send back to the exporter, which keeps the memory alive until it gets it.
 *
 * <p>Thread safety: every method may be called from any thread. This object owns the batch (and through it
 * the mappings); the caller owns this object.
 */
final class IpcBatchImport implements AutoCloseable {
    private final IpcBatchDescriptor descriptor;
    private final CudaArrowBatch batch;
    private final CountDownLatch unmapped;

    private IpcBatchImport(IpcBatchDescriptor descriptor, CudaArrowBatch batch, CountDownLatch unmapped) {
        this.descriptor = descriptor;
        this.batch = batch;
        this.unmapped = unmapped;
    }

    /**
     * Maps the descriptor's allocations on its device, makes {@code stream} wait on its event (if any; the host
     * does not block), and imports the batch at {@code level} (see {@link CudaArrow#importDeviceArray}:
     * MINIMAL checks the structure against the schema and every buffer's pointer attributes; DEFAULT and FULL
     * also read what they validate through host copies made by {@code transfer}, after the wait).
     *
     * <p>Ownership: after a return the caller owns the returned import (and through it the batch and the
     * mappings); after a throw nothing is mapped (the close message may be sent at once).
     *
     * @param descriptor what the exporter sent
     * @param level how much to check before the batch is used
     * @param stream a stream of the descriptor's device, on which the caller will use the batch; borrowed
     * @param transfer makes the host copies DEFAULT and FULL validate; may be null at NONE and MINIMAL; borrowed
     * @return the import, which the caller owns
     * @throws ValidationException {@code DEVICE} for a device that does not exist or is not {@code stream}'s,
     *         or a handle the driver does not open (path {@code handles[k]}, {@code event_handle});
     *         {@code LENGTH} for a buffer beyond its mapped allocation (path {@code array.children[c].buffers[i]});
     *         {@code FORMAT} for a schema message Arrow Java cannot read; and the library's import categories
     *         for a batch that does not match its schema or fails the level's checks
     * @throws org.devicebridge.UnsupportedFeatureException for a dictionary-encoded field, or pool allocations
     *         ({@code pool_pointers}, format version 2)
     * @throws CudaUnavailableException without a CUDA driver
     * @throws org.devicebridge.ArrowJavaUnavailableException without Arrow Java (it reads the schema)
     * @throws NullPointerException without a transfer at DEFAULT or FULL (nothing is mapped then)
     * @throws org.devicebridge.InvalidArgumentException if {@code transfer} is of another device than
     *         {@code stream} (nothing is mapped then)
     */
    public static IpcBatchImport open(IpcBatchDescriptor descriptor, ValidationLevel level, CudaStream stream,
                                      HostDeviceTransfer transfer) {
        return open(descriptor, new Target(level, stream, transfer), null);
    }

    /** Where and how {@link #open} imports: the public parameters, grouped. */
    record Target(ValidationLevel level, CudaStream stream, HostDeviceTransfer transfer) {}

    /**
     * {@link #open(IpcBatchDescriptor, ValidationLevel, CudaStream, HostDeviceTransfer)}, and {@code onUnmapped}
     * (if not null) runs once every mapping is closed, on the thread that closes the last one; it must not throw.
     * After a throw it does not run (nothing was mapped).
     */
    static IpcBatchImport open(IpcBatchDescriptor descriptor, Target target, Runnable onUnmapped) {
        return open(descriptor, target, onUnmapped, IpcMappings.EACH_IMPORT);
    }

    /**
     * {@link #open(IpcBatchDescriptor, Target, Runnable)} with the mappings and the event from {@code mappings}:
     * the import closes each reference {@code mappings} gave it when its batch is released (after a throw, at once).
     */
    static IpcBatchImport open(IpcBatchDescriptor descriptor, Target target, Runnable onUnmapped, IpcMappings mappings) {
        ValidationLevel level = target.level();
        CudaStream stream = target.stream();
        HostDeviceTransfer transfer = target.transfer();
        requireNativeAccess();
        requireArrowJava("IpcImport.importBatch");
        Cuda.require();
        Objects.requireNonNull(descriptor, "descriptor");
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(stream, "stream");
        if (level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL) {
            Objects.requireNonNull(transfer, "transfer (needed to validate at " + level + ")");
        }
        if (!descriptor.poolPointers().isEmpty()) {
            throw new UnsupportedFeatureException("pool_pointers", "expected allocations with CUDA IPC handles but found "
                    + descriptor.poolPointers().size() + " of an IPC-shareable pool: a pool travels as a file descriptor"
                    + " over a worker channel's socket to its worker, and this importer imports none");
        }
        DeviceCopies copies = new DeviceCopies(null, transfer, stream); // checks the transfer's device before mapping
        int device = descriptor.device();
        int devices = Cuda.deviceCount();
        if (device >= devices) {
            throw new ValidationException(Category.DEVICE, "device", "expected a CUDA device ordinal in [0, " + devices
                    + ") but found " + device);
        }
        if (device != stream.device().ordinal()) {
            throw new ValidationException(Category.DEVICE, "device", "expected " + stream.device().ordinal()
                    + " (the device of the consumer's stream) but found " + device);
        }
        SchemaNode schema = validate(descriptor); // the whole descriptor, before any handle is opened
        List<DeviceBuffer> mapped = map(descriptor, mappings);
        CountDownLatch unmapped = new CountDownLatch(1);
        boolean handedOver = false;
        try (Arena arena = Arena.ofConfined()) {
            long[] bases = new long[mapped.size()];
            long[] sizes = new long[mapped.size()];
            for (int k = 0; k < bases.length; k++) {
                bases[k] = mapped.get(k).address();
                sizes[k] = mapped.get(k).byteSize();
            }
            checkInside(descriptor.array(), sizes, "array");
            byte[] eventHandle = descriptor.eventHandle();
            if (eventHandle != null) {
                try {
                    mappings.waitEvent(stream, eventHandle);
                } catch (CudaException e) {
                    throw new ValidationException(Category.DEVICE, "event_handle", "expected an event handle this"
                            + " process can open on device " + device + " but the driver refused it: " + e.getMessage(), e);
                }
            }
            MemorySegment struct = arena.allocate(ArrowDeviceArray.layout());
            writeDeviceArray(descriptor.array(), bases, device, struct, () -> {
                try {
                    Closing.closeAll(mapped, DeviceBuffer::close);
                } finally {
                    unmapped.countDown();
                    if (onUnmapped != null) {
                        onUnmapped.run();
                    }
                }
            });
            handedOver = true; // the struct's release closes the mappings from now on
            CudaArrowBatch batch = CudaArrow.importDeviceArray(schema, struct, level, copies);
            return new IpcBatchImport(descriptor, batch, unmapped);
        } catch (RuntimeException | Error e) {
            if (!handedOver) {
                Closing.closeAllAfter(mapped, DeviceBuffer::close, e);
            }
            throw e;
        }
    }

    /**
     * Everything about a descriptor that needs no driver: its schema message (bounds-checked, then read by
     * Arrow Java and checked as an imported schema) and the node tree's agreement with it (a struct root, one
     * child node per field at every level). Opens nothing; what is left (buffer counts, lengths, contents) is
     * the import's, after mapping.
     *
     * @return the batch's struct type
     * @throws ValidationException with the path of the first disagreement
     * @throws org.devicebridge.UnsupportedFeatureException for a dictionary-encoded field, or pool allocations
     *         ({@code pool_pointers}, format version 2)
     */
    static SchemaNode validate(IpcBatchDescriptor descriptor) {
        SchemaNode schema = IpcSchemas.deserialize(descriptor.schema());
        checkShape(schema, descriptor.array(), "array");
        return schema;
    }

    private static void checkShape(SchemaNode type, Node node, String path) {
        if (type.children().size() != node.children().size()) {
            throw new ValidationException(Category.STRUCTURE, FieldPath.join(path, "children"), "expected "
                    + type.children().size() + " children (the schema's) but found " + node.children().size());
        }
        for (int c = 0; c < node.children().size(); c++) { // depth bounded by both trees' caps (64)
            checkShape(type.children().get(c), node.children().get(c), FieldPath.join(path, "children[" + c + "]"));
        }
    }

    /** Maps every handle through {@code mappings}; after a throw no reference is held. */
    private static List<DeviceBuffer> map(IpcBatchDescriptor descriptor, IpcMappings mappings) {
        List<byte[]> handles = descriptor.handles();
        List<DeviceBuffer> mapped = new ArrayList<>(handles.size());
        try {
            for (int k = 0; k < handles.size(); k++) {
                try {
                    mapped.add(mappings.map(Device.cuda(descriptor.device()), k, handles.get(k)));
                } catch (CudaException e) {
                    throw new ValidationException(Category.DEVICE, "handles[" + k + "]", "expected a memory handle"
                            + " this process can open on device " + descriptor.device() + " but the driver refused it: "
                            + e.getMessage(), e);
                }
            }
            return mapped;
        } catch (RuntimeException | Error e) {
            Closing.closeAllAfter(mapped, DeviceBuffer::close, e);
            throw e;
        }
    }

    /**
     * Every buffer lies inside its mapped allocation: {@code sizes[k]} bytes mapped from handle {@code k} (the
     * driver's {@code cuMemGetAddressRange} of the mapped base).
     */
    static void checkInside(Node n, long[] sizes, String path) {
        for (int i = 0; i < n.buffers().size(); i++) {
            BufferRef b = n.buffers().get(i);
            if (b != null && b.end() > sizes[b.handle()]) {
                throw new ValidationException(Category.LENGTH, FieldPath.join(path, "buffers[" + i + "]"),
                        "expected offset + size within the " + sizes[b.handle()] + " bytes mapped from handles["
                        + b.handle() + "] but found " + b.offset() + " + " + b.size() + " = " + b.end());
            }
        }
        for (int c = 0; c < n.children().size(); c++) {
            checkInside(n.children().get(c), sizes, FieldPath.join(path, "children[" + c + "]"));
        }
        if (n.dictionary() != null) {
            checkInside(n.dictionary(), sizes, FieldPath.join(path, "dictionary"));
        }
    }

    /**
     * Writes a CUDA {@code ArrowDeviceArray} (no sync event: the caller waited already) over the mapped
     * allocations at {@code bases} (indexed by handle) into {@code out}. A buffer of no bytes points at its allocation's base (any valid address
     * serves; the offset may be the allocation's end). After a return the struct owns {@code onFree} (run when
     * its last node is released); after a throw {@code out} is untouched and {@code onFree} was not run.
     */
    static void writeDeviceArray(Node root, long[] bases, int device, MemorySegment out,
                                 Runnable onFree) {
        CudaStructs.write(root, new CudaStructs.Shape<Node>() {
            @Override
            public long length(Node n) {
                return n.length();
            }

            @Override
            public long nullCount(Node n) {
                return n.nullCount();
            }

            @Override
            public long offset(Node n) {
                return n.offset();
            }

            @Override
            public int bufferCount(Node n) {
                return n.buffers().size();
            }

            @Override
            public long address(Node n, int i) {
                BufferRef b = n.buffers().get(i);
                if (b == null) {
                    return 0;
                }
                long base = bases[b.handle()];
                return b.size() == 0 ? base : base + b.offset();
            }

            @Override
            public List<Node> children(Node n) {
                return n.children();
            }

            @Override
            public Node dictionary(Node n) {
                return n.dictionary();
            }
        }, out.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof()), onFree);
        ArrowDeviceArray.device_id(out, device);
        ArrowDeviceArray.device_type(out, DeviceKind.CUDA.code());
        ArrowDeviceArray.sync_event(out, MemorySegment.NULL);
        for (int i = 0; i < 3; i++) {
            out.set(ValueLayout.JAVA_LONG, ArrowDeviceArray.reserved$offset() + 8L * i, 0L);
        }
    }

    /** {@return the descriptor this import was opened from} */
    public IpcBatchDescriptor descriptor() {
        return descriptor;
    }

    /**
     * {@return the imported batch: borrowed, owned by this import; closing it (or this import) starts the unmapping}
     */
    public CudaArrowBatch batch() {
        return batch;
    }

    /**
     * {@return {@code true} once every mapping is closed: the batch and every export of it are closed}
     */
    public boolean isUnmapped() {
        return unmapped.getCount() == 0;
    }

    /**
     * Waits until every mapping is closed (the batch and every export made of it are closed).
     *
     * @param timeout how long to wait
     * @return {@code true} if unmapped; {@code false} on timeout
     * @throws InterruptedException if interrupted while waiting
     */
    public boolean awaitUnmapped(Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "timeout");
        return unmapped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * {@return the message to send back to the exporter, {@code {"devicebridge_ipc_closed": "<id>"}}, once
     * every mapping is closed}
     *
     * @throws HandleBusyException while a mapping is open (the batch, or an export of it, is still open)
     */
    public String closeMessage() {
        if (!isUnmapped()) {
            throw new HandleBusyException("IPC batch " + descriptor.id() + " is still mapped: close the batch and"
                    + " every export of it before sending the close message", null);
        }
        return descriptor.closeMessage();
    }

    /**
     * Closes the batch (idempotent): the mappings close now, or when the last export of the batch is released.
     * Order the last use of the batch on the device before this (synchronize the stream, or an event).
     */
    @Override
    public void close() {
        batch.close();
    }

    @Override
    public String toString() {
        return "IpcBatchImport[" + descriptor.id() + (isUnmapped() ? ", unmapped" : ", mapped") + "]";
    }
}
