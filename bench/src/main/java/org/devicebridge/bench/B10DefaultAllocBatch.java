package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.Device;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.arrow_c_abi_h;

/**
 * Variant (a2) of {@link B10WorkerHandOff}: the same batch in default-allocation memory, built through the public
 * API as a CUDA library would hand it over. Each int64 column of an uploaded batch is copied into its own
 * {@code DeviceBuffer.allocate} ({@code cuMemAlloc}) allocation; an {@code ArrowDeviceArray} (a struct of the
 * columns, no validity buffers, no sync event: the copies are synchronized) is filled with the generated
 * bindings over those allocations, with a release callback of this class, and imported with
 * {@link CudaArrow#importDeviceArray}. The worker channel then shares these allocations zero-copy.
 *
 * <p>Owns the allocations, the import and the structs; {@link #close()} frees them in that order after the
 * release callback ran (the import keeps the struct until every export and mapping of it is gone; if it has not
 * run, the arena holding the callback is left open rather than freeing code a later release would call).
 */
final class B10DefaultAllocBatch implements AutoCloseable {
    private static final AtomicInteger RELEASES = new AtomicInteger();

    private final List<DeviceBuffer> columns;
    private final Arena arena;
    private final ImportedSchema schema;
    private final CudaArrowBatch batch;
    private final int releasesBefore;

    private B10DefaultAllocBatch(List<DeviceBuffer> columns, Arena arena, ImportedSchema schema, CudaArrowBatch batch,
                                 int releasesBefore) {
        this.columns = columns;
        this.arena = arena;
        this.schema = schema;
        this.batch = batch;
        this.releasesBefore = releasesBefore;
    }

    /** The imported batch, borrowed: this object closes it. */
    CudaArrowBatch batch() {
        return batch;
    }

    /**
     * Copies the int64 columns of {@code uploaded} (a struct of non-null int64 columns without offsets, as
     * {@code Batches.int64Root} uploads) into {@code cuMemAlloc} memory and imports them as a batch of type
     * {@code arrowSchema}. The caller keeps {@code uploaded}, {@code stream} and {@code transfer}.
     */
    static B10DefaultAllocBatch copyOf(CudaArrowBatch uploaded, Schema arrowSchema, CudaStream stream,
                                       HostDeviceTransfer transfer) {
        int device = uploaded.device().ordinal();
        List<ArrayNode> cols = uploaded.root().children();
        List<DeviceBuffer> owned = new ArrayList<>(cols.size());
        Arena arena = Arena.ofShared(); // the release callback may run on the channel's reader thread
        ImportedSchema schema = null;
        try {
            for (ArrayNode c : cols) {
                if (c.offset() != 0 || c.nullCount() != 0 || c.bufferCount() != 2) {
                    throw new IllegalStateException(c.path() + ": expected an int64 column without nulls or offset");
                }
                long address = c.bufferPointer(1).address();
                long len = Math.multiplyExact(c.length(), 8L);
                DeviceBuffer src = holder(uploaded.memory(), address, len);
                DeviceBuffer dst = DeviceBuffer.allocate(Device.cuda(device), len);
                owned.add(dst);
                CudaCopies.deviceToDeviceAsync(src.range(address - src.address(), len), dst, 0, stream);
            }
            stream.synchronize();
            MemorySegment schemaStruct = org.devicebridge.generated.arrow.ArrowSchema.allocate(arena);
            ArrowJava.exportSchema(arrowSchema, null, schemaStruct);
            schema = ArrowC.importSchema(schemaStruct);
            MemorySegment deviceArray = fill(arena, owned, uploaded.length(), device);
            int before = RELEASES.get();
            CudaArrowBatch batch = CudaArrow.importDeviceArray(schema.root(), deviceArray, ValidationLevel.DEFAULT,
                    DeviceCopies.of(transfer, stream));
            return new B10DefaultAllocBatch(owned, arena, schema, batch, before);
        } catch (RuntimeException | Error e) {
            stream.synchronize();
            if (schema != null) {
                schema.close();
            }
            owned.forEach(DeviceBuffer::close);
            // the struct was released by the failed import (or never handed over): the callback is not needed
            arena.close();
            throw e;
        }
    }

