package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.List;
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
     * Copies to the host every non-NULL buffer of {@code nodes}: for buffer {@code i} of a node, the
     * {@link ArrayNode#bufferLength bufferLength(i)} bytes (always positive) at the device address
     * {@link ArrayNode#bufferPointer bufferPointer(i)}. Returns the host copies, valid until the import that
     * asked returns.
     *
     * <p>The nodes are those of a view of the array that holds just the buffers to copy: every buffer not
     * asked for reads as NULL there, and a node with none to copy is left out. Their pointers are zero-length
     * segments (device memory is not readable as a segment); their paths name the buffers in messages.
     *
     * <p>Ownership: after a return the copier owns the host copies, and keeps them valid until the import
     * that asked returns; after a throw (which rejects the import) it holds nothing for this call. The nodes
     * own nothing and are only read.
     *
     * @param nodes the nodes holding the buffers to copy, each once, in the array's node order; empty when
     *     there is nothing to copy
     * @return the host copies (owned by the copier)
     */
    HostCopies copyToHost(List<ArrayNode> nodes);

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
