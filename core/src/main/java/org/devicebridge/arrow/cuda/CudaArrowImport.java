package org.devicebridge.arrow;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowWriter;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.Native;

/**
 * Arrow data in CUDA device memory: upload of Arrow Java batches, zero-copy export and import of CUDA
 * {@code ArrowDeviceArray}s, download into Arrow Java, and Arrow IPC from and to device batches.
 *
 * <p>Synchronisation: every method takes the caller's {@link CudaStream}. Uploads and imports make the data
 * ready for work queued on that stream afterwards (an import makes the stream wait on the producer's
 * {@code sync_event} with {@code cuStreamWaitEvent}, without blocking the host); an export records a pooled
 * event on that stream and hands it out as the {@code sync_event}. The host blocks only where data must
 * reach it: in {@link #download}, in an import validated at {@link ValidationLevel#DEFAULT} or
 * {@link ValidationLevel#FULL}, and inside {@link HostDeviceTransfer} before reusing pinned staging memory.
 *
 * <p>Every method throws {@link CudaUnavailableException} when no CUDA driver is present; an import still
 * releases its input struct then.
 */
public final class CudaArrow {
    /** {@code ARROW_DEVICE_CUDA}. */
    public static final int ARROW_DEVICE_CUDA = 2;
    /** {@code ARROW_DEVICE_CUDA_HOST}: pinned host memory. */
    public static final int ARROW_DEVICE_CUDA_HOST = 3;
    /** {@code ARROW_DEVICE_CUDA_MANAGED}: managed (unified) memory. */
    public static final int ARROW_DEVICE_CUDA_MANAGED = 13;

    private CudaArrow() {}

    // ------------------------------------------------------------------ upload

    /**
     * Uploads the batch in {@code root} to the device of {@code transfer}: the batch is exported to C
     * structs and validated at {@link ValidationLevel#DEFAULT} (which sizes every buffer), then all buffers
     * are packed into one device allocation ({@value HostDeviceTransfer#ALIGNMENT}-byte aligned) through the
     * transfer's reused pinned staging memory with asynchronous copies on {@code stream}. Offsets, null
     * counts and slices are kept as they are. The host buffers have been read when this returns.
     *
     * <p>Ownership: after a return the caller owns the returned batch (close it) and still owns
     * {@code root}, {@code provider}, {@code transfer} and {@code stream} ({@code stream} must stay open
     * until the batch is freed: the allocation is freed stream-ordered on it). After a throw nothing new
     * is held.
     *
     * @param provider the dictionaries of dictionary-encoded columns; may be null if there are none
     * @throws CudaUnavailableException without a CUDA driver
     * @throws IllegalArgumentException if {@code transfer} and {@code stream} are of different devices
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch upload(VectorSchemaRoot root, DictionaryProvider provider, HostDeviceTransfer transfer,
                                        CudaStream stream) {
        requireCuda();
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(transfer, "transfer");
        Objects.requireNonNull(stream, "stream");
        sameDevice(transfer, stream);
        SchemaNode schema;
        try (ExportedSchema es = ArrowExport.exportSchema(root.getSchema(), provider);
             ImportedSchema is = ArrowImport.importSchema(es.segment())) {
            schema = is.root();
        }
        try (ExportedArray ea = ArrowExport.exportRoot(root, provider);
             ImportedArray host = ArrowImport.importArray(schema, ea.segment(), ValidationLevel.DEFAULT)) {
            List<MemorySegment> segments = new ArrayList<>();
            List<long[]> slots = new ArrayList<>(); // {node index, buffer index}
            List<ArrayNode> nodes = new ArrayList<>();
            collect(host.root(), nodes);
            for (int n = 0; n < nodes.size(); n++) {
                ArrayNode node = nodes.get(n);
                for (int i = 0; i < node.bufferCount(); i++) {
                    long len = node.bufferLength(i);
                    if (node.address(i) != 0 && len > 0) {
                        segments.add(MemorySegment.ofAddress(node.address(i)).reinterpret(len));
                        slots.add(new long[] {n, i});
                    }
                }
            }
            HostDeviceTransfer.Upload up = transfer.upload(segments, stream);
            try {
                long base = up.buffer().address();
                long[] offsets = up.offsets();
                Map<ArrayNode, long[]> placed = new IdentityHashMap<>();
                for (ArrayNode node : nodes) {
                    long[] a = new long[node.bufferCount()];
                    for (int i = 0; i < a.length; i++) {
                        // An empty but non-NULL buffer stays non-NULL (some consumers require it): it points at
                        // the allocation's start, and no byte is read through it.
                        a[i] = node.address(i) == 0 ? 0 : base;
                    }
                    placed.put(node, a);
                }
                for (int k = 0; k < slots.size(); k++) {
                    long[] s = slots.get(k);
                    placed.get(nodes.get((int) s[0]))[(int) s[1]] = base + offsets[k];
                }
                ArrayNode device = relocate(host.root(), placed);
                DeviceBuffer memory = up.buffer();
                return new CudaArrowBatch(CudaArrowBatch.describe("uploaded Arrow batch", device, transfer.device()),
                        schema, device, transfer.device(), ARROW_DEVICE_CUDA, List.of(memory), memory::close);
            } catch (RuntimeException | Error e) {
                up.close();
                throw e;
            }
        }
    }

    /** {@link #upload(VectorSchemaRoot, DictionaryProvider, HostDeviceTransfer, CudaStream)} without dictionaries. */
    public static CudaArrowBatch upload(VectorSchemaRoot root, HostDeviceTransfer transfer, CudaStream stream) {
        return upload(root, null, transfer, stream);
    }

