package org.devicebridge.ipc;

import static org.devicebridge.foreign.ArrowJavaCheck.requireArrowJava;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;
import org.devicebridge.DeviceKind;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.internal.Closing;
import org.devicebridge.ipc.IpcEventPool.SharedEvent;
import org.devicebridge.ipc.IpcEventPool.Taken;
import org.devicebridge.ipc.IpcExport.Memory;

/**
 * A device batch shared with another process (a JVM, or CPython with CuPy and pyarrow) through CUDA IPC: the
 * memory handle of each allocation its buffers lie in, every buffer as (allocation, offset, size), the
 * schema as an Arrow IPC message, and an interprocess event recorded after the producer's work, written as a
 * language-neutral {@link IpcBatchDescriptor}.
 *
 * <p><b>Which memory can be shared.</b> CUDA IPC shares whole {@code cuMemAlloc} allocations (see
 * {@link DeviceBuffer#ipcHandle()}). Stream-ordered pool memory (what {@link org.devicebridge.arrow.cuda.CudaArrow#upload} and
 * {@link org.devicebridge.arrow.cuda.CudaArrow#copy} allocate) and memory this process mapped from another cannot be shared:
 * {@link Memory#SHARE_ONLY} refuses such a batch, {@link Memory#COPY_UNSHAREABLE} copies those buffers (on
 * the caller's stream, device to device) into one new {@code cuMemAlloc} allocation the export owns
 * ({@link #copiedBytes()} says how much it copied), and shares the rest in place.
 *
 * <p><b>Lifetime, made explicit.</b> A CUDA IPC handle carries no ownership: the exporting process must keep
 * the memory alive until the importer has closed its mappings. This export holds a reference to every
 * allocation the batch's buffers lie in (and its copy, if any) and the event until the importer says so: the
 * importer sends back {@link IpcBatchDescriptor#closeMessage()} over the caller's channel after unmapping,
 * and the caller passes it to {@link IpcExport#acknowledge(String)}. {@link IpcExport#close()} then releases the references and
 * the event; before the acknowledgement it releases nothing and throws {@link HandleBusyException} (a later
 * close succeeds), so memory an importer may still read is never freed by accident.
 * {@link IpcExport#awaitClosed(Duration)} waits for the acknowledgement; {@link IpcExport#forceClose()} releases anyway, for an
 * importer known to be gone (its process exited, which unmaps). The batch itself may be closed at any time
 * after the export returns.
 *
 * <p>Thread safety: every method may be called from any thread; {@code acknowledge} typically runs on the
 * thread that reads the channel while another waits in {@code awaitClosed}.
 */
final class IpcBatchExport {

    private final IpcBatchDescriptor descriptor;
    private final long copiedBytes;
    private final Acknowledgement gate;
    private final List<DeviceBuffer> byHandle;
    private final int copyHandle;
    private final boolean persistentEvent;

    /**
     * The planner's {@code held} are our references (the shared allocations, the sources of copies, the copy);
     * its {@code byHandle} the same references of the allocations the handles name, in handle order.
     */
    private IpcBatchExport(IpcBatchDescriptor descriptor, IpcExportPlanner p, Sources sources, Taken<SharedEvent> event) {
        this.descriptor = descriptor;
        this.copiedBytes = p.copyBytes;
        this.byHandle = List.copyOf(p.byHandle);
        this.copyHandle = p.copyHandle;
        this.persistentEvent = event.persistent();
        List<DeviceBuffer> held = List.copyOf(p.held);
        this.gate = new Acknowledgement(descriptor.id(), "IPC batch export", "mappings",
                () -> release(() -> sources.events().give(event, gate().isAcknowledged()), held));
    }

    /**
     * Where a channel's export gets what it shares beside the batch: {@code pools} names memory of the device's
     * IPC-shareable pool by its pool pointer where it can send the pool to the reader (null: such memory is copied
     * as the default pool's is); {@code events} gives the interprocess event and takes it back on release.
     */
    record Sources(IpcExportPlanner.Pools pools, IpcEventPool<SharedEvent> events) {
        Sources {
            Objects.requireNonNull(events, "events");
        }
    }

