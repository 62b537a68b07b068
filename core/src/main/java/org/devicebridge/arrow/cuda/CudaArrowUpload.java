package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ExportedArray;
import org.devicebridge.arrow.ExportedSchema;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceUpload;
import org.devicebridge.cuda.HostDeviceTransfer;

/**
 * Uploads Arrow Java batches to CUDA device memory: every buffer of a batch lands in one device allocation,
 * with asynchronous copies on the caller's stream. Buffers in page-locked memory (a root built in a pinned
 * allocator) are read by the copy engine directly; the others go through a {@link HostDeviceTransfer}'s
 * ring of reused pinned staging chunks. The data is ready for work queued on that stream afterwards.
 * Stateless; thread-safe as far as its arguments are (a transfer serialises its batches).
 */
public final class CudaArrowUpload {
    private static final ThreadLocal<LastSchema> LAST_SCHEMA = new ThreadLocal<>();

    private CudaArrowUpload() {}

    /**
     * Uploads the batch in {@code root} to the device of {@code transfer}: the batch is exported to C
     * structs and validated at {@link ValidationLevel#DEFAULT} (which sizes every buffer), then all buffers
     * are packed into one device allocation ({@value HostDeviceTransfer#ALIGNMENT}-byte aligned) with
     * asynchronous copies on {@code stream}: page-locked buffers directly, the others through the transfer's
     * staging ring (see {@link HostDeviceTransfer#upload}). Offsets, null counts and slices are kept as they
     * are. When this returns the root's buffers may be changed: one host wait if a buffer was copied directly,
     * none for a root in pageable memory (its bytes were copied into staging memory before this returns).
     *
     * <p>Ownership: after a return the caller owns the returned batch (close it) and still owns
     * {@code root}, {@code provider}, {@code transfer} and {@code stream} ({@code stream} must stay open
     * until the batch is freed: the allocation is freed stream-ordered on it). After a throw nothing new
     * is held.
     *
     * @param root the batch; borrowed
     * @param provider the dictionaries of dictionary-encoded columns; may be null if there are none
     * @param transfer stages pageable buffers; of {@code stream}'s device
     * @param stream orders the copies; the caller keeps owning it
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws IllegalArgumentException if {@code transfer} and {@code stream} are of different devices
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch upload(VectorSchemaRoot root, DictionaryProvider provider, HostDeviceTransfer transfer,
                                        CudaStream stream) {
        requireNativeAccess();
        requireArrowJava("CudaArrowUpload.upload");
        return upload(root, provider, transfer, stream, false);
    }

    /**
     * As {@link #upload(VectorSchemaRoot, DictionaryProvider, HostDeviceTransfer, CudaStream)}, without any host
     * wait: the copy engine reads page-locked buffers after this returns, until {@code stream} reaches the
     * upload. Pageable buffers have been read (into the transfer's staging chunks) when this returns.
     *
     * <p>What it keeps alive: the export of {@code root} (which retains every buffer of the root and its
     * dictionaries, and owns the buffers the export writes itself) is handed to {@code stream}
     * ({@link CudaStream#closeAfterQueuedWork}) and released only once an event recorded on {@code stream} after
     * the copies completed; none of those buffers goes back to its allocator or pool before that. The staging
     * chunks are reused only after their own events. What the caller may touch before that event: it may close
     * {@code root} and {@code provider} (the export holds their buffers), but must not change the contents of
     * their buffers (the device reads them); the returned batch is ready for work queued on {@code stream}.
     *
     * <p>Ownership as in the synchronous form; besides, after a return {@code stream} owns the export until
     * the event (so keep the stream handle open, or synchronize it, before closing the allocator the root came
     * from). After a throw no copy reads the root any more, or the export is held by {@code stream} as above.
     *
     * @param root the batch; borrowed, and read by the device until {@code stream} reaches the upload
     * @param provider the dictionaries of dictionary-encoded columns; may be null if there are none
     * @param transfer stages pageable buffers; of {@code stream}'s device
     * @param stream orders the copies; the caller keeps owning it
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws IllegalArgumentException if {@code transfer} and {@code stream} are of different devices
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch uploadAsync(VectorSchemaRoot root, DictionaryProvider provider,
                                             HostDeviceTransfer transfer, CudaStream stream) {
        requireNativeAccess();
        requireArrowJava("CudaArrowUpload.uploadAsync");
        return upload(root, provider, transfer, stream, true);
    }

    private static CudaArrowBatch upload(VectorSchemaRoot root, DictionaryProvider provider, HostDeviceTransfer transfer,
                                         CudaStream stream, boolean async) {
        Cuda.require();
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(transfer, "transfer");
        Objects.requireNonNull(stream, "stream");
        CudaArrowSupport.sameDevice(transfer, stream);
        SchemaNode schema = schemaOf(root.getSchema(), provider);
        Inputs inputs = Inputs.of(root, provider, schema);
        boolean handedOver = false;
        CudaArrowBatch out;
        try {
            ImportedArray host = inputs.host();
            List<MemorySegment> segments = new ArrayList<>();
            List<BufferSlot> slots = new ArrayList<>();
            List<ArrayNode> nodes = Nodes.collect(host.root());
            for (ArrayNode node : nodes) {
                for (int i = 0; i < node.bufferCount(); i++) {
                    long len = node.bufferLength(i);
                    if (Nodes.address(node, i) != 0 && len > 0) {
                        segments.add(node.bufferPointer(i).reinterpret(len));
                        slots.add(new BufferSlot(node, i));
                    }
                }
            }
            // after a throw here no copy reads the inputs any more (the transfer's contract)
            DeviceUpload up = transfer.uploadAsync(segments, stream);
            try {
                if (!async) {
                    up.await(); // the one host wait of a root with page-locked buffers
                }
                long base = up.buffer().address();
                long[] offsets = up.offsets();
                Map<ArrayNode, long[]> placed = new IdentityHashMap<>();
                for (ArrayNode node : nodes) {
                    long[] a = new long[node.bufferCount()];
                    for (int i = 0; i < a.length; i++) {
                        // An empty but non-NULL buffer stays non-NULL (some consumers require it): it points at
                        // the allocation's start, and no byte is read through it.
                        a[i] = Nodes.address(node, i) == 0 ? 0 : base;
                    }
                    placed.put(node, a);
                }
                for (int k = 0; k < slots.size(); k++) {
                    BufferSlot s = slots.get(k);
                    placed.get(s.node())[s.buffer()] = base + offsets[k];
                }
                ArrayNode device = Nodes.relocate(host.root(), placed);
                DeviceBuffer memory = up.buffer();
                if (async) {
                    handedOver = true; // after a throw the stream waited, then closed them
                    stream.closeAfterQueuedWork(inputs);
                }
                out = new CudaArrowBatch(CudaArrowBatch.describe("uploaded Arrow batch", device, transfer.device()),
                        schema, device, transfer.device(), DeviceKind.CUDA, List.of(memory), up::close, null);
            } catch (RuntimeException | Error e) {
                if (!async) {
                    awaitAfter(up, e); // no copy reads the root after a throw
                }
                up.close();
                if (async && !handedOver) {
                    handedOver = true;
                    try {
                        stream.closeAfterQueuedWork(inputs); // the queued copies may still read them
                    } catch (RuntimeException | Error more) {
                        e.addSuppressed(more);
                    }
                }
                throw e;
            }
        } catch (RuntimeException | Error e) {
            if (!handedOver) {
                inputs.closeAfter(e);
            }
            throw e;
        }
        if (!handedOver) {
            try {
                inputs.close(); // the synchronous copier returned once no copy reads them any more
            } catch (RuntimeException | Error e) {
                out.close();
                throw e;
            }
        }
        return out;
    }

    /**
     * What an upload's copies read: the export, which retains the root's buffers and owns the buffers it wrote
     * itself ({@code ExportRewrites}: view padding, decimal32/64, remapped union type ids), and its import, whose
     * close releases the export. Closed once no copy reads them any more: at once after a synchronous upload,
     * after the stream's event for an asynchronous one.
     */
    private record Inputs(ExportedArray export, ImportedArray host) implements AutoCloseable {
        static Inputs of(VectorSchemaRoot root, DictionaryProvider provider, SchemaNode schema) {
            ExportedArray ea = ArrowJava.exportRoot(root, provider);
            try {
                return new Inputs(ea, ArrowImport.importArray(schema, ea.segment(), ValidationLevel.DEFAULT));
            } catch (RuntimeException | Error e) {
                try {
                    ea.close();
                } catch (RuntimeException | Error more) {
                    e.addSuppressed(more);
                }
                throw e;
            }
        }

