package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.devicebridge.Device;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The default pool's release threshold: freed memory kept across synchronisations, and given back by trim. */
@RequiresCuda
class DeviceMemoryPoolTest {
    private static final Device DEVICE = Device.cuda(0);
    private static final long BYTES = 64L << 20;

    @AfterEach
    void restoreCudaDefault() {
        Cuda.setMemoryPoolThreshold(DEVICE, 0);
        Cuda.trimMemoryPool(DEVICE, 0);
    }

    @Test
    void retainedMemoryStaysInThePoolUntilTrimmed() {
        try (CudaStream s = CudaStream.create(DEVICE)) {
            Cuda.setMemoryPoolThreshold(DEVICE, 0);
            Cuda.trimMemoryPool(DEVICE, 0);
            long base = Cuda.memoryPoolReservedBytes(DEVICE);
            cycle(s);
            assertEquals(base, Cuda.memoryPoolReservedBytes(DEVICE), "CUDA's default: freed memory goes back at sync");

            Cuda.setMemoryPoolThreshold(DEVICE, 2 * BYTES);
            assertEquals(2 * BYTES, Cuda.memoryPoolThreshold(DEVICE));
            cycle(s);
            long kept = Cuda.memoryPoolReservedBytes(DEVICE);
            assertTrue(kept >= base + BYTES, "freed memory kept: " + kept + " reserved, " + base + " before");
            cycle(s);
            assertEquals(kept, Cuda.memoryPoolReservedBytes(DEVICE), "the next allocation reuses it");

            Cuda.trimMemoryPool(DEVICE, 0);
            assertEquals(base, Cuda.memoryPoolReservedBytes(DEVICE), "trim gives it back");
        }
    }

    @Test
    void badArgumentsAreTyped() {
        assertThrows(InvalidArgumentException.class, () -> Cuda.setMemoryPoolThreshold(DEVICE, -1));
        assertThrows(InvalidArgumentException.class, () -> Cuda.trimMemoryPool(DEVICE, -1));
        assertThrows(CudaException.class, () -> Cuda.setMemoryPoolThreshold(Device.cuda(Cuda.deviceCount()), 0));
    }

    private static void cycle(CudaStream s) {
        try (DeviceBuffer b = DeviceBuffer.allocateAsync(DEVICE, BYTES, s)) {
            assertEquals(BYTES, b.byteSize());
        }
        s.synchronize();
    }
}