    /**
     * Exports {@code batch} (a record batch: a struct array of columns, of device type
     * {@link DeviceKind#CUDA} or {@link DeviceKind#CUDA_MANAGED}) for another process. Buffers are
     * shared in place where CUDA IPC can share their allocation; the others are refused or copied as
     * {@code memory} says. An interprocess event is recorded on {@code stream} after the copies and the work
     * submitted so far, and its handle goes into the descriptor: the importer waits on it. {@code stream} is
     * where the batch is ready (the stream it was uploaded or imported on, or one ordered after it).
     *
     * <p>The copies of unshareable buffers are queued on {@code stream} (this call never waits for them): a
     * reference to each allocation they read and to the export's copy is also handed to {@code stream}
     * ({@link CudaStream#closeAfterQueuedWork}) and dropped only once an event recorded after the copies
     * completed, so neither closing the batch nor {@link IpcExport#forceClose()} frees memory under a queued copy. The
     * caller may close {@code batch} at once; it must not change the batch's bytes before that event.
     *
     * <p>Ownership: after a return the export holds its own references to the memory and the event until
     * {@link IpcExport#close()} (after the importer's acknowledgement) or {@link IpcExport#forceClose()}; the caller keeps
     * owning {@code batch} (closing it does not invalidate the export) and {@code stream}. After a throw
     * nothing was exported and nothing new is held (a copy queued before the failure is freed).
     *
     * @param batch the device batch; borrowed
     * @param stream a stream of the batch's device on which the batch is ready; borrowed
     * @param memory what to do with buffers in memory CUDA IPC cannot share
     * @return the export, which the caller owns
     * @throws UnsupportedFeatureException for a pinned host batch, a root that is not a struct, a
     *         dictionary-encoded field, a buffer whose byte length an import at {@code MINIMAL} did not
     *         establish, or (with {@link Memory#SHARE_ONLY}) a buffer in memory CUDA IPC cannot share
     * @throws InvalidArgumentException if {@code stream} is not of the batch's device, or a buffer lies
     *         outside the batch's device memory
     * @throws org.devicebridge.HandleClosedException if the batch or the stream is closed
     * @throws CudaException if the driver fails
     * @throws CudaUnavailableException without a CUDA driver
     * @throws org.devicebridge.ArrowJavaUnavailableException without Arrow Java (it writes the
     *         schema message)
     */
    public static IpcBatchExport export(CudaArrowBatch batch, CudaStream stream, Memory memory) {
        return export(batch, stream, memory, new Sources(null, IpcEventPool.unpooled()));
    }

    /**
     * {@link #export(CudaArrowBatch, CudaStream, Memory)} with a worker channel's {@code sources}: its pools, and
     * its event pool, from which the event is taken and to which the release gives it back (reused only after the
     * acknowledgement; closed after {@link IpcExport#forceClose()} without it).
     */
    static IpcBatchExport export(CudaArrowBatch batch, CudaStream stream, Memory memory, Sources sources) {
        requireNativeAccess();
        requireArrowJava("IpcExport.exportBatch");
        Cuda.require();
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(memory, "memory");
        if (batch.device().kind() == DeviceKind.CUDA_HOST) {
            throw new UnsupportedFeatureException("device_type", "expected device memory but found pinned host memory"
                    + " (ARROW_DEVICE_CUDA_HOST), which CUDA IPC does not share");
        }
        if (stream.device().ordinal() != batch.device().ordinal()) {
            throw new InvalidArgumentException("stream", String.format(Locale.ROOT,
                    "expected a stream of device %d (the batch's) but found one of device %d", batch.device().ordinal(),
                    stream.device().ordinal()));
        }
        byte[] schema = IpcSchemas.serialize(batch.schema());
        Objects.requireNonNull(sources, "sources");
        IpcExportPlanner p = new IpcExportPlanner(batch.memory(), memory, sources.pools());
        Taken<SharedEvent> event = null;
        try {
            ArrayNode root = batch.root();
            p.planTree(root);
            p.copy(stream);
            event = sources.events().take(stream.device());
            event.event().event().record(stream);
            IpcBatchDescriptor d = new IpcBatchDescriptor(UUID.randomUUID().toString(), batch.device().ordinal(), schema,
                    p.handles, p.poolPointers, p.node(root), event.event().handle());
            return new IpcBatchExport(d, p, sources, event);
        } catch (RuntimeException | Error e) {
            if (event != null) {
                try {
                    sources.events().give(event, false); // never sent: a pooled event is closed, as on a forced close
                } catch (RuntimeException | Error s) {
                    e.addSuppressed(s);
                }
            }
            p.abandon(e);
            throw e;
        }
    }


    /** {@return the export's acknowledgement gate, which {@link IpcExport} shares} */
    Acknowledgement gate() {
        return gate;
    }

    /** {@return the descriptor to send to the importer ({@link IpcBatchDescriptor#toJson()})} */
    public IpcBatchDescriptor descriptor() {
        return descriptor;
    }

    /**
     * {@return the export's reference to the allocation handle {@code k} names: borrowed, valid until the export is
     * released} (for {@link WorkerChannel}, which retains what the worker keeps mapped)
     */
    DeviceBuffer allocation(int k) {
        return byHandle.get(k);
    }

    /** {@return whether the event belongs to the channel's pool, so that the worker may keep its opening} */
    boolean persistentEvent() {
        return persistentEvent;
    }

    /** {@return the index of the handle of the export's own copy, or -1 when nothing was copied} */
    int copyHandle() {
        return copyHandle;
    }

    /** {@return the bytes copied into the export's own allocation; 0 when every buffer was shared in place} */
    public long copiedBytes() {
        return copiedBytes;
    }

    /**
     * The release step of the gate: the event (back to its pool once acknowledged, else closed), then every
     * reference; the first failure is thrown.
     */
    private static void release(Runnable event, List<DeviceBuffer> held) {
        RuntimeException failure = null;
        try {
            event.run();
        } catch (RuntimeException e) {
            failure = e;
        }
        try {
            Closing.closeAll(held, DeviceBuffer::close);
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "IpcBatchExport[" + descriptor.id() + ", " + gate.state() + ", " + descriptor.handles().size()
                + " allocations, " + copiedBytes + " bytes copied]";
    }
}
