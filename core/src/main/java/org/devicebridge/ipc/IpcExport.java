package org.devicebridge.ipc;

import java.time.Duration;
import java.util.Objects;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.dlpack.TensorSpec;

/**
 * Device data shared with another process (a JVM, or CPython with CuPy, PyTorch or pyarrow) through CUDA IPC:
 * an Arrow record batch ({@link #exportBatch}) or a DLPack tensor ({@link #exportTensor}), described by one
 * line of JSON ({@link #descriptor()}, format in {@code docs/ipc-format.md}) that the caller sends over its own
 * channel; the other side opens it with {@link IpcImport}.
 *
 * <p><b>Lifetime, made explicit.</b> A CUDA IPC handle carries no ownership: the exporting process must keep
 * the memory alive until the importer has closed its mappings. This export holds a reference to every
 * allocation the data lies in (and its own copy, if any) and the interprocess event until the importer says
 * so: the importer sends back its close message ({@code {"devicebridge_ipc_closed": "<id>"}},
 * {@link IpcImport#closeMessage()}) after unmapping, and the caller passes it to {@link #acknowledge(String)}.
 * {@link #close()} then releases the references and the event; before the acknowledgement it releases nothing
 * and throws {@link HandleBusyException} (a later close succeeds), so memory an importer may still read is
 * never freed by accident. {@link #awaitClosed(Duration)} waits for the acknowledgement; {@link #forceClose()}
 * releases anyway, for an importer known to be gone (its process exited, which unmaps).
 *
 * <p>Thread safety: every method may be called from any thread; {@code acknowledge} typically runs on the
 * thread that reads the channel while another waits in {@code awaitClosed}.
 */
public final class IpcExport implements AutoCloseable {
    /** What {@link #exportBatch} does with buffers in memory CUDA IPC cannot share. */
    public enum Memory {
        /** Share every buffer in place, zero-copy; a buffer in memory CUDA IPC cannot share is refused. */
        SHARE_ONLY,
        /**
         * Share in place what CUDA IPC can share; copy the other buffers, device to device on the caller's
         * stream, into one new {@code cuMemAlloc} allocation the export owns (one allocation per export).
         */
        COPY_UNSHAREABLE
    }

    private final String id;
    private final String descriptor;
    private final long copiedBytes;
    private final Acknowledgement gate;
    private final String kind;

    IpcExport(IpcBatchExport batch) {
        this(batch.descriptor().id(), batch.descriptor().toJson(), batch.copiedBytes(), batch.gate(),
                IpcBatchDescriptor.KIND);
    }

    IpcExport(IpcTensorExport tensor) {
        this(tensor.descriptor().id(), tensor.descriptor().toJson(), 0, tensor.gate(), IpcTensorDescriptor.KIND);
    }

    private IpcExport(String id, String descriptor, long copiedBytes, Acknowledgement gate, String kind) {
        this.id = id;
        this.descriptor = descriptor;
        this.copiedBytes = copiedBytes;
        this.gate = gate;
        this.kind = kind;
    }

    /**
     * Exports {@code batch} (a record batch: a struct array of columns, in CUDA device or managed memory) for
     * another process. Buffers are shared in place where CUDA IPC can share their allocation (whole
     * {@code cuMemAlloc} allocations, see {@link DeviceBuffer#ipcHandle()}); stream-ordered pool memory (what
     * {@link org.devicebridge.arrow.cuda.CudaArrowUpload} and {@link org.devicebridge.arrow.cuda.CudaArrowPeerCopy}
     * allocate) and memory mapped from another process are refused or copied as {@code memory} says. An
     * interprocess event is recorded on {@code stream} after the copies and the work submitted so far, and its
     * handle goes into the descriptor: the importer waits on it. {@code stream} is where the batch is ready.
     *
     * <p>The copies of unshareable buffers are queued on {@code stream} (this call never waits for them): a
     * reference to each allocation they read and to the export's copy is also handed to {@code stream}
     * ({@link CudaStream#closeAfterQueuedWork}) and dropped only once an event recorded after the copies
     * completed, so neither closing the batch nor {@link #forceClose()} frees memory under a queued copy. The
     * caller may close {@code batch} at once; it must not change the batch's bytes before that event.
     *
     * <p>Ownership: after a return the export holds its own references to the memory and the event until
     * {@link #close()} (after the importer's acknowledgement) or {@link #forceClose()}; the caller keeps
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
     * @throws org.devicebridge.cuda.CudaException if the driver fails
     * @throws org.devicebridge.cuda.CudaUnavailableException without a CUDA driver
     * @throws org.devicebridge.ArrowJavaUnavailableException without Arrow Java (it writes the schema message)
     */
    public static IpcExport exportBatch(CudaArrowBatch batch, CudaStream stream, Memory memory) {
        return new IpcExport(IpcBatchExport.export(batch, stream, memory));
    }

