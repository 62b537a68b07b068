package org.devicebridge.ipc;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import org.devicebridge.Device;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.ipc.IpcEventPool.SharedEvent;
import org.devicebridge.ipc.IpcEventPool.Taken;

/**
 * A tensor in device memory shared with another process (a JVM, or CPython with CuPy or PyTorch) through
 * CUDA IPC: the memory handle of its allocation, the offset, dtype, shape and strides, and an interprocess
 * event recorded after the producer's work, written as a language-neutral {@link IpcTensorDescriptor}.
 *
 * <p><b>Lifetime, made explicit.</b> A CUDA IPC handle carries no ownership: the exporting process must keep
 * the allocation alive until every importer has closed its mapping. This export holds a reference to the
 * buffer and the event until the importer says so: the importer sends back
 * {@link IpcTensorDescriptor#closeMessage()} over the caller's channel after unmapping, and the caller passes
 * it to {@link IpcExport#acknowledge(String)}. {@link IpcExport#close()} then releases the reference and the event; before the
 * acknowledgement it releases nothing and throws {@link HandleBusyException} (a later close succeeds), so
 * memory an importer may still read is never freed by accident. {@link IpcExport#awaitClosed(Duration)} waits for the
 * acknowledgement; {@link IpcExport#forceClose()} releases anyway, for an importer known to be gone (its process
 * exited, which unmaps).
 *
 * <p>Thread safety: every method may be called from any thread; {@code acknowledge} typically runs on the
 * thread that reads the channel while another waits in {@code awaitClosed}.
 */
final class IpcTensorExport {
    private final IpcTensorDescriptor descriptor;
    private final Acknowledgement gate;
    private final boolean persistentEvent;

    /**
     * {@code buffer} is our reference to the allocation; {@code event}, from {@code events}, is null without a
     * producer stream.
     */
    private IpcTensorExport(IpcTensorDescriptor descriptor, DeviceBuffer buffer, IpcEventPool<SharedEvent> events,
                            Taken<SharedEvent> event) {
        this.descriptor = descriptor;
        this.persistentEvent = event != null && event.persistent();
        this.gate = new Acknowledgement(descriptor.id(), "IPC export", "mapping",
                () -> release(event == null ? null : () -> events.give(event, gate().isAcknowledged()), buffer));
    }

    /**
     * Exports the tensor {@code spec} describes, whose memory lies in {@code buffer} (a {@code cuMemAlloc}
     * allocation from {@link DeviceBuffer#allocate}), for another process. When {@code producerStream} is not
     * null an interprocess event is recorded on it after the work submitted so far, and its handle goes into
     * the descriptor (the importer waits on it); null means the data is ready now.
     *
     * <p>Ownership: after a return the export holds its own reference to the allocation and the event until
     * {@link IpcExport#close()} (after the importer's acknowledgement) or {@link IpcExport#forceClose()}; the caller keeps its
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
    public static IpcTensorExport export(DeviceBuffer buffer, TensorSpec spec, CudaStream producerStream) {
        return export(buffer, spec, producerStream, IpcEventPool.unpooled());
    }

    /**
     * {@link #export(DeviceBuffer, TensorSpec, CudaStream)} with the event taken from a worker channel's
     * {@code events} and given back on release (reused only after the acknowledgement; closed after
     * {@link IpcExport#forceClose()} without it).
     */
    static IpcTensorExport export(DeviceBuffer buffer, TensorSpec spec, CudaStream producerStream,
                                  IpcEventPool<SharedEvent> events) {
        requireNativeAccess();
        Objects.requireNonNull(events, "events");
        Objects.requireNonNull(buffer, "buffer");
        Objects.requireNonNull(spec, "spec");
        if (!spec.device().equals(buffer.device())) {
            throw new UnsupportedFeatureException("spec.device", "expected kDLCUDA:" + buffer.device().ordinal()
                    + " (the buffer's device) but found " + spec.device());
        }
        if (spec.byteStart() != 0) {
            throw new UnsupportedFeatureException("spec.strides", "negative strides cannot be shared through the IPC"
                    + " descriptor (its offset names element [0, ..., 0] and the bytes from there)");
        }
        long offset = spec.data().address() + spec.byteOffset() - buffer.address();
        if (offset < 0 || offset + spec.byteExtent() > buffer.byteSize()) {
            throw new ValidationException(Category.LENGTH, "spec.data", "expected the tensor inside the buffer's "
                    + buffer.byteSize() + " bytes but it spans [" + offset + ", " + (offset + spec.byteExtent()) + ")");
        }
        byte[] memHandle = buffer.ipcHandle();
        DeviceBuffer ref = buffer.retain();
        Taken<SharedEvent> event = null;
        try {
            byte[] eventHandle = null;
            if (producerStream != null) {
                event = events.take(buffer.device());
                event.event().event().record(producerStream);
                eventHandle = event.event().handle();
            }
            IpcTensorDescriptor d = new IpcTensorDescriptor(UUID.randomUUID().toString(), buffer.device().ordinal(), memHandle,
                    offset, spec.byteExtent(), spec.dtype(), spec.shape(), spec.strides(), eventHandle);
            return new IpcTensorExport(d, ref, events, event);
        } catch (RuntimeException | Error e) {
            try {
                if (event != null) {
                    events.give(event, false); // never sent: a pooled event is closed, as on a forced close
                }
            } finally {
                ref.close();
            }
            throw e;
        }
    }

    /** {@return the export's acknowledgement gate, which {@link IpcExport} shares} */
    Acknowledgement gate() {
        return gate;
    }

    /** {@return the descriptor to send to the importer ({@link IpcTensorDescriptor#toJson()})} */
    public IpcTensorDescriptor descriptor() {
        return descriptor;
    }

    /** {@return whether the event belongs to the channel's pool, so that the worker may keep its opening} */
    boolean persistentEvent() {
        return persistentEvent;
    }

    /**
     * The release step of the gate: the event if any (back to its pool once acknowledged, else closed), then the
     * reference to the allocation.
     */
    private static void release(Runnable event, DeviceBuffer buffer) {
        try {
            if (event != null) {
                event.run();
            }
        } finally {
            buffer.close();
        }
    }

    @Override
    public String toString() {
        return "IpcTensorExport[" + descriptor.id() + ", " + gate.state() + "]";
    }
}
