package org.devicebridge.python;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.Optional;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.dlpack.ImportedTensor;

/**
 * An array imported through {@code __array_interface__} or {@code __cuda_array_interface__}
 * ({@link ArrayInterfaces}): the data as a validated DLPack view ({@link #tensor()}), the optional mask as a
 * second one ({@link #mask()}: non-zero elements are valid), the interface version and the producer's
 * stream as the dictionary gave them.
 *
 * <p>Ownership: this object owns both tensors; each holds a reference to the Python object that exposed it
 * (the protocol ties the memory's lifetime to that object), dropped when the tensor is closed. Close this
 * object (or each tensor) when done; {@link #close()} closes the mask, then the data.
 *
 * <p>Thread safety: the accessors may be called from any thread while the tensors are live; {@code close()}
 * is idempotent and thread-safe.
 */
final class InterfaceArray implements AutoCloseable {
    private final ImportedTensor tensor;
    private final ImportedTensor mask; // null: none
    private final int version;
    private final MemorySegment producerStream; // null: the dictionary's stream was None or absent

    InterfaceArray(ImportedTensor tensor, ImportedTensor mask, int version, MemorySegment producerStream) {
        this.tensor = Objects.requireNonNull(tensor, "tensor");
        this.mask = mask;
        this.version = version;
        this.producerStream = producerStream;
    }

    /** {@return the data, validated as a DLPack tensor (read-only where the producer said {@code data[1] = True}); owned by this object} */
    public ImportedTensor tensor() {
        return tensor;
    }

    /** {@return the mask, validated as a DLPack tensor broadcastable to {@link #tensor()}'s shape, if the producer gave one; owned by this object} */
    public Optional<ImportedTensor> mask() {
        return Optional.ofNullable(mask);
    }

    /** {@return the interface's {@code version} entry} */
    public int version() {
        return version;
    }

    /** {@return {@code true} if the producer exported the data read-only ({@code data: (ptr, True)})} */
    public boolean isReadOnly() {
        return tensor.isReadOnly();
    }

    /**
     * {@return the producer's {@code stream} entry ({@code __cuda_array_interface__} v3) as a {@code CUstream}
     * (0x1 legacy default, 0x2 per-thread default); empty when it was None or absent. The import already made
     * the consumer's stream wait on it; the handle is borrowed from the producer}
     */
    public Optional<MemorySegment> producerStream() {
        return Optional.ofNullable(producerStream);
    }

    /**
     * The host bytes, for a caller that means to write them.
     *
     * @return {@link ImportedTensor#segment()}, writable
     * @throws UnsupportedFeatureException if the producer exported the data read-only, or it is not host memory
     * @throws org.devicebridge.HandleClosedException if the tensor was closed
     */
    public MemorySegment writableSegment() {
        requireWritable();
        return tensor.segment();
    }

    /**
     * The device address of element {@code [0, ..., 0]}, for a caller that means to write through it.
     *
     * @return {@link ImportedTensor#devicePointer()}
     * @throws UnsupportedFeatureException if the producer exported the data read-only
     * @throws org.devicebridge.HandleClosedException if the tensor was closed
     */
    public MemorySegment writableDevicePointer() {
        requireWritable();
        return tensor.devicePointer();
    }

    private void requireWritable() {
        if (tensor.isReadOnly()) {
            throw new UnsupportedFeatureException("data[1]", "the producer exported this array read-only; "
                    + "writing to it is refused (read it, or ask the producer for a writable array)");
        }
    }

    /** Closes the mask, then the data, dropping the references to the producer objects; idempotent. */
    @Override
    public void close() {
        try {
            if (mask != null) {
                mask.close();
            }
        } finally {
            tensor.close();
        }
    }

    @Override
    public String toString() {
        return "InterfaceArray[v" + version + " " + tensor + (mask == null ? "" : " mask " + mask) + "]";
    }
}
