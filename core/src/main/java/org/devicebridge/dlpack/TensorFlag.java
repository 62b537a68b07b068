package org.devicebridge.dlpack;

/**
 * The {@code DLManagedTensorVersioned.flags} bits an exporter chooses (see {@link TensorSpec#withFlags}).
 * {@code IS_SUBBYTE_TYPE_PADDED} is not one of them: export sets it from the dtype (sub-byte types are
 * always exported padded to a byte per element).
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
public enum TensorFlag {
    /** {@code DLPACK_FLAG_BITMASK_READ_ONLY}: the consumer must not write to the data. */
    READ_ONLY(DLPack.FLAG_READ_ONLY),
    /**
     * {@code DLPACK_FLAG_BITMASK_IS_COPIED}: the data is a copy made for this export, so the consumer may
     * treat it as its own (no one else reads or writes it).
     */
    IS_COPIED(DLPack.FLAG_IS_COPIED);

    private final long bit;

    TensorFlag(long bit) {
        this.bit = bit;
    }

    /** {@return the bit in {@code flags}} */
    public long bit() {
        return bit;
    }
}
