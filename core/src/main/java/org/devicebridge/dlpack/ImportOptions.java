package org.devicebridge.dlpack;

/**
 * What an importer expects of a tensor.
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 *
 * @param expectedDevice the device the tensor must live on, or {@code null} for any device
 */
public record ImportOptions(Device expectedDevice) {
    private static final ImportOptions ANY = new ImportOptions(null);

    /** {@return options that accept any device} */
    public static ImportOptions any() {
        return ANY;
    }

    /**
     * {@return options that accept only tensors on {@code device} (type and id)}
     *
     * @param device the device the tensor must be on
     */
    public static ImportOptions expecting(Device device) {
        return new ImportOptions(java.util.Objects.requireNonNull(device, "device"));
    }
}
