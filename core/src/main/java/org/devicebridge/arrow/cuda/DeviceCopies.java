package org.devicebridge.arrow.cuda;

import java.util.Objects;
import org.apache.arrow.memory.BufferAllocator;
import org.devicebridge.Device;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;

/**
 * The context every call of {@link CudaArrow} (and of Flight's device calls) takes: the stream the work is
 * ordered on (its device is the device), the staging transfer pageable host memory goes through, and the
 * allocator host batches are made in. A call reads only the parts its job needs, and says which: exports,
 * peer copies and imports at {@code MINIMAL} need the stream alone ({@link #of(CudaStream)}), an upload and an
 * import that validates contents need the transfer too ({@link #of(HostDeviceTransfer, CudaStream)}), a
 * download and Flight need all three. An allocator of {@link PinnedArrowMemory} makes every host copy one DMA
 * straight into or out of the Arrow buffers; other memory goes through the transfer's staging ring.
 *
 * <p>Ownership: a borrowed view; the caller keeps owning the allocator, the transfer and the stream, and
 * keeps them open while any call using this record runs (and {@code stream} while batches made on it
 * live: their memory is freed stream-ordered on it). Immutable; as thread-safe as its parts (a transfer
 * serialises its batches, so two streams served at once on one transfer take turns).
 *
 * @param allocator host memory for downloaded batches (the root Flight sends from and the roots it receives into
 *     must come from this allocator's root allocator); {@code null} where nothing is downloaded
 * @param transfer copies between pageable host memory and the device, of {@code stream}'s device; {@code null}
 *     where nothing goes through staging
 * @param stream orders every copy, wait and event; the caller's stream
 */
public record DeviceCopies(BufferAllocator allocator, HostDeviceTransfer transfer, CudaStream stream) {
    /**
     * Checks the parts.
     *
     * @throws NullPointerException if {@code stream} is null
     * @throws InvalidArgumentException if {@code transfer} and {@code stream} are of different devices
     */
    public DeviceCopies {
        Objects.requireNonNull(stream, "stream");
        if (transfer != null && !transfer.device().equals(stream.device())) {
            throw new InvalidArgumentException("stream", "expected a stream of device " + transfer.device().ordinal()
                    + " (the transfer's) but found one of device " + stream.device().ordinal());
        }
    }

    /**
     * The context of a call that needs only a stream: an export, a peer copy, an import at {@code MINIMAL}.
     *
     * @param stream the caller's stream; borrowed
     * @return a record without allocator and transfer
     * @throws NullPointerException if {@code stream} is null
     */
    public static DeviceCopies of(CudaStream stream) {
        return new DeviceCopies(null, null, stream);
    }

    /**
     * The context of an upload, or of an import that validates contents.
     *
     * @param transfer the staging transfer, of {@code stream}'s device; borrowed
     * @param stream the caller's stream; borrowed
     * @return a record without allocator
     * @throws NullPointerException if {@code transfer} or {@code stream} is null
     * @throws InvalidArgumentException if they are of different devices
     */
    public static DeviceCopies of(HostDeviceTransfer transfer, CudaStream stream) {
        return new DeviceCopies(null, Objects.requireNonNull(transfer, "transfer"), stream);
    }

    /**
     * The CUDA device the batches live on.
     *
     * @return the stream's device (and the transfer's)
     */
    public Device device() {
        return stream.device();
    }

    /**
     * The transfer, for a call that stages host memory.
     *
     * @return the transfer
     * @throws InvalidArgumentException ({@code copies.transfer}) if this record has none
     */
    public HostDeviceTransfer requireTransfer() {
        if (transfer == null) {
            throw new InvalidArgumentException("copies.transfer",
                    "expected a staging transfer for this call but found none (DeviceCopies.of(transfer, stream))");
        }
        return transfer;
    }

    /**
     * The allocator, for a call that makes host batches.
     *
     * @return the allocator
     * @throws InvalidArgumentException ({@code copies.allocator}) if this record has none
     */
    public BufferAllocator requireAllocator() {
        if (allocator == null) {
            throw new InvalidArgumentException("copies.allocator",
                    "expected an allocator for this call but found none (new DeviceCopies(allocator, transfer, stream))");
        }
        return allocator;
    }

    /**
     * Checks that this record has every part, as a call that copies both ways (Flight) needs.
     *
     * @return this record
     * @throws InvalidArgumentException if the allocator or the transfer is missing
     */
    public DeviceCopies requireComplete() {
        requireAllocator();
        requireTransfer();
        return this;
    }
}
