package org.devicebridge.arrow;

/**
 * Copies ranges of device memory to the host for validation, supplied by the device layer (for CUDA:
 * one batch of asynchronous copies on the consumer's stream, after the producer's sync event, and one
 * synchronisation). The import asks at most twice per array: once for what DEFAULT reads (offsets, view
 * sizes, run ends), and at FULL once more for every other buffer, now that all sizes are known.
 */
@FunctionalInterface
public interface DeviceCopier {
    /**
     * Copies {@code byteSizes[i]} bytes at device address {@code addresses[i]}, for every {@code i}, and
     * returns the host copies, valid until the import that asked returns.
     */
    HostCopies copyToHost(long[] addresses, long[] byteSizes);
}
