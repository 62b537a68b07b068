package org.devicebridge.arrow.cuda;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.foreign.OutStructs;
import org.devicebridge.foreign.StreamExport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.Native;

/**
 * Zero-copy export of device batches as CUDA {@code ArrowDeviceArray}s and {@code ArrowDeviceArrayStream}s,
 * and of Arrow Java batches in pinned host memory as {@code ARROW_DEVICE_CUDA_HOST} arrays. Thread-safe: each
 * call works on its own arguments.
 * Each export records a pooled event on the caller's stream and hands it out as the {@code sync_event}: the
 * consumer waits on it before reading. The export holds its own reference to the device memory.
 *
 * <p>Stateless and thread-safe: its methods may run concurrently on any threads; each says who owns what
 * after a return and after a throw.
 */
final class CudaArrowExport {
    private CudaArrowExport() {}

    /**
     * Exports {@code batch} as an {@code ArrowDeviceArray} into {@code outDeviceArray}, without copying:
     * {@code device_type} is the batch's ({@link DeviceKind#CUDA} for uploads), {@code device_id} its
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
     * <p>See {@link CudaArrow#exportDeviceArray}: {@code stream} is {@code copies.stream()}.
     */
    static void exportDeviceArray(CudaArrowBatch batch, DeviceCopies copies, MemorySegment outDeviceArray) {
        requireNativeAccess();
        Cuda.require();
        Objects.requireNonNull(batch, "batch");
        CudaStream stream = Objects.requireNonNull(copies, "copies").stream();
        MemorySegment out = OutStructs.sized(outDeviceArray, ArrowDeviceArray.sizeof(), "outDeviceArray");
        ArrayNode root = batch.root();
        List<DeviceBuffer> memory = batch.memory();
        int device = batch.device().ordinal();
        if (stream.device().ordinal() != device) {
            throw new IllegalArgumentException(String.format(Locale.ROOT,
                    "stream of device %d cannot export a batch of device %d", stream.device().ordinal(), device));
        }
        List<DeviceBuffer> refs = new ArrayList<>(memory.size());
        CudaEvent event = null;
        MemorySegment slot = MemorySegment.NULL;
        try {
            for (DeviceBuffer m : memory) {
                refs.add(m.retain());
            }
            event = CudaEvent.acquire(stream.device());
            event.record(stream);
            slot = Native.malloc(8);
            slot.set(ValueLayout.JAVA_LONG, 0, event.address());
            CudaEvent ev = event;
            MemorySegment sl = slot;
            Nodes.write(root, Nodes::address, out.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof()),
                    () -> freeExport(refs, ev, sl));
        } catch (RuntimeException | Error e) {
            freeExport(refs, event, slot);
            throw e;
        }
        ArrowDeviceArray.device_id(out, device);
        ArrowDeviceArray.device_type(out, batch.device().kind().code());
        ArrowDeviceArray.sync_event(out, slot);
        for (int i = 0; i < 3; i++) {
            out.set(ValueLayout.JAVA_LONG, ArrowDeviceArray.reserved$offset() + 8L * i, 0L);
        }
    }

    /**
     * Exports the batch in {@code root}, whose buffers are pinned host memory (page-locked or registered
     * with the CUDA driver, e.g. from a pinned-memory allocation manager), as an {@code ArrowDeviceArray}
     * with {@code device_type = ARROW_DEVICE_CUDA_HOST}, without copying: a CUDA consumer may copy it to a
     * device in one DMA, or read it from kernels through its device mapping. {@code device_id} is the device
     * the driver names for that memory (0 for a batch without bytes), {@code sync_event} is NULL (the host
     * data is ready: the caller finishes any asynchronous copy into it before exporting) and the reserved
     * fields are zero. Each buffer that holds bytes is checked with the driver's pointer attributes
     * ({@code cuPointerGetAttributes}, asked each time: {@code CU_MEMORYTYPE_HOST}), including the narrowed copy an export
     * makes of decimal32/decimal64 values (made from the vector's allocator); ordinary host memory is refused.
     * The export holds a reference to every buffer, as {@link ArrowJava#exportDeviceArray} does, and the
     * consumer's {@code release} (any thread, once) drops them.
     *
     * <p>Ownership: after a return the consumer owns the struct; the caller still owns {@code root} (closing
     * or reloading it does not invalidate the export). After a throw {@code outDeviceArray} is untouched and
     * nothing is held.
     *
     * <p>See {@link CudaArrow#exportPinnedHost}.
     */
    static void exportPinnedHost(VectorSchemaRoot root, DictionaryProvider provider, MemorySegment outDeviceArray) {
        Cuda.require();
        Objects.requireNonNull(root, "root");
        MemorySegment out = OutStructs.sized(outDeviceArray, ArrowDeviceArray.sizeof(), "outDeviceArray");
        MemorySegment staged = Native.calloc(ArrowDeviceArray.sizeof());
        try {
            ArrowJava.exportDeviceArray(root, provider, staged);
            int device;
            try {
                device = PinnedCheck.requirePinned(root, provider, staged.asSlice(ArrowDeviceArray.array$offset(),
                        ArrowArray.sizeof()));
            } catch (RuntimeException | Error e) {
                MemorySegment array = staged.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
                Callbacks.invokeVoidPointer(ArrowArray.release(array), array);
                throw e;
            }
            // A C Data struct may be moved by copying its bytes (its release does not depend on its address).
            MemorySegment.copy(staged, 0, out, 0, ArrowDeviceArray.sizeof());
            ArrowDeviceArray.device_id(out, device);
            ArrowDeviceArray.device_type(out, DeviceKind.CUDA_HOST.code());
        } finally {
            Native.free(staged);
        }
    }

    /**
     * Exports device batches as a CUDA {@code ArrowDeviceArrayStream} ({@code device_type}
     * {@link DeviceKind#CUDA}) into {@code outStream}: {@code get_schema} exports {@code schema};
     * {@code get_next} takes the next batch from {@code batches}, exports it as
     * {@link #exportDeviceArray} does (a sync event recorded on {@code stream}) and closes it (the export
     * keeps its memory); an exception becomes an errno with its message from {@code get_last_error}, and
     * a batch of another device type is refused that way ({@code EINVAL}).
     *
     * <p>Ownership: after a return the consumer owns the stream; the stream owns {@code batches} (closed on
     * release if it is {@link AutoCloseable}) and every batch it yields. The caller keeps {@code stream},
     * which must stay open until the consumer released the stream. After a throw {@code outStream} is
     * untouched and nothing is held.
     *
     * <p>See {@link CudaArrow#exportDeviceStream}: {@code stream} is {@code copies.stream()}.
     */
    static void exportDeviceStream(Schema schema, Iterator<? extends CudaArrowBatch> batches,
                                   DeviceCopies copies, MemorySegment outStream) {
        requireNativeAccess();
        requireArrowJava("CudaArrow.exportDeviceStream");
        Cuda.require();
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(batches, "batches");
        Objects.requireNonNull(copies, "copies");
        MemorySegment out = OutStructs.sized(outStream, ArrowDeviceArrayStream.sizeof(), "outStream");
        StreamExport.exportDevice(new BatchSource(schema, batches, copies, DeviceKind.CUDA), DeviceKind.CUDA,
                out);
    }

    /** Device batches as the source of an exported stream; each batch is closed once exported. */
    private record BatchSource(Schema schema, Iterator<? extends CudaArrowBatch> batches, DeviceCopies copies,
                               DeviceKind deviceType) implements StreamExport.Source {
        @Override
        public void exportSchema(MemorySegment out) {
            ArrowJava.exportSchema(schema, null, out);
        }

        @Override
        public boolean exportNext(MemorySegment out) {
            if (!batches.hasNext()) {
                return false;
            }
            try (CudaArrowBatch batch = batches.next()) {
                if (batch.device().kind() != deviceType) {
                    throw new IllegalArgumentException("expected batches of device type " + deviceType.arrowName()
                            + " but found " + batch.device().kind().arrowName());
                }
                exportDeviceArray(batch, copies, out);
            }
            return true;
        }

        @Override
        public void close() throws Exception {
            if (batches instanceof AutoCloseable c) {
                c.close();
            }
        }
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
}
