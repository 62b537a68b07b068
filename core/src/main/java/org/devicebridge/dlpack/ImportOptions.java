package org.devicebridge.dlpack;

import java.util.Objects;
import org.devicebridge.Device;

/**
 * What an importer expects of a tensor: the device it must be on (or any), and whether its data pointer is
 * confirmed with the CUDA driver or its {@code device} label trusted.
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 */
public final class ImportOptions {
    private static final ImportOptions ANY = new ImportOptions(null, PointerCheck.LABEL);

    /** How far an import trusts the tensor's {@code device} label. */
    enum PointerCheck {
        /** The label is trusted: no driver call (the default; needs no CUDA driver). */
        LABEL,
        /** The data pointer is confirmed with the driver (see {@link #confirmingPointers()}). */
        DRIVER
    }

    private final Device expectedDevice;
    private final PointerCheck pointerCheck;

    private ImportOptions(Device expectedDevice, PointerCheck pointerCheck) {
        this.expectedDevice = expectedDevice;
        this.pointerCheck = Objects.requireNonNull(pointerCheck, "pointerCheck");
    }

    /** {@return options that accept any device, trusting its label} */
    public static ImportOptions any() {
        return ANY;
    }

    /**
     * Accept only tensors on {@code device} (type and id), trusting the label.
     *
     * @param device the device the tensor must be labelled with
     * @return new options
     */
    public static ImportOptions expecting(Device device) {
        return new ImportOptions(Objects.requireNonNull(device, "device"), PointerCheck.LABEL);
    }

    /**
     * These options with the data pointer confirmed by the CUDA driver, as CUDA Arrow imports confirm their
     * buffers: the pointer attributes of a {@code kDLCUDA} tensor must say device (or unified) memory of the
     * labelled ordinal, of a {@code kDLCUDAHost} one pinned or registered host memory, of a
     * {@code kDLCUDAManaged} one managed memory, and the bytes the tensor spans must lie inside the one
     * allocation the driver reports. A {@code kDLCPU} tensor is confirmed not to be device memory where a
     * driver is loaded. Needs a CUDA driver for CUDA-labelled tensors. A mismatch fails the import with a
     * {@link org.devicebridge.ValidationException} of category {@code DEVICE}, after the deleter ran.
     *
     * @return new options
     */
    public ImportOptions confirmingPointers() {
        return new ImportOptions(expectedDevice, PointerCheck.DRIVER);
    }

    /** {@return the device the tensor must live on, or {@code null} for any device} */
    public Device expectedDevice() {
        return expectedDevice;
    }

    /** {@return {@code true} if the data pointer is confirmed with the CUDA driver ({@link #confirmingPointers()})} */
    public boolean confirmsPointers() {
        return pointerCheck == PointerCheck.DRIVER;
    }

    PointerCheck pointerCheck() {
        return pointerCheck;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ImportOptions other && Objects.equals(expectedDevice, other.expectedDevice)
                && pointerCheck == other.pointerCheck;
    }

    @Override
    public int hashCode() {
        return Objects.hash(expectedDevice, pointerCheck);
    }

    @Override
    public String toString() {
        return "ImportOptions[expectedDevice=" + expectedDevice + ", confirmsPointers=" + confirmsPointers() + "]";
    }
}