    /**
     * Exports the tensor {@code spec} describes, whose memory lies in {@code buffer} (a {@code cuMemAlloc}
     * allocation from {@link DeviceBuffer#allocate}), for another process. When {@code producerStream} is not
     * null an interprocess event is recorded on it after the work submitted so far, and its handle goes into
     * the descriptor (the importer waits on it); null means the data is ready now. Needs no Arrow Java.
     *
     * <p>Ownership: after a return the export holds its own reference to the allocation and the event until
     * {@link #close()} (after the importer's acknowledgement) or {@link #forceClose()}; the caller keeps its
     * {@code buffer} and stream. After a throw nothing was exported.
     *
     * @param buffer the allocation that holds the tensor (borrowed; the export retains it)
     * @param spec the tensor: {@code spec.data()} must lie in {@code buffer}, device {@code kDLCUDA} of the
     *        buffer's ordinal, no negative strides
     * @param producerStream the stream the data is written on (borrowed), or null when it is ready
     * @return the export, which the caller owns
     * @throws UnsupportedFeatureException for a buffer CUDA IPC cannot share (see {@link DeviceBuffer#ipcHandle()}),
     *         negative strides, or a spec not on {@code kDLCUDA}
     * @throws ValidationException if the tensor reaches outside {@code buffer}
     * @throws org.devicebridge.cuda.CudaException if the driver refuses
     */
    public static IpcExport exportTensor(DeviceBuffer buffer, TensorSpec spec, CudaStream producerStream) {
        return new IpcExport(IpcTensorExport.export(buffer, spec, producerStream));
    }

    /** {@return the descriptor to send to the importer: one line of ASCII JSON (format in {@code docs/ipc-format.md})} */
    public String descriptor() {
        return descriptor;
    }

    /** {@return the export's identity, as the descriptor and the importer's close message name it} */
    public String id() {
        return id;
    }

    /** {@return the bytes copied into the export's own allocation; 0 when every buffer was shared in place} */
    public long copiedBytes() {
        return copiedBytes;
    }

    /**
     * Records the importer's close message: from now on {@link #close()} releases the memory.
     *
     * @param closeMessage what the importer sent back ({@code {"devicebridge_ipc_closed": "<id>"}})
     * @throws InvalidArgumentException if the message names another export
     * @throws ValidationException if it is not a close message
     */
    public void acknowledge(String closeMessage) {
        gate.acknowledge(Objects.requireNonNull(closeMessage, "closeMessage"));
    }

    /** {@return {@code true} once the importer acknowledged closing its mappings} */
    public boolean isAcknowledged() {
        return gate.isAcknowledged();
    }

    /**
     * Waits until the importer acknowledged closing its mappings, then releases as {@link #close()} does.
     *
     * @param timeout how long to wait
     * @return {@code true} if acknowledged and released; {@code false} on timeout (nothing released)
     * @throws InterruptedException if interrupted while waiting (nothing released)
     */
    public boolean awaitClosed(Duration timeout) throws InterruptedException {
        return gate.awaitClosed(timeout);
    }

    /**
     * Releases the references to the memory and the event once the importer acknowledged; idempotent.
     *
     * @throws HandleBusyException if the importer has not acknowledged yet (nothing released; close again later,
     *         or {@link #forceClose()} for an importer that is gone)
     */
    @Override
    public void close() {
        gate.close();
    }

    /** Releases the references and the event without the acknowledgement (the importer is gone); idempotent. */
    public void forceClose() {
        gate.forceClose();
    }

    @Override
    public String toString() {
        return "IpcExport[" + kind + " " + id + ", " + gate.state() + ", " + copiedBytes + " bytes copied]";
    }
}
