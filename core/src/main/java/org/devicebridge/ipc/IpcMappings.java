package org.devicebridge.ipc;

import org.devicebridge.Device;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;

/**
 * Where an import's mappings come from: opened for the import alone ({@link #EACH_IMPORT}), or kept open
 * between imports by a worker channel for the handles its worker keeps alive.
 */
interface IpcMappings {
    /**
     * {@return a reference to the mapping of {@code handles[k]}, which the import owns and closes}
     *
     * @throws org.devicebridge.cuda.CudaException if the driver refuses the handle
     */
    DeviceBuffer map(Device device, int k, byte[] handle);

    /**
     * Makes {@code stream} wait on the exporter's event {@code handle} (the host does not block).
     *
     * @throws org.devicebridge.cuda.CudaException if the driver refuses the handle
     */
    void waitEvent(CudaStream stream, byte[] handle);

    /** Every handle and the event opened for one import: the mappings close with it, the event at once. */
    IpcMappings EACH_IMPORT = new IpcMappings() {
        @Override
        public DeviceBuffer map(Device device, int k, byte[] handle) {
            return DeviceBuffer.openIpcHandle(device, handle);
        }

        @Override
        public void waitEvent(CudaStream stream, byte[] handle) {
            try (CudaEvent ready = CudaEvent.openIpcHandle(stream.device(), handle)) {
                stream.waitEvent(ready);
            }
        }
    };
}
