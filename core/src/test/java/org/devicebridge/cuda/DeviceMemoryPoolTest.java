package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.devicebridge.InvalidArgumentException;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The default pool's release threshold: freed memory kept across synchronisations, and given back by trim. */
@RequiresCuda
class DeviceMemoryPoolTest {
    private static final int DEVICE = 0;
    private static final long BYTES = 64L << 20;

    @AfterEach
    void restoreCudaDefault() {
        DeviceMemoryPool.retain(DEVICE, 0);
        DeviceMemoryPool.trim(DEVICE, 0);
    }

    @Test
    void retainedMemoryStaysInThePoolUntilTrimmed() {
        try (CudaStream s = CudaStream.create(DEVICE, StreamKind.NON_BLOCKING)) {
            DeviceMemoryPool.retain(DEVICE, 0);
            DeviceMemoryPool.trim(DEVICE, 0);
            long base = DeviceMemoryPool.reservedBytes(DEVICE);
            cycle(s);
            assertEquals(base, DeviceMemoryPool.reservedBytes(DEVICE), "CUDA's default: freed memory goes back at sync");

            DeviceMemoryPool.retain(DEVICE, 2 * BYTES);
            assertEquals(2 * BYTES, DeviceMemoryPool.releaseThreshold(DEVICE));
            cycle(s);
            long kept = DeviceMemoryPool.reservedBytes(DEVICE);
            assertTrue(kept >= base + BYTES, "freed memory kept: " + kept + " reserved, " + base + " before");
            cycle(s);
            assertEquals(kept, DeviceMemoryPool.reservedBytes(DEVICE), "the next allocation reuses it");

            DeviceMemoryPool.trim(DEVICE, 0);
            assertEquals(base, DeviceMemoryPool.reservedBytes(DEVICE), "trim gives it back");
        }
    }

    @Test
    void badArgumentsAreTyped() {
        assertThrows(InvalidArgumentException.class, () -> DeviceMemoryPool.retain(DEVICE, -1));
        assertThrows(InvalidArgumentException.class, () -> DeviceMemoryPool.trim(DEVICE, -1));
        assertThrows(CudaException.class, () -> DeviceMemoryPool.retain(Cuda.deviceCount(), 0));
    }

    private static void cycle(CudaStream s) {
        try (DeviceBuffer b = DeviceBuffer.allocateAsync(DEVICE, BYTES, s)) {
            assertEquals(BYTES, b.byteSize());
        }
        s.synchronize();
    }
}
