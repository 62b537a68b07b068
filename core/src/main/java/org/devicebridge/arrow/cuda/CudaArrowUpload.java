package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.Device;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
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
final class CudaArrowUpload {
    private static final ThreadLocal<LastSchema> LAST_SCHEMA = new ThreadLocal<>();

    private CudaArrowUpload() {}

    /**
     * {@link CudaArrow#upload} ({@code async} false: one host wait if a buffer was copied directly) and
     * {@link CudaArrow#uploadAsync} ({@code async} true: no host wait, what the copies read goes to the stream).
     */
    static CudaArrowBatch upload(VectorSchemaRoot root, DictionaryProvider provider, DeviceCopies copies,
                                 boolean async) {
        requireNativeAccess();
        requireArrowJava(async ? "CudaArrow.uploadAsync" : "CudaArrow.upload");
        Cuda.require();
        Objects.requireNonNull(root, "root");
        Objects.requireNonNull(copies, "copies");
        return upload(root, provider, copies.requireTransfer(), copies.stream(), async);
    }

    private static CudaArrowBatch upload(VectorSchemaRoot root, DictionaryProvider provider, HostDeviceTransfer transfer,
                                         CudaStream stream, boolean async) {
        SchemaNode schema = schemaOf(root.getSchema(), provider);
        // What the copies read: the root's buffers, each held by the arena (as an export holds them) with the
        // buffers the view made itself (view padding, decimal32/64, remapped union type ids). Closed once no copy
        // reads them any more: at once after a synchronous upload, after the stream's event for an asynchronous
        // one (closed on whichever thread finds the event completed, hence shared).
        Arena inputs = async ? Arena.ofShared() : Arena.ofConfined();
        boolean handedOver = false;
        CudaArrowBatch out;
        try {
            ArrayNode host = ArrowC.viewArray(schema, ArrowJava.viewRoot(root, provider, inputs),
                    ValidationLevel.DEFAULT);
            List<MemorySegment> segments = new ArrayList<>();
            List<BufferSlot> slots = new ArrayList<>();
            List<ArrayNode> nodes = Nodes.collect(host);
            for (ArrayNode node : nodes) {
                for (int i = 0; i < node.bufferCount(); i++) {
                    long len = node.bufferLength(i);
                    if (Nodes.address(node, i) != 0 && len > 0) {
                        // by address, not the arena's segment: the transfer's workers read it on their threads
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
                ArrayNode device = Nodes.relocate(host, placed);
                DeviceBuffer memory = up.buffer();
                if (async) {
                    handedOver = true; // after a throw the stream waited, then closed them
                    stream.closeAfterQueuedWork(inputs);
                }
                out = new CudaArrowBatch("uploaded Arrow batch", schema, device, transfer.device(),
                        new CudaArrowBatch.Holdings(List.of(memory), up::close, null));
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
                closeAfter(inputs, e);
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

    /** Closes {@code inputs} after {@code failure}, adding a failed close to it. */
    private static void closeAfter(Arena inputs, Throwable failure) {
        try {
            inputs.close();
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }

    /**
     * {@code schema} exported and imported, as the batch's view needs it. Without dictionaries the result
     * depends on the schema alone, which Arrow Java never changes: the last one this thread used is kept, since
     * a producer uploads batch after batch of one schema (the round trip costs 15-25 us, 5% of a 16 MiB upload).
     */
    private static SchemaNode schemaOf(Schema schema, DictionaryProvider provider) {
        LastSchema last = LAST_SCHEMA.get();
        if (provider == null && last != null && last.schema() == schema) {
            return last.node();
        }
        SchemaNode node;
        try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(schema, provider, out));
             ImportedSchema is = ArrowC.importSchema(es.segment())) {
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
