package org.devicebridge.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HexFormat;
import org.devicebridge.Device;

/**
 * The other process of {@link CudaIpcTest}: opens the parent's event and device memory from their IPC
 * handles, waits on the event, checks the parent's bytes, overwrites them with its own, and exits 0 only
 * if everything matched. Arguments: device, memory handle (hex), event handle (hex), size, parent seed,
 * child seed.
 */
public final class IpcChild {
    private IpcChild() {}

    public static void main(String[] args) {
        try {
            int device = Integer.parseInt(args[0]);
            byte[] memHandle = HexFormat.of().parseHex(args[1]);
            byte[] eventHandle = HexFormat.of().parseHex(args[2]);
            int size = Integer.parseInt(args[3]);
            byte[] expected = CudaMemoryTest.pattern(size, Long.parseLong(args[4]));
            byte[] mine = CudaMemoryTest.pattern(size, Long.parseLong(args[5]));
            try (CudaEvent ready = CudaEvent.openIpcHandle(Device.cuda(device), eventHandle);
                 DeviceBuffer shared = DeviceBuffer.openIpcHandle(Device.cuda(device), memHandle);
                 Arena arena = Arena.ofConfined()) {
                if (shared.byteSize() < size) {
                    fail("opened " + shared.byteSize() + " bytes, expected at least " + size);
                }
                ready.synchronize(); // the parent's upload is done once its event completed
                MemorySegment host = arena.allocate(size);
                CudaCopies.deviceToHost(shared, 0, host);
                if (!Arrays.equals(expected, host.toArray(ValueLayout.JAVA_BYTE))) {
                    fail("the bytes read through the IPC handle differ from the parent's");
                }
                MemorySegment.copy(mine, 0, host, ValueLayout.JAVA_BYTE, 0, size);
                CudaCopies.hostToDevice(host, shared, 0);
                Cuda.synchronize(Device.cuda(device));
            }
            System.out.println("IPC child OK");
            System.exit(0);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(3);
        }
    }

    private static void fail(String message) {
        System.out.println("IPC child FAILED: " + message);
        System.exit(2);
    }
}