        @Override
        public void close() {
            try (export) {
                host.close();
            }
        }

        void closeAfter(Throwable failure) {
            try {
                close();
            } catch (RuntimeException | Error e) {
                failure.addSuppressed(e);
            }
        }
    }

    /**
     * {@link #upload(VectorSchemaRoot, DictionaryProvider, HostDeviceTransfer, CudaStream)} without dictionaries.
     *
     * @param root the batch; borrowed
     * @param transfer stages pageable buffers; of {@code stream}'s device
     * @param stream orders the copies; the caller keeps owning it
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch upload(VectorSchemaRoot root, HostDeviceTransfer transfer, CudaStream stream) {
        return upload(root, null, transfer, stream);
    }

    /**
     * {@link #uploadAsync(VectorSchemaRoot, DictionaryProvider, HostDeviceTransfer, CudaStream)} without
     * dictionaries.
     *
     * @param root the batch; borrowed, and read by the device until {@code stream} reaches the upload
     * @param transfer stages pageable buffers; of {@code stream}'s device
     * @param stream orders the copies; the caller keeps owning it
     * @return the device batch, which the caller owns
     * @throws CudaUnavailableException without a CUDA driver
     * @throws UnsupportedFeatureException if a column's type cannot be exported
     * @throws CudaException if a driver call fails
     */
    public static CudaArrowBatch uploadAsync(VectorSchemaRoot root, HostDeviceTransfer transfer, CudaStream stream) {
        return uploadAsync(root, null, transfer, stream);
    }

