package org.devicebridge.arrow.flight;

import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;

/**
 * Where the batches of a Flight stream are copied between the device and host memory: the host side is
 * {@code allocator} (an allocator of {@code org.devicebridge.arrow.cuda.PinnedArrowMemory} makes every copy
 * one DMA straight into or out of the Arrow buffers; other memory goes through {@code transfer}'s staging
 * ring), the device side is {@code transfer}'s device, and every copy is ordered on {@code stream}.
 *
 * <p>Ownership: a borrowed view; the caller keeps owning the allocator, the transfer and the stream, and
 * keeps them open while any call using this record runs (and {@code stream} while batches made on it
 * live: their memory is freed stream-ordered on it). Immutable; as thread-safe as its parts (a transfer
 * serialises its batches, so two streams served at once on one transfer take turns).
 *
 * @param allocator host memory for the batches: the root Flight sends from and the roots it receives into
 *     must come from this allocator's root allocator
 * @param transfer copies between host and device; of {@code stream}'s device
 * @param stream orders every copy; the caller's stream
 */
public record DeviceCopies(BufferAllocator allocator, HostDeviceTransfer transfer, CudaStream stream) {
    /**
     * Checks the parts.
     *
     * @throws NullPointerException if a part is null
     * @throws InvalidArgumentException if {@code transfer} and {@code stream} are of different devices
     */
    public DeviceCopies {
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(transfer, "transfer");
        Objects.requireNonNull(stream, "stream");
        if (transfer.device() != stream.device()) {
            throw new InvalidArgumentException("stream", "expected a stream of device " + transfer.device()
                    + " (the transfer's) but found one of device " + stream.device());
        }
    }

    /**
     * The CUDA device the batches live on.
     *
     * @return the device ordinal of the transfer and the stream
     */
    public int device() {
        return transfer.device();
    }
}
