package org.devicebridge.arrow;

import java.util.Optional;

/**
 * The {@code ArrowDeviceType} of the C Device Data Interface: where the buffers of an
 * {@code ArrowDeviceArray} (or every batch of an {@code ArrowDeviceArrayStream}) live. The numbers are the ABI
 * header's {@code ARROW_DEVICE_*} constants, written here so that this type loads without native access
 * ({@code HeaderConstantsTest} pins each to the generated header).
 *
 * {@snippet lang=c :
 * typedef int32_t ArrowDeviceType;
 * #define ARROW_DEVICE_CPU 1
 * #define ARROW_DEVICE_CUDA 2
 * ...
 * #define ARROW_DEVICE_HEXAGON 16
 * }
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
public enum ArrowDeviceType {
    /** {@code ARROW_DEVICE_CPU}: host memory. */
    CPU(1),
    /** {@code ARROW_DEVICE_CUDA}: CUDA device memory. */
    CUDA(2),
    /** {@code ARROW_DEVICE_CUDA_HOST}: pinned host memory registered with CUDA. */
    CUDA_HOST(3),
    /** {@code ARROW_DEVICE_OPENCL}. */
    OPENCL(4),
    /** {@code ARROW_DEVICE_VULKAN}. */
    VULKAN(7),
    /** {@code ARROW_DEVICE_METAL}. */
    METAL(8),
    /** {@code ARROW_DEVICE_VPI}. */
    VPI(9),
    /** {@code ARROW_DEVICE_ROCM}. */
    ROCM(10),
    /** {@code ARROW_DEVICE_ROCM_HOST}. */
    ROCM_HOST(11),
    /** {@code ARROW_DEVICE_EXT_DEV}. */
    EXT_DEV(12),
    /** {@code ARROW_DEVICE_CUDA_MANAGED}: CUDA managed (unified) memory. */
    CUDA_MANAGED(13),
    /** {@code ARROW_DEVICE_ONEAPI}. */
    ONEAPI(14),
    /** {@code ARROW_DEVICE_WEBGPU}. */
    WEBGPU(15),
    /** {@code ARROW_DEVICE_HEXAGON}. */
    HEXAGON(16);

    private static final ArrowDeviceType[] VALUES = values();

    private final int code;

    ArrowDeviceType(int code) {
        this.code = code;
    }

    /** {@return the value of the {@code device_type} field} */
    public int code() {
        return code;
    }

    /**
     * {@return the device type whose {@code device_type} value is {@code code}, or empty for a number the ABI does not define}
     *
     * @param code a {@code device_type} value
     */
    public static Optional<ArrowDeviceType> fromCode(int code) {
        for (ArrowDeviceType t : VALUES) {
            if (t.code == code) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    /** {@return the ABI's name of this device type, e.g. {@code ARROW_DEVICE_CUDA (2)}, for messages} */
    public String cName() {
        return "ARROW_DEVICE_" + name() + " (" + code + ")";
    }
}
