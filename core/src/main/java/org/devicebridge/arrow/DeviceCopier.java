package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.DeviceKind;

/**
 * Copies ranges of device memory to the host for validation, supplied by the device layer (for CUDA:
 * one batch of asynchronous copies on the consumer's stream, after the producer's sync event, and one
 * synchronisation). The import asks at most twice per array: once for what DEFAULT reads (offsets, view
 * sizes, run ends), and at FULL once more for every other buffer, now that all sizes are known.
 *
 * <p>Called on the thread that runs the import, during the import; an instance shared by imports on
 * several threads must be thread-safe. The copier owns the host copies it returns.
 */
@FunctionalInterface
public interface DeviceCopier {
    /**
     * Copies {@code byteSizes[i]} bytes at device address {@code addresses[i]}, for every {@code i}, and
     * returns the host copies, valid until the import that asked returns.
     *
     * @param addresses the device addresses of the buffers to copy (only read)
     * @param byteSizes the byte size of each buffer, same length as {@code addresses} (only read)
     * @return the host copies; the copier owns them, valid until the import that asked returns
     */
    HostCopies copyToHost(long[] addresses, long[] byteSizes);

    /**
     * Called once per import, at every level, after the struct was moved and its structure checked (at
     * MINIMAL, or not at all at NONE) and before the first {@link #copyToHost}: the device layer's own
     * checks of the array (its device, its buffer pointers), and the place to order the copies after the
     * producer's sync event. A throw rejects the import (the struct is released). Does nothing by default.
     *
     * @param deviceType the array's {@code device_type}
     * @param deviceId the array's {@code device_id}
     * @param syncEvent the array's {@code sync_event} pointer, {@link MemorySegment#NULL} if none; borrowed
     * @param structure the array's nodes with every buffer's device address; lengths as MINIMAL establishes
     *     them ({@code -1} for data buffers sized by contents). Valid only during this call
     */
    default void prepare(DeviceKind deviceType, long deviceId, MemorySegment syncEvent, ArrayNode structure) {
    }
}
