package org.devicebridge.ipc;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;

/**
 * Opens a tensor another process shared through CUDA IPC (an {@link IpcTensorDescriptor}, written by this
 * library's {@link IpcTensorExport} or by any process following the format, e.g. CPython with CuPy's
 * {@code ipcGetMemHandle}) and views it as a DLPack tensor, zero-copy.
 *
 * <p>Stateless and thread-safe.
 */
final class IpcTensorImport {
    private IpcTensorImport() {}

    /**
     * Maps the descriptor's allocation ({@code cuIpcOpenMemHandle}), makes {@code consumer} wait on its event
     * (if any; the host does not block), and validates the tensor as a DLPack import does. Closing the
     * returned tensor unmaps the memory ({@code cuIpcCloseMemHandle}); then send
     * {@link IpcTensorDescriptor#closeMessage()} back to the exporter, which keeps the memory alive until it
     * gets it.
     *
     * <p>Ownership: after a return the caller owns the tensor (and through it the mapping); after a throw
     * nothing is mapped.
     *
     * @param descriptor what the exporter sent
     * @param consumer the stream the caller will use the data on (borrowed)
     * @param options what to accept (device, pointer check)
     * @return the tensor, on {@code kDLCUDA:descriptor.device()}
     * @throws ValidationException if the tensor reaches outside the mapped allocation, or fails a DLPack check
     * @throws org.devicebridge.cuda.CudaException if the driver refuses (a stale handle, a handle of this process)
     */
    public static ImportedTensor open(IpcTensorDescriptor descriptor, CudaStream consumer, ImportOptions options) {
        return open(descriptor, consumer, options, null);
    }

    /**
     * {@link #open(IpcTensorDescriptor, CudaStream, ImportOptions)}, and {@code onUnmapped} (if not null) runs once
     * the mapping is closed by the tensor's release; it must not throw. After a throw it has not run or has run
     * once (the caller tells the exporter either way: nothing stays mapped).
     */
    static ImportedTensor open(IpcTensorDescriptor descriptor, CudaStream consumer, ImportOptions options,
                               Runnable onUnmapped) {
        requireNativeAccess();
        Objects.requireNonNull(descriptor, "descriptor");
        Objects.requireNonNull(consumer, "consumer");
        Objects.requireNonNull(options, "options");
        Device device = Device.cuda(descriptor.device());
        DeviceBuffer mapped = DeviceBuffer.openIpcHandle(device, descriptor.memHandle());
        try {
            long end = Math.addExact(descriptor.offset(), descriptor.nbytes());
            if (end > mapped.byteSize()) {
                throw new ValidationException(Category.LENGTH, "nbytes", "expected offset + nbytes within the mapped "
                        + mapped.byteSize() + " bytes but found " + end);
            }
            byte[] eventHandle = descriptor.eventHandle();
            if (eventHandle != null) {
                try (CudaEvent ready = CudaEvent.openIpcHandle(device, eventHandle)) {
                    consumer.waitEvent(ready);
                }
            }
            long first = mapped.address() + descriptor.offset();
            MemorySegment data = descriptor.nbytes() == 0 ? MemorySegment.ofAddress(first)
                    : MemorySegment.ofAddress(first).reinterpret(descriptor.nbytes()); // sized from the checked range
            TensorSpec spec = TensorSpec.of(data, descriptor.dtype(), descriptor.shape())
                    .withStrides(descriptor.strides()).withDevice(device);
            ExportedTensor exported = DLPack.exportVersioned(spec, onUnmapped == null ? mapped : () -> {
                try {
                    mapped.close();
                } finally {
                    onUnmapped.run();
                }
            });
            return DLPack.importTensor(exported, options); // closes the mapping on a throw
        } catch (RuntimeException | Error e) {
            if (mapped.isLive()) {
                mapped.close();
            }
            throw e;
        }
    }
}
