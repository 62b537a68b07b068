package org.devicebridge.arrow;

import java.util.Optional;
import org.devicebridge.generated.arrow.arrow_c_abi_h;

/**
 * The {@code ArrowDeviceType} of the C Device Data Interface: where the buffers of an
 * {@code ArrowDeviceArray} (or every batch of an {@code ArrowDeviceArrayStream}) live. The numbers are read
 * from the ABI header's {@code ARROW_DEVICE_*} constants.
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
    CPU(arrow_c_abi_h.ARROW_DEVICE_CPU()),
    /** {@code ARROW_DEVICE_CUDA}: CUDA device memory. */
    CUDA(arrow_c_abi_h.ARROW_DEVICE_CUDA()),
    /** {@code ARROW_DEVICE_CUDA_HOST}: pinned host memory registered with CUDA. */
    CUDA_HOST(arrow_c_abi_h.ARROW_DEVICE_CUDA_HOST()),
    /** {@code ARROW_DEVICE_OPENCL}. */
    OPENCL(arrow_c_abi_h.ARROW_DEVICE_OPENCL()),
    /** {@code ARROW_DEVICE_VULKAN}. */
    VULKAN(arrow_c_abi_h.ARROW_DEVICE_VULKAN()),
    /** {@code ARROW_DEVICE_METAL}. */
    METAL(arrow_c_abi_h.ARROW_DEVICE_METAL()),
    /** {@code ARROW_DEVICE_VPI}. */
    VPI(arrow_c_abi_h.ARROW_DEVICE_VPI()),
    /** {@code ARROW_DEVICE_ROCM}. */
    ROCM(arrow_c_abi_h.ARROW_DEVICE_ROCM()),
    /** {@code ARROW_DEVICE_ROCM_HOST}. */
    ROCM_HOST(arrow_c_abi_h.ARROW_DEVICE_ROCM_HOST()),
    /** {@code ARROW_DEVICE_EXT_DEV}. */
    EXT_DEV(arrow_c_abi_h.ARROW_DEVICE_EXT_DEV()),
    /** {@code ARROW_DEVICE_CUDA_MANAGED}: CUDA managed (unified) memory. */
    CUDA_MANAGED(arrow_c_abi_h.ARROW_DEVICE_CUDA_MANAGED()),
    /** {@code ARROW_DEVICE_ONEAPI}. */
    ONEAPI(arrow_c_abi_h.ARROW_DEVICE_ONEAPI()),
    /** {@code ARROW_DEVICE_WEBGPU}. */
    WEBGPU(arrow_c_abi_h.ARROW_DEVICE_WEBGPU()),
    /** {@code ARROW_DEVICE_HEXAGON}. */
    HEXAGON(arrow_c_abi_h.ARROW_DEVICE_HEXAGON());

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