    // ------------------------------------------------------------------ export

    /**
     * Exports {@code batch} as an {@code ArrowDeviceArray} into {@code outDeviceArray}, without copying:
     * {@code device_type} is the batch's ({@code ARROW_DEVICE_CUDA} for uploads), {@code device_id} its
     * device, the buffers are the device addresses, and {@code sync_event} points to a {@code CUevent}
     * (taken from the event pool) recorded on {@code stream} now: the consumer waits on it before reading.
     * The export holds its own reference to the device memory; the consumer's {@code release} (callable
     * from any thread, once) drops it and returns the event to its pool. The consumer must order its own
     * use of the buffers before calling {@code release}.
     *
     * <p>Ownership: after a return the consumer owns the struct, and the caller still owns {@code batch}
     * (closing it does not invalidate the export) and {@code stream}. After a throw
     * {@code outDeviceArray} is untouched and nothing is held.
     *
     * @param outDeviceArray an {@code ArrowDeviceArray} (a zero-length segment is resized)
     * @throws CudaUnavailableException without a CUDA driver
     * @throws IllegalArgumentException if {@code stream} is of another device than the batch
     * @throws org.devicebridge.HandleClosedException if the batch was closed
     */
    public static void exportDeviceArray(CudaArrowBatch batch, CudaStream stream, MemorySegment outDeviceArray) {
        requireCuda();
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(stream, "stream");
        MemorySegment out = sized(outDeviceArray, ArrowDeviceArray.sizeof(), "outDeviceArray");
        ArrayNode root = batch.root();
        List<DeviceBuffer> memory = batch.memory();
        int device = batch.device();
        if (stream.device() != device) {
            throw new IllegalArgumentException(String.format(Locale.ROOT,
                    "stream of device %d cannot export a batch of device %d", stream.device(), device));
        }
        List<DeviceBuffer> refs = new ArrayList<>(memory.size());
        CudaEvent event = null;
        MemorySegment slot = MemorySegment.NULL;
        try {
            for (DeviceBuffer m : memory) {
                refs.add(m.retain());
            }
            event = CudaEvent.acquire(device);
            event.record(stream);
            slot = Native.malloc(8);
            slot.set(ValueLayout.JAVA_LONG, 0, event.address());
            CudaEvent ev = event;
            MemorySegment sl = slot;
            CudaStructs.write(root, ArrayNode::address, out.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof()),
                    () -> freeExport(refs, ev, sl));
        } catch (RuntimeException | Error e) {
            freeExport(refs, event, slot);
            throw e;
        }
        ArrowDeviceArray.device_id(out, device);
        ArrowDeviceArray.device_type(out, batch.deviceType());
        ArrowDeviceArray.sync_event(out, slot);
        for (int i = 0; i < 3; i++) {
            out.set(ValueLayout.JAVA_LONG, ArrowDeviceArray.reserved$offset() + 8L * i, 0L);
        }
    }

    /**
     * Exports device batches as a CUDA {@code ArrowDeviceArrayStream} ({@code device_type}
     * {@code ARROW_DEVICE_CUDA}) into {@code outStream}: {@code get_schema} exports {@code schema};
     * {@code get_next} takes the next batch from {@code batches}, exports it as
     * {@link #exportDeviceArray} does (a sync event recorded on {@code stream}) and closes it (the export
     * keeps its memory); an exception becomes an errno with its message from {@code get_last_error}.
     *
     * <p>Ownership: after a return the consumer owns the stream; the stream owns {@code batches} (closed on
     * release if it is {@link AutoCloseable}) and every batch it yields. The caller keeps {@code stream},
     * which must stay open until the consumer released the stream. After a throw {@code outStream} is
     * untouched and nothing is held.
     *
     * @throws CudaUnavailableException without a CUDA driver
     */
    public static void exportDeviceStream(Schema schema, java.util.Iterator<? extends CudaArrowBatch> batches,
                                          CudaStream stream, MemorySegment outStream) {
        requireCuda();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(batches, "batches");
        Objects.requireNonNull(stream, "stream");
        MemorySegment out = sized(outStream, org.devicebridge.generated.arrow.ArrowDeviceArrayStream.sizeof(), "outStream");
        CudaStreamExport.export(new CudaStreamExport.State(schema, batches, stream, ARROW_DEVICE_CUDA), out);
    }

    /** Runs inside the release upcall (or on a failed export): every step runs even if one fails. */
    private static void freeExport(List<DeviceBuffer> refs, CudaEvent event, MemorySegment slot) {
        RuntimeException failure = null;
        for (DeviceBuffer r : refs) {
            try {
                r.close();
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        try {
            if (event != null) {
                event.close();
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        if (!slot.equals(MemorySegment.NULL)) {
            Native.free(slot);
        }
        if (failure != null) {
            throw failure;
        }
    }

    // ------------------------------------------------------------------ import

    /**
     * Imports the CUDA {@code ArrowDeviceArray} at {@code arrowDeviceArrayPtr} (device type
     * {@code ARROW_DEVICE_CUDA}, {@code CUDA_HOST} or {@code CUDA_MANAGED}) of type {@code schema}
     * (borrowed), without copying its buffers. The struct is moved and checked at
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
        requireCuda();
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
            requireCuda();
            Objects.requireNonNull(stream, "stream");
            boolean reads = level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL;
            if (reads) {
                Objects.requireNonNull(transfer, "transfer (needed to validate at " + level + ")");
                sameDevice(transfer, stream);
            }
            int type = imported.deviceType();
            if (type != ARROW_DEVICE_CUDA && type != ARROW_DEVICE_CUDA_HOST && type != ARROW_DEVICE_CUDA_MANAGED) {
                throw new ValidationException(Category.DEVICE, "device_type", "expected ARROW_DEVICE_CUDA (2), "
                        + "ARROW_DEVICE_CUDA_HOST (3) or ARROW_DEVICE_CUDA_MANAGED (13) but found " + type);
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
                    shared.refs.incrementAndGet();
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
                        device), schema, root, device, type, held, () -> closeAll(held));
                shared.close(); // the creator's reference: the wraps now keep the struct alive
                return batch;
            } catch (RuntimeException | Error e) {
                try {
                    closeAll(wraps);
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

    /** {@link #importDeviceArray(SchemaNode, MemorySegment, ValidationLevel, CudaStream, HostDeviceTransfer)} at MINIMAL. */
    public static CudaArrowBatch importDeviceArray(SchemaNode schema, MemorySegment arrowDeviceArrayPtr,
                                                   CudaStream stream) {
        return importDeviceArray(schema, arrowDeviceArrayPtr, ValidationLevel.MINIMAL, stream, null);
    }

    /** Releases the imported struct when the last wrap of its memory (and the importer's own reference) is closed. */
    private static final class Shared implements AutoCloseable {
        final AtomicInteger refs = new AtomicInteger(1);
        final ImportedArray imported;
        final long[] rangeStarts;

        Shared(ImportedArray imported, java.util.Set<Long> rangeStarts) {
            this.imported = imported;
            this.rangeStarts = rangeStarts.stream().mapToLong(Long::longValue).toArray();
        }

        @Override
        public void close() {
            if (refs.decrementAndGet() == 0) {
                for (long start : rangeStarts) {
                    PointerAttributes.invalidate(start);
                }
                imported.close();
            }
        }
    }

    private static void checkPointers(ArrayNode n, int type, int device, TreeMap<Long, Long> ranges) {
        for (int i = 0; i < n.bufferCount(); i++) {
            long addr = n.address(i);
            long len = n.bufferLength(i);
            if (addr == 0) {
                continue;
            }
            String path = SchemaReader.join(n.path(), "buffers[" + i + "]");
            PointerAttributes a;
            try {
                a = PointerAttributes.of(addr);
            } catch (CudaException e) {
                throw new ValidationException(Category.DEVICE, path,
                        "expected a CUDA pointer but the driver rejected it: " + e.getMessage());
            }
            boolean ok = switch (type) {
                case ARROW_DEVICE_CUDA_HOST -> a.memoryType() == PointerAttributes.MemoryType.HOST;
                default -> (a.memoryType() == PointerAttributes.MemoryType.DEVICE
                        || a.memoryType() == PointerAttributes.MemoryType.UNIFIED) && a.deviceOrdinal() == device;
            };
            if (!ok) {
                String expected = type == ARROW_DEVICE_CUDA_HOST ? "pinned host memory (ARROW_DEVICE_CUDA_HOST)"
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

    // ------------------------------------------------------------------ download

    /**
     * Copies {@code batch} (a struct array: a record batch) into a new {@link VectorSchemaRoot}: every
     * buffer is copied to host memory through {@code transfer}'s pinned staging memory, ordered on
     * {@code stream}, then checked at {@link ValidationLevel#DEFAULT} and handed to Arrow Java without a
     * further copy. One host synchronisation per device allocation (one for an uploaded batch), plus one
     * before it when variable-size data buffers must first be sized from their last offsets.
     *
     * <p>Ownership: after a return the caller owns the root (and the dictionaries added to
     * {@code dictionaries}); the host memory is freed when the last Arrow buffer is released. The caller
     * still owns {@code batch}. After a throw nothing new is held.
     *
     * @param dictionaries receives the dictionaries; may be null if the schema has none
     * @throws CudaUnavailableException without a CUDA driver
     * @throws UnsupportedFeatureException if Arrow Java cannot hold a type exactly
     * @throws ValidationException if the device data is malformed (an import at MINIMAL did not read it)
     */
    public static VectorSchemaRoot download(CudaArrowBatch batch, BufferAllocator allocator,
                                            DictionaryProvider.MapDictionaryProvider dictionaries,
                                            HostDeviceTransfer transfer, CudaStream stream) {
        requireCuda();
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(transfer, "transfer");
        Objects.requireNonNull(stream, "stream");
        sameDevice(transfer, stream);
        ArrayNode root = resolveLengths(batch.root(), batch.memory(), transfer, stream);
        ImportedArray host = mirror(batch.schema(), root, batch.memory(), transfer, stream, ValidationLevel.DEFAULT);
        try {
            return ArrowJavaImport.importVectorSchemaRoot(allocator, host, dictionaries);
        } catch (UnsupportedFeatureException e) {
            host.close();
            throw e;
        }
    }

    /** {@link #download(CudaArrowBatch, BufferAllocator, DictionaryProvider.MapDictionaryProvider, HostDeviceTransfer, CudaStream)} without dictionaries. */
    public static VectorSchemaRoot download(CudaArrowBatch batch, BufferAllocator allocator, HostDeviceTransfer transfer,
                                            CudaStream stream) {
        return download(batch, allocator, null, transfer, stream);
    }

    // ------------------------------------------------------------------ IPC

    /**
     * Writes device batches as an Arrow IPC stream. <b>This path copies:</b> each batch is downloaded to the
     * host ({@link #download}) and written with Arrow Java's {@link ArrowStreamWriter}. Dictionary-encoded
     * schemas are not supported here.
     *
     * <p>Ownership: the caller keeps owning the batches, {@code out} (not closed) and everything else.
     *
     * @param schema the Arrow Java schema of the batches
     * @throws UnsupportedFeatureException for dictionary-encoded fields
     * @throws DeviceBridgeException if writing fails
     */
    public static void writeIpcStream(Schema schema, Iterable<CudaArrowBatch> batches, OutputStream out,
                                      BufferAllocator allocator, HostDeviceTransfer transfer, CudaStream stream) {
        Objects.requireNonNull(out, "out");
        writeIpc(schema, batches, Channels.newChannel(out), false, allocator, transfer, stream);
    }

    /**
     * Writes device batches as an Arrow IPC file (with footer) through Arrow Java's {@link ArrowFileWriter}.
     * <b>This path copies</b>, as {@link #writeIpcStream} does; ownership and exceptions as there.
     */
    public static void writeIpcFile(Schema schema, Iterable<CudaArrowBatch> batches, WritableByteChannel out,
                                    BufferAllocator allocator, HostDeviceTransfer transfer, CudaStream stream) {
        writeIpc(schema, batches, out, true, allocator, transfer, stream);
    }

    private static void writeIpc(Schema schema, Iterable<CudaArrowBatch> batches, WritableByteChannel out, boolean file,
                                 BufferAllocator allocator, HostDeviceTransfer transfer, CudaStream stream) {
        requireCuda();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(batches, "batches");
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(allocator, "allocator");
        for (Field f : schema.getFields()) {
            checkNoDictionary(f);
        }
        DictionaryProvider none = new DictionaryProvider.MapDictionaryProvider();
        try (VectorSchemaRoot writerRoot = VectorSchemaRoot.create(schema, allocator);
             ArrowWriter writer = file ? new ArrowFileWriter(writerRoot, none, out)
                     : new ArrowStreamWriter(writerRoot, none, out)) {
            writer.start();
            for (CudaArrowBatch b : batches) {
                try (VectorSchemaRoot host = download(b, allocator, transfer, stream);
                     ArrowRecordBatch rb = new VectorUnloader(host).getRecordBatch()) {
                    new VectorLoader(writerRoot).load(rb);
                }
                writer.writeBatch();
            }
            writer.end();
        } catch (IOException e) {
            throw new DeviceBridgeException("writing Arrow IPC failed: " + e.getMessage(), e);
        }
    }

    /**
     * Reads an Arrow IPC stream into device memory. <b>This path copies:</b> Arrow Java's
     * {@link ArrowStreamReader} reads each batch on the host, which is then {@link #upload uploaded}.
     *
     * <p>Ownership: after a return the caller owns every returned batch; {@code in} is not closed. After a
     * throw nothing new is held.
     *
     * @throws DeviceBridgeException if reading fails
     */
    public static List<CudaArrowBatch> readIpcStream(InputStream in, BufferAllocator allocator,
                                                     HostDeviceTransfer transfer, CudaStream stream) {
        requireCuda();
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(allocator, "allocator");
        return readIpc(new ArrowStreamReader(new NonClosing(in), allocator), transfer, stream);
    }

    /**
     * Reads an Arrow IPC file into device memory through Arrow Java's {@link ArrowFileReader}. <b>This path
     * copies</b>, as {@link #readIpcStream} does; ownership and exceptions as there ({@code in} is not
     * closed).
     */
    public static List<CudaArrowBatch> readIpcFile(SeekableByteChannel in, BufferAllocator allocator,
                                                   HostDeviceTransfer transfer, CudaStream stream) {
        requireCuda();
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(allocator, "allocator");
        return readIpc(new ArrowFileReader(new NonClosingChannel(in), allocator), transfer, stream);
    }

    private static List<CudaArrowBatch> readIpc(ArrowReader reader, HostDeviceTransfer transfer, CudaStream stream) {
        List<CudaArrowBatch> out = new ArrayList<>();
        try (reader) {
            while (reader.loadNextBatch()) {
                out.add(upload(reader.getVectorSchemaRoot(), reader, transfer, stream));
            }
            return out;
        } catch (IOException e) {
            closeAll(out);
            throw new DeviceBridgeException("reading Arrow IPC failed: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            closeAll(out);
            throw e;
        }
    }

    /** Keeps the caller's stream open when the reader is closed. */
    private static final class NonClosing extends java.io.FilterInputStream {
        NonClosing(InputStream in) {
            super(in);
        }

        @Override
        public void close() {
        }
    }

    /** Keeps the caller's channel open when the reader is closed. */
    private static final class NonClosingChannel implements SeekableByteChannel {
        private final SeekableByteChannel c;

        NonClosingChannel(SeekableByteChannel c) {
            this.c = c;
        }

        @Override
        public int read(java.nio.ByteBuffer dst) throws IOException {
            return c.read(dst);
        }

        @Override
        public int write(java.nio.ByteBuffer src) throws IOException {
            return c.write(src);
        }

        @Override
        public long position() throws IOException {
            return c.position();
        }

        @Override
        public SeekableByteChannel position(long p) throws IOException {
            c.position(p);
            return this;
        }

        @Override
        public long size() throws IOException {
            return c.size();
        }

        @Override
        public SeekableByteChannel truncate(long size) throws IOException {
            c.truncate(size);
            return this;
        }

        @Override
        public boolean isOpen() {
            return c.isOpen();
        }

        @Override
        public void close() {
        }
    }

    private static void checkNoDictionary(Field f) {
        if (f.getDictionary() != null) {
            throw new UnsupportedFeatureException(f.getName(),
                    "expected no dictionary-encoded fields for IPC from device batches but found one");
        }
        for (Field c : f.getChildren()) {
            checkNoDictionary(c);
        }
    }

    // ------------------------------------------------------------------ shared steps

    /**
     * Sizes the data buffers an import at MINIMAL left unsized: a variable-size binary's data buffer from
     * its last offset, a view's variadic buffers from its sizes buffer. Copies only those values (one
     * host synchronisation per allocation); returns {@code root} itself when nothing is missing.
     */
    static ArrayNode resolveLengths(ArrayNode root, List<DeviceBuffer> memory, HostDeviceTransfer transfer,
                                    CudaStream stream) {
        List<ArrayNode> nodes = new ArrayList<>();
        collect(root, nodes);
        List<long[]> reads = new ArrayList<>(); // {node index, device address, bytes}
        for (int n = 0; n < nodes.size(); n++) {
            ArrayNode node = nodes.get(n);
            Layout layout = node.type().layout();
            if ((layout == Layout.VARIABLE || layout == Layout.LARGE_VARIABLE) && node.bufferLength(2) < 0) {
                int w = layout == Layout.VARIABLE ? 4 : 8;
                long at = Math.addExact(node.address(1), Math.multiplyExact(Math.addExact(node.offset(), node.length()), w));
                reads.add(new long[] {n, at, w});
            } else if (layout == Layout.VIEW && node.bufferCount() > 3 && node.bufferLength(2) < 0) {
                int last = node.bufferCount() - 1;
                reads.add(new long[] {n, node.address(last), node.bufferLength(last)});
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
                dst[k] = arena.allocate(reads.get(k)[2], 8);
                addrs[k] = reads.get(k)[1];
            }
            copyToHost(memory, addrs, dst, transfer, stream, "buffers");
            for (int k = 0; k < reads.size(); k++) {
                ArrayNode node = nodes.get((int) reads.get(k)[0]);
                long[] lens = new long[node.bufferCount()];
                for (int i = 0; i < lens.length; i++) {
                    lens[i] = node.bufferLength(i);
                }
                Layout layout = node.type().layout();
                String path = SchemaReader.join(node.path(), "buffers[1]");
                if (layout == Layout.VIEW) {
                    for (int i = 0; i < lens.length - 3; i++) {
                        long size = dst[k].getAtIndex(ValueLayout.JAVA_LONG, i);
                        if (size < 0) {
                            throw new ValidationException(Category.SIZE, SchemaReader.join(node.path(),
                                    "buffers[" + (lens.length - 1) + "]"),
                                    "expected a non-negative size of variadic buffer " + i + " but found " + size);
                        }
                        lens[2 + i] = size;
                    }
                } else {
                    long last = layout == Layout.VARIABLE ? dst[k].get(ValueLayout.JAVA_INT, 0)
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
        return resize(root, lengths);
    }

    /**
     * Copies every buffer of {@code root} (all sized) into one malloc'ed host block, builds an
     * {@code ArrowArray} tree over it and imports that at {@code level}. The returned array owns the block.
     */
    static ImportedArray mirror(SchemaNode schema, ArrayNode root, List<DeviceBuffer> memory,
                                HostDeviceTransfer transfer, CudaStream stream, ValidationLevel level) {
        List<ArrayNode> nodes = new ArrayList<>();
        collect(root, nodes);
        long total = 0;
        List<long[]> copies = new ArrayList<>(); // {node index, buffer index, place, bytes}
        for (int n = 0; n < nodes.size(); n++) {
            ArrayNode node = nodes.get(n);
            for (int i = 0; i < node.bufferCount(); i++) {
                long len = node.bufferLength(i);
                if (node.address(i) == 0) {
                    continue;
                }
                if (len < 0) {
                    throw new UnsupportedFeatureException(SchemaReader.join(node.path(), "buffers[" + i + "]"),
                            "expected a known buffer length but found none");
                }
                copies.add(new long[] {n, i, total, len});
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
            for (long[] c : copies) {
                ArrayNode node = nodes.get((int) c[0]);
                int i = (int) c[1];
                hostAddrs.get(node)[i] = c[3] == 0 ? data.address() + total : data.address() + c[2];
                if (c[3] > 0) {
                    addrs.add(node.address(i));
                    dsts.add(data.asSlice(c[2], c[3]));
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

    private static void collect(ArrayNode n, List<ArrayNode> out) {
        out.add(n);
        for (ArrayNode c : n.children()) {
            collect(c, out);
        }
        if (n.dictionary() != null) {
            collect(n.dictionary(), out);
        }
    }

    /** A copy of the tree with the buffer addresses in {@code placed}, as device memory (not host-readable). */
    private static ArrayNode relocate(ArrayNode n, Map<ArrayNode, long[]> placed) {
        List<ArrayNode> children = new ArrayList<>(n.children().size());
        for (ArrayNode c : n.children()) {
            children.add(relocate(c, placed));
        }
        ArrayNode dictionary = n.dictionary() == null ? null : relocate(n.dictionary(), placed);
        long[] lens = new long[n.bufferCount()];
        for (int i = 0; i < lens.length; i++) {
            lens[i] = n.bufferLength(i);
        }
        return new ArrayNode(n.schema(), n.path(), n.length(), n.nullCount(), n.offset(), placed.get(n), lens, children,
                dictionary, null, false);
    }

    /** A copy of the tree with the buffer lengths in {@code lengths} where given. */
    private static ArrayNode resize(ArrayNode n, Map<ArrayNode, long[]> lengths) {
        List<ArrayNode> children = new ArrayList<>(n.children().size());
        for (ArrayNode c : n.children()) {
            children.add(resize(c, lengths));
        }
        ArrayNode dictionary = n.dictionary() == null ? null : resize(n.dictionary(), lengths);
        long[] addrs = new long[n.bufferCount()];
        long[] lens = new long[n.bufferCount()];
        for (int i = 0; i < addrs.length; i++) {
            addrs[i] = n.address(i);
            lens[i] = n.bufferLength(i);
        }
        long[] given = lengths.get(n);
        return new ArrayNode(n.schema(), n.path(), n.length(), n.nullCount(), n.offset(), addrs,
                given != null ? given : lens, children, dictionary, null, false);
    }

    private static void closeAll(List<? extends AutoCloseable> handles) {
        RuntimeException failure = null;
        for (AutoCloseable h : handles) {
            try {
                h.close();
            } catch (RuntimeException e) {
                failure = e;
            } catch (Exception e) {
                failure = new DeviceBridgeException("close failed: " + e.getMessage(), e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static void requireCuda() {
        if (!Cuda.isAvailable()) {
            throw new CudaUnavailableException(Cuda.unavailableReason(), null);
        }
    }

    private static void sameDevice(HostDeviceTransfer transfer, CudaStream stream) {
        if (transfer.device() != stream.device()) {
            throw new IllegalArgumentException(String.format(Locale.ROOT,
                    "transfer of device %d cannot be used with a stream of device %d", transfer.device(), stream.device()));
        }
    }

    private static MemorySegment sized(MemorySegment out, long size, String name) {
        Objects.requireNonNull(out, name);
        if (!out.isNative() || out.address() == 0) {
            throw new IllegalArgumentException(name + " must be a non-NULL native segment");
        }
        if (out.byteSize() == 0) {
            return out.reinterpret(size);
        }
        if (out.byteSize() < size) {
            throw new IllegalArgumentException(name + ": expected at least " + size + " bytes but found " + out.byteSize());
        }
        return out;
    }
}
