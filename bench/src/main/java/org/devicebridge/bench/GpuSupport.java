package org.devicebridge.bench;

import org.devicebridge.cuda.Cuda;

/** Setup guard of the GPU benchmarks: a clear failure where no CUDA driver or device is present. */
final class GpuSupport {
    private GpuSupport() {}

    static void requireCuda() {
        if (!Cuda.isAvailable()) {
            throw new IllegalStateException("GPU benchmark skipped: CUDA is not available here ("
                    + Cuda.unavailableReason() + "); run bench/run-gpu.sh on a machine with an NVIDIA GPU");
        }
        if (Cuda.deviceCount() < 1) {
            throw new IllegalStateException("GPU benchmark skipped: the CUDA driver reports no device");
        }
    }
}
