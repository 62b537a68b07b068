package org.devicebridge.cuda.multigpu;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaUnavailableException;
import org.junit.jupiter.api.Test;

/** Without a driver the multi-GPU entry points fail with the one typed "CUDA not available" error. */
class MultiGpuWithoutDriverTest {
    @Test
    void peerAccessAndPeerCopiesNeedTheDriver() {
        assumeFalse(Cuda.isAvailable(), "a CUDA driver is present; MultiGpuTest covers this machine");
        assertThrows(CudaUnavailableException.class, () -> Cuda.canAccessPeer(Device.cuda(0), Device.cuda(1)));
        assertThrows(CudaUnavailableException.class, () -> Cuda.enablePeerAccess(Device.cuda(0), Device.cuda(1)));
        assertThrows(CudaUnavailableException.class, () -> CudaArrow.copyAsync(null, null, null));
    }
}
