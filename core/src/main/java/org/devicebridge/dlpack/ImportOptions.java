package org.devicebridge.dlpack;

import java.util.Objects;
import org.devicebridge.Device;

/**
 * What an importer expects of a tensor. Immutable and thread-safe.
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 *
 * @param expectedDevice the device the tensor must live on, or {@code null} for any device
 * @param pointerCheck   whether the data pointer is confirmed with the CUDA driver (see {@link PointerCheck})
 */
public record ImportOptions(Device expectedDevice, PointerCheck pointerCheck) {
    private static final ImportOptions ANY = new ImportOptions(null, PointerCheck.LABEL);

    /** How far an import trusts the tensor's {@code device} label. */
    public enum PointerCheck {
        /** The label is trusted: no driver call (the default; needs no CUDA driver). */
        LABEL,
        /**
         * The data pointer of a {@code kDLCUDA}, {@code kDLCUDAHost} or {@code kDLCUDAManaged} tensor is
         * confirmed with the driver's pointer attributes, as CUDA Arrow imports confirm their buffers:
         * {@code kDLCUDA} must be device (or unified) memory of the labelled ordinal, {@code kDLCUDAHost}
         * pinned or registered host memory, {@code kDLCUDAManaged} managed memory, and the bytes the tensor
         * spans must lie inside the one allocation the driver reports. A {@code kDLCPU} tensor is confirmed
         * not to be device memory where a driver is loaded. Needs a CUDA driver for CUDA-labelled tensors.
         */
        DRIVER
    }

    /**
     * Checks the components.
     *
     * @param expectedDevice the device the tensor must live on, or {@code null} for any device
     * @param pointerCheck   how far the device label is trusted
     * @throws NullPointerException if {@code pointerCheck} is null
     */
    public ImportOptions {
        Objects.requireNonNull(pointerCheck, "pointerCheck");
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
     * These options with the data pointer confirmed by the CUDA driver ({@link PointerCheck#DRIVER}): a
     * mismatch fails the import with a {@link org.devicebridge.ValidationException} of category
     * {@code DEVICE}, after the deleter ran.
     *
     * @return new options
     */
    public ImportOptions confirmingPointers() {
        return new ImportOptions(expectedDevice, PointerCheck.DRIVER);
    }
}
