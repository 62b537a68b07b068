package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.devicebridge.Device;
import org.junit.jupiter.api.Test;

/** Where no CUDA driver exists, every CUDA entry point fails with one typed exception and a reason. */
class CudaWithoutDriverTest {

    @Test
    void entryPointsThrowCudaUnavailableWithTheReason() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present; CudaDeviceTest covers this machine");
        String reason = Cuda.unavailableReason();
        assertFalse(reason.isBlank());
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, Cuda::deviceCount);
        assertTrue(e.getMessage().startsWith("CUDA driver not available: "), e.getMessage());
        assertTrue(e.getMessage().contains(reason), e.getMessage());
        assertThrows(CudaUnavailableException.class, Cuda::driverVersion);
        assertThrows(CudaUnavailableException.class, () -> Cuda.properties(Device.cuda(0)));
        assertThrows(CudaUnavailableException.class, Cuda::devices);
        // asking twice gives the same typed answer: loading is attempted once, not per call
        assertThrows(CudaUnavailableException.class, Cuda::deviceCount);
    }

    @Test
    void cudaExceptionNamesFunctionAndResult() {
        CudaException e = new CudaException("cuMemcpyDtoHAsync_v2", 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument");
        assertTrue(e.getMessage().equals("[cuMemcpyDtoHAsync_v2] CUDA_ERROR_INVALID_VALUE: invalid argument"), e.getMessage());
        assertTrue(e.result() == 1 && e.function().equals("cuMemcpyDtoHAsync_v2")
                && e.resultName().equals("CUDA_ERROR_INVALID_VALUE"));
    }
}
