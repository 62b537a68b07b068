package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.devicebridge.Device;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/** On a machine with an NVIDIA GPU: the driver loads lazily and reports real devices. */
@RequiresCuda
class CudaDeviceTest {

    @Test
    void driverLoadsAndReportsAVersion() {
        assertTrue(Cuda.isAvailable(), Cuda.unavailableReason());
        assertTrue(Cuda.driverVersion() >= 11000, "driver version " + Cuda.driverVersion());
    }

    @Test
    void devicesHaveNamesAndHopperOrNewerCapabilities() {
        int n = Cuda.deviceCount();
        assertTrue(n >= 1, "device count " + n);
        assertEquals(n, Cuda.devices().size());
        CudaDeviceProperties d = Cuda.properties(Device.cuda(0));
        System.out.println(d);
        assertFalse(d.name().isBlank());
        assertTrue(d.name().contains("NVIDIA"), d.name());
        assertTrue(d.computeCapabilityMajor() >= 7, d.toString());
        assertTrue(d.totalMemoryBytes() > (1L << 30), d.toString());
        assertTrue(d.multiprocessors() > 0, d.toString());
    }

    @Test
    void badOrdinalIsATypedCudaError() {
        CudaException e = assertThrows(CudaException.class, () -> Cuda.properties(Device.cuda(Cuda.deviceCount() + 7)));
        assertEquals("cuDeviceGet", e.function());
        assertEquals("CUDA_ERROR_INVALID_DEVICE", e.resultName());
    }
}