    private static DeviceBuffer holder(List<DeviceBuffer> memory, long address, long len) {
        for (DeviceBuffer b : memory) {
            if (b.address() != 0 && address - b.address() >= 0 && address - b.address() <= b.byteSize() - len) {
                return b;
            }
        }
        throw new IllegalStateException(String.format(java.util.Locale.ROOT,
                "no allocation of the uploaded batch holds 0x%x (+%d)", address, len));
    }

    /** An {@code ArrowDeviceArray}: a struct node over one child per allocation, all with this class's release. */
    private static MemorySegment fill(Arena arena, List<DeviceBuffer> columns, long rows, int device) {
        MemorySegment release = ArrowArray.release.allocate(B10DefaultAllocBatch::release, arena);
        MemorySegment children = arena.allocate(ValueLayout.ADDRESS, columns.size());
        for (int k = 0; k < columns.size(); k++) {
            MemorySegment buffers = arena.allocate(ValueLayout.ADDRESS, 2);
            buffers.setAtIndex(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
            buffers.setAtIndex(ValueLayout.ADDRESS, 1, MemorySegment.ofAddress(columns.get(k).address()));
            MemorySegment child = ArrowArray.allocate(arena);
            node(child, rows, buffers, 2, MemorySegment.NULL, 0, release);
            children.setAtIndex(ValueLayout.ADDRESS, k, child);
        }
        MemorySegment rootBuffers = arena.allocate(ValueLayout.ADDRESS, 1);
        rootBuffers.setAtIndex(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        MemorySegment deviceArray = ArrowDeviceArray.allocate(arena);
        node(ArrowDeviceArray.array(deviceArray), rows, rootBuffers, 1, children, columns.size(), release);
        ArrowDeviceArray.device_id(deviceArray, device);
        ArrowDeviceArray.device_type(deviceArray, arrow_c_abi_h.ARROW_DEVICE_CUDA());
        ArrowDeviceArray.sync_event(deviceArray, MemorySegment.NULL); // the copies are synchronized
        return deviceArray;
    }

    private static void node(MemorySegment a, long length, MemorySegment buffers, long nBuffers,
                             MemorySegment children, long nChildren, MemorySegment release) {
        ArrowArray.length(a, length);
        ArrowArray.null_count(a, 0);
        ArrowArray.offset(a, 0);
        ArrowArray.n_buffers(a, nBuffers);
        ArrowArray.n_children(a, nChildren);
        ArrowArray.buffers(a, buffers);
        ArrowArray.children(a, children);
        ArrowArray.dictionary(a, MemorySegment.NULL);
        ArrowArray.private_data(a, MemorySegment.NULL);
        ArrowArray.release(a, release);
    }

    /**
     * The release callback (C Data Interface): the buffers belong to this object's allocations, so it only marks
     * the children and the array released. Never throws (an upcall must not).
     */
    private static void release(MemorySegment array) {
        try {
            MemorySegment a = array.reinterpret(ArrowArray.layout().byteSize());
            long n = ArrowArray.n_children(a);
            MemorySegment children = ArrowArray.children(a);
            if (n > 0 && !children.equals(MemorySegment.NULL)) {
                MemorySegment ptrs = children.reinterpret(Math.multiplyExact(n, ValueLayout.ADDRESS.byteSize()));
                for (long k = 0; k < n; k++) {
                    MemorySegment c = ptrs.getAtIndex(ValueLayout.ADDRESS, k).reinterpret(ArrowArray.layout().byteSize());
                    ArrowArray.release(c, MemorySegment.NULL);
                }
            }
            ArrowArray.release(a, MemorySegment.NULL);
            RELEASES.incrementAndGet();
        } catch (Throwable t) {
            t.printStackTrace();
        }
    }

    @Override
    public void close() {
        batch.close();
        schema.close();
        // the import releases the struct once nothing maps its memory: the channel must be closed before this
        boolean released = RELEASES.get() > releasesBefore;
        if (released) {
            columns.forEach(DeviceBuffer::close);
            arena.close();
        } else {
            System.err.println("[b10] a2: the imported struct was not released yet (the worker channel still"
                    + " holds its memory?): its allocations and callback are left in place");
        }
    }
}
