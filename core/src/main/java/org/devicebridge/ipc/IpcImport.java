package org.devicebridge.ipc;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.devicebridge.HandleBusyException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;

/**
 * Device data another process shared through CUDA IPC (a descriptor line written by {@link IpcExport}, or by
 * any process following {@code docs/ipc-format.md}, e.g. CPython with CuPy and pyarrow), mapped into this
 * process zero-copy: an Arrow record batch ({@link #importBatch}, then {@link #batch()}) or a DLPack tensor
 * ({@link #importTensor}, then {@link #tensor()}).
 *
 * <p>The descriptor is read with the library's strict reader (no duplicate keys, bounded length and depth,
 * exact numeric ranges; every refusal a {@link ValidationException} with the key path) before any handle is
 * opened. The mappings close when the data (and, for a batch, every export made of it) is closed; from then on
 * {@link #closeMessage()} gives the message to send back to the exporter, which keeps the memory alive until
 * it gets it ({@link IpcExport#acknowledge}).
 *
 * <p>Thread safety: every method may be called from any thread. This object owns the batch or tensor (and
 * through it the mappings); the caller owns this object.
 */
public final class IpcImport implements AutoCloseable {
    private final String id;
    private final String closeMessage;
    private final IpcBatchImport batch; // exactly one of batch and tensor is set
    private final ImportedTensor tensor;
    private final CountDownLatch tensorUnmapped;

    private IpcImport(String id, String closeMessage, IpcBatchImport batch, ImportedTensor tensor,
                      CountDownLatch tensorUnmapped) {
        this.id = id;
        this.closeMessage = closeMessage;
        this.batch = batch;
        this.tensor = tensor;
        this.tensorUnmapped = tensorUnmapped;
    }

    /**
     * Reads a batch descriptor, maps its allocations on its device ({@code cuIpcOpenMemHandle}), checks every
     * buffer lies inside its mapping, makes {@code stream} wait on its event (if any; the host does not block),
     * and imports the batch at {@code level} as {@link org.devicebridge.arrow.cuda.CudaArrowImport} imports a
     * C producer's {@code ArrowDeviceArray}: MINIMAL checks the structure against the schema and every
     * buffer's pointer attributes; DEFAULT and FULL also read what they validate through host copies made by
     * {@code transfer}, after the wait.
     *
     * <p>Ownership: after a return the caller owns the returned import (and through it the batch and the
     * mappings); after a throw nothing is mapped (the close message may be sent at once).
     *
     * @param descriptor the line the exporter sent
     * @param level how much to check before the batch is used
     * @param stream a stream of the descriptor's device, on which the caller will use the batch; borrowed
     * @param transfer makes the host copies DEFAULT and FULL validate; may be null at NONE and MINIMAL; borrowed
     * @return the import, which the caller owns
     * @throws ValidationException for a descriptor that breaks the format (path of the key); {@code DEVICE} for
     *         a device that does not exist or is not {@code stream}'s, or a handle the driver does not open;
     *         {@code LENGTH} for a buffer beyond its mapped allocation; {@code FORMAT} for a schema message
     *         Arrow Java cannot read; and the library's import categories for a batch that does not match its
     *         schema or fails the level's checks
     * @throws UnsupportedFeatureException for a dictionary-encoded field
     * @throws org.devicebridge.cuda.CudaUnavailableException without a CUDA driver
     * @throws org.devicebridge.ArrowJavaUnavailableException without Arrow Java (it reads the schema)
     * @throws NullPointerException without a transfer at DEFAULT or FULL (nothing is mapped then)
     */
    public static IpcImport importBatch(String descriptor, ValidationLevel level, CudaStream stream,
                                        HostDeviceTransfer transfer) {
        Objects.requireNonNull(descriptor, "descriptor");
        IpcBatchDescriptor d = IpcBatchDescriptor.parse(descriptor);
        IpcBatchImport imported = IpcBatchImport.open(d, level, stream, transfer);
        return new IpcImport(d.id(), d.closeMessage(), imported, null, null);
    }