    /**
     * {@code schema} exported and imported, as the batch's import needs it. Without dictionaries the result
     * depends on the schema alone, which Arrow Java never changes: the last one this thread used is kept, since
     * a producer uploads batch after batch of one schema (the round trip costs 15-25 us, 5% of a 16 MiB upload).
     */
    private static SchemaNode schemaOf(Schema schema, DictionaryProvider provider) {
        LastSchema last = LAST_SCHEMA.get();
        if (provider == null && last != null && last.schema() == schema) {
            return last.node();
        }
        SchemaNode node;
        try (ExportedSchema es = ArrowJava.exportSchema(schema, provider);
             ImportedSchema is = ArrowImport.importSchema(es.segment())) {
            node = is.root();
        }
        if (provider == null) {
            LAST_SCHEMA.set(new LastSchema(schema, node));
        }
        return node;
    }

    /** The last schema without dictionaries a thread uploaded, and its import (see {@link #schemaOf}). */
    private record LastSchema(Schema schema, SchemaNode node) {}

    /** Waits for the direct copies of {@code up} after {@code failure}, adding a failed wait to it. */
    private static void awaitAfter(DeviceUpload up, Throwable failure) {
        try {
            up.await();
        } catch (RuntimeException | Error more) {
            failure.addSuppressed(more);
        }
    }

    /** Buffer {@code buffer} of {@code node}: one host segment of an upload. */
    private record BufferSlot(ArrayNode node, int buffer) {}
}
