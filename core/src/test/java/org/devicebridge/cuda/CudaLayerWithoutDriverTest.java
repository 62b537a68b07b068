package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The CUDA layer on a machine without a driver: every entry point fails with CudaUnavailableException,
 * and arguments are checked ({@link InvalidArgumentException}, or NullPointerException for a null) before
 * the driver is even needed, so these checks behave the same with and without a GPU.
 */
class CudaLayerWithoutDriverTest {

    @Test
    void everyEntryPointThrowsCudaUnavailable() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(64);
            List<Executable> calls = List.of(
                    () -> Cuda.freeMemory(Device.cuda(0)),
                    () -> Cuda.synchronize(Device.cuda(0)),
                    () -> CudaStream.create(Device.cuda(0)),
                    () -> CudaStream.borrow(Device.cuda(0), 0),
                    () -> CudaEvent.acquire(Device.cuda(0)),
                    () -> CudaEvent.createInterprocess(Device.cuda(0)),
                    () -> DeviceBuffer.allocate(Device.cuda(0), 16),
                    () -> DeviceBuffer.allocate(Device.cuda(0), 0),
                    () -> DeviceBuffer.wrap(0x1000, 16, Device.cuda(0), null),
                    () -> PinnedHostBuffer.allocate(16),
                    () -> PinnedHostBuffer.allocate(0),
                    () -> PinnedHostBuffer.register(host),
                    () -> PointerAttributes.of(host.address()),
                    () -> PointerAttributes.query(host.address()),
                    () -> DeviceBuffer.openIpcHandle(Device.cuda(0), new byte[CudaIpc.HANDLE_SIZE]),
                    () -> CudaEvent.openIpcHandle(Device.cuda(0), new byte[CudaIpc.HANDLE_SIZE]),
                    () -> HostDeviceTransfer.create(Device.cuda(0), 1 << 20));
            for (Executable call : calls) {
                assertThrows(CudaUnavailableException.class, call);
            }
        }
    }

    @Test
    void badArgumentsAreRejectedBeforeTheDriverIsNeeded() {
        assertThrows(InvalidArgumentException.class, () -> DeviceBuffer.allocate(Device.cuda(0), -1));
        assertThrows(InvalidArgumentException.class, () -> DeviceBuffer.wrap(0, -1, Device.cuda(0), null));
        assertThrows(InvalidArgumentException.class, () -> DeviceBuffer.wrap(0, 16, Device.cuda(0), null));
        assertThrows(NullPointerException.class, () -> DeviceBuffer.allocateAsync(Device.cuda(0), 16, null));
        assertThrows(InvalidArgumentException.class, () -> PinnedHostBuffer.allocate(-5));
        assertThrows(NullPointerException.class, () -> PinnedHostBuffer.register(null));
        assertThrows(InvalidArgumentException.class, () -> PinnedHostBuffer.register(MemorySegment.ofArray(new byte[8])));
        try (Arena arena = Arena.ofConfined()) {
            assertThrows(InvalidArgumentException.class, () -> PinnedHostBuffer.register(arena.allocate(0)));
        }
        MemorySegment closed;
        try (Arena arena = Arena.ofConfined()) {
            closed = arena.allocate(8);
        }
        MemorySegment closedSegment = closed;
        assertThrows(org.devicebridge.HandleClosedException.class, () -> PinnedHostBuffer.register(closedSegment));
        assertThrows(InvalidArgumentException.class, () -> DeviceBuffer.openIpcHandle(Device.cuda(0), new byte[63]));
        assertThrows(NullPointerException.class, () -> CudaEvent.openIpcHandle(Device.cuda(0), null));
        assertThrows(NullPointerException.class, () -> CudaIpc.getMemHandle(null));
        assertThrows(NullPointerException.class, () -> CudaIpc.getEventHandle(null));
        assertThrows(NullPointerException.class, () -> CudaCopies.hostToDevice(null, null, 0));
        assertThrows(InvalidArgumentException.class,
                () -> CudaCopies.hostToDevice(MemorySegment.ofArray(new byte[4]), null, 0));
        assertThrows(InvalidArgumentException.class, () -> HostDeviceTransfer.create(Device.cuda(0), 2 * HostDeviceTransfer.ALIGNMENT - 1));
        assertThrows(NullPointerException.class, () -> CudaStream.create(null));
        assertThrows(NullPointerException.class, () -> CudaStream.createBlocking(null));
    }

    @Test
    void everyCallOnOneDeviceRefusesADeviceThatIsNotCudaBeforeTheDriverIsNeeded() {
        for (Device other : List.of(Device.CPU, Device.cudaHost(0), new Device(DeviceKind.CUDA_MANAGED, 0))) {
            List<Executable> calls = List.of(
                    () -> Cuda.synchronize(other),
                    () -> CudaStream.create(other),
                    () -> CudaStream.createBlocking(other),
                    () -> CudaStream.borrow(other, 0),
                    () -> CudaEvent.acquire(other),
                    () -> CudaEvent.createInterprocess(other),
                    () -> CudaEvent.openIpcHandle(other, new byte[CudaIpc.HANDLE_SIZE]),
                    () -> DeviceBuffer.allocate(other, 16),
                    () -> DeviceBuffer.allocateAsync(other, 16, null),
                    () -> DeviceBuffer.wrap(0x1000, 16, other, null),
                    () -> DeviceBuffer.openIpcHandle(other, new byte[CudaIpc.HANDLE_SIZE]),
                    () -> HostDeviceTransfer.create(other, 1 << 20),
                    () -> HostDeviceTransfer.create(other, TransferOptions.defaults()));
            for (Executable call : calls) {
                InvalidArgumentException e = assertThrows(InvalidArgumentException.class, call, other.toString());
                assertEquals("device", e.parameter());
                assertTrue(e.getMessage().contains("expected a CUDA device but found " + other), e.getMessage());
            }
        }
    }

    @Test
    void rangesMustLieInsideTheBufferWithExactArithmetic() {
        DeviceRange.checkInside(0, 0, 0, "");
        DeviceRange.checkInside(0, 100, 100, "");
        DeviceRange.checkInside(100, 0, 100, "");
        DeviceRange.checkInside(Long.MAX_VALUE, 0, Long.MAX_VALUE, "");
        long[][] outside = {{90, 11}, {101, 0}, {-1, 1}, {0, -1}, {1, Long.MAX_VALUE}, {Long.MAX_VALUE, 1},
            {Long.MAX_VALUE, Long.MAX_VALUE}, {Long.MIN_VALUE, 0}};
        for (long[] r : outside) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> DeviceRange.checkInside(r[0], r[1], 100, "ranges[3]"), r[0] + " + " + r[1]);
            assertEquals("ranges[3]", e.parameter());
        }
    }
}