    /**
     * Reads a tensor descriptor, maps its allocation ({@code cuIpcOpenMemHandle}), makes {@code consumer} wait
     * on its event (if any; the host does not block), and validates the tensor as a DLPack import does. Needs
     * no Arrow Java.
     *
     * <p>Ownership: after a return the caller owns the returned import (and through it the tensor and the
     * mapping); after a throw nothing is mapped.
     *
     * @param descriptor the line the exporter sent
     * @param consumer the stream the caller will use the data on (borrowed)
     * @param options what to accept (device, pointer check)
     * @return the import, which the caller owns; its tensor is on {@code kDLCUDA} of the descriptor's device
     * @throws ValidationException for a descriptor that breaks the format, a tensor that reaches outside the
     *         mapped allocation, or one that fails a DLPack check
     * @throws org.devicebridge.cuda.CudaException if the driver refuses (a stale handle, a handle of this process)
     */
    public static IpcImport importTensor(String descriptor, CudaStream consumer, ImportOptions options) {
        Objects.requireNonNull(descriptor, "descriptor");
        IpcTensorDescriptor d = IpcTensorDescriptor.parse(descriptor);
        CountDownLatch unmapped = new CountDownLatch(1);
        ImportedTensor t = IpcTensorImport.open(d, consumer, options, unmapped::countDown);
        return new IpcImport(d.id(), d.closeMessage(), null, t, unmapped);
    }

    /**
     * {@return the imported batch: borrowed, owned by this import; closing it (or this import) starts the unmapping}
     *
     * @throws UnsupportedFeatureException if this import holds a tensor
     */
    public CudaArrowBatch batch() {
        if (batch == null) {
            throw new UnsupportedFeatureException("kind", "expected an arrow_batch import but this one holds a tensor");
        }
        return batch.batch();
    }

    /**
     * {@return the imported tensor: borrowed, owned by this import; closing it (or this import) unmaps the memory}
     *
     * @throws UnsupportedFeatureException if this import holds a batch
     */
    public ImportedTensor tensor() {
        if (tensor == null) {
            throw new UnsupportedFeatureException("kind", "expected a tensor import but this one holds a batch");
        }
        return tensor;
    }

    /** {@return the export's identity the descriptor named} */
    public String id() {
        return id;
    }

    /** {@return {@code true} once every mapping is closed: the data and, for a batch, every export of it} */
    public boolean isUnmapped() {
        return batch != null ? batch.isUnmapped() : tensorUnmapped.getCount() == 0;
    }

    /**
     * Waits until every mapping is closed (the data and, for a batch, every export made of it).
     *
     * @param timeout how long to wait
     * @return {@code true} if unmapped; {@code false} on timeout
     * @throws InterruptedException if interrupted while waiting
     */
    public boolean awaitUnmapped(Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "timeout");
        return batch != null ? batch.awaitUnmapped(timeout)
                : tensorUnmapped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * {@return the message to send back to the exporter, {@code {"devicebridge_ipc_closed": "<id>"}}, once
     * every mapping is closed}
     *
     * @throws HandleBusyException while a mapping is open (the data, or an export of the batch, is still open)
     */
    public String closeMessage() {
        if (!isUnmapped()) {
            throw new HandleBusyException("IPC import " + id + " is still mapped: close the data and every export"
                    + " of it before sending the close message", null);
        }
        return closeMessage;
    }

    /**
     * Closes the batch or tensor (idempotent): the mappings close now, or, for a batch, when the last export of
     * it is released. Order the last use of the data on the device before this (synchronize the stream, or an
     * event).
     */
    @Override
    public void close() {
        if (batch != null) {
            batch.close();
        } else {
            tensor.close();
        }
    }

    @Override
    public String toString() {
        return "IpcImport[" + (batch != null ? "arrow_batch " : "tensor ") + id
                + (isUnmapped() ? ", unmapped" : ", mapped") + "]";
    }
}
