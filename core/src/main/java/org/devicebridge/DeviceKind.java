package org.devicebridge;

import java.util.Optional;

/**
 * Where memory lives: the device kinds of Arrow's C Device Data Interface ({@code ArrowDeviceType},
 * {@code ARROW_DEVICE_*}) and of DLPack ({@code DLDeviceType}, {@code kDL*}), which number them the same way.
 * DLPack 1.3 defines two more than Arrow ({@link #MAIA}, {@link #TRN}): {@link #isArrowDeviceType()} tells.
 * The numbers are written here so that this type loads without native access ({@code HeaderConstantsTest}
 * pins each to both generated headers).
 *
 * {@snippet lang=c :
 * #define ARROW_DEVICE_CUDA 2      // arrow/c/abi.h
 * kDLCUDA = 2,                     // dlpack.h
 * }
 *
 * <p>An enum: immutable and thread-safe; it owns nothing. With an ordinal it makes a {@link Device}.
 */
public enum DeviceKind {
    /** Host memory ({@code ARROW_DEVICE_CPU}, {@code kDLCPU}). */
    CPU(1, "CPU", true),
    /** CUDA device memory ({@code ARROW_DEVICE_CUDA}, {@code kDLCUDA}). */
    CUDA(2, "CUDA", false),
    /** CUDA pinned host memory ({@code ARROW_DEVICE_CUDA_HOST}, {@code kDLCUDAHost}). */
    CUDA_HOST(3, "CUDAHost", true),
    /** OpenCL device memory ({@code ARROW_DEVICE_OPENCL}, {@code kDLOpenCL}). */
    OPENCL(4, "OpenCL", false),
    /** Vulkan buffer ({@code ARROW_DEVICE_VULKAN}, {@code kDLVulkan}). */
    VULKAN(7, "Vulkan", false),
    /** Metal buffer ({@code ARROW_DEVICE_METAL}, {@code kDLMetal}). */
    METAL(8, "Metal", false),
    /** Verilog simulator buffer ({@code ARROW_DEVICE_VPI}, {@code kDLVPI}). */
    VPI(9, "VPI", false),
    /** ROCm device memory ({@code ARROW_DEVICE_ROCM}, {@code kDLROCM}). */
    ROCM(10, "ROCM", false),
    /** ROCm pinned host memory ({@code ARROW_DEVICE_ROCM_HOST}, {@code kDLROCMHost}). */
    ROCM_HOST(11, "ROCMHost", true),
    /** A device of an extension ({@code ARROW_DEVICE_EXT_DEV}, {@code kDLExtDev}). */
    EXT_DEV(12, "ExtDev", false),
    /** CUDA managed (unified) memory ({@code ARROW_DEVICE_CUDA_MANAGED}, {@code kDLCUDAManaged}). */
    CUDA_MANAGED(13, "CUDAManaged", true),
    /** oneAPI unified shared memory ({@code ARROW_DEVICE_ONEAPI}, {@code kDLOneAPI}). */
    ONEAPI(14, "OneAPI", false),
    /** WebGPU buffer ({@code ARROW_DEVICE_WEBGPU}, {@code kDLWebGPU}). */
    WEBGPU(15, "WebGPU", false),
    /** Qualcomm Hexagon DSP memory ({@code ARROW_DEVICE_HEXAGON}, {@code kDLHexagon}). */
    HEXAGON(16, "Hexagon", false),
    /** Microsoft MAIA device memory ({@code kDLMAIA}; Arrow defines no number for it). */
    MAIA(17, "MAIA", false),
    /** AWS Trainium device memory ({@code kDLTrn}; Arrow defines no number for it). */
    TRN(18, "Trn", false);

    /** The kinds by number (small, dense numbers); null where neither specification defines one. */
    private static final DeviceKind[] BY_CODE;

    static {
        int max = 0;
        for (DeviceKind k : values()) {
            max = Math.max(max, k.code);
        }
        BY_CODE = new DeviceKind[max + 1];
        for (DeviceKind k : values()) {
            BY_CODE[k.code] = k;
        }
    }

    private final int code;
    private final String dlpackSuffix;
    private final boolean hostAccessible;

    DeviceKind(int code, String dlpackSuffix, boolean hostAccessible) {
        this.code = code;
        this.dlpackSuffix = dlpackSuffix;
        this.hostAccessible = hostAccessible;
    }

    /** {@return the number, the same in Arrow's {@code device_type} and DLPack's {@code DLDevice.device_type}} */
    public int code() {
        return code;
    }

    /** {@return {@code true} where the CPU may read the memory directly (CPU, pinned host, managed memory)} */
    public boolean isHostAccessible() {
        return hostAccessible;
    }

    /** {@return {@code true} where Arrow's C Device Data Interface defines this kind (all but MAIA and TRN)} */
    public boolean isArrowDeviceType() {
        return this != MAIA && this != TRN;
    }

    /**
     * {@return the kind numbered {@code code} by DLPack 1.3 (a superset of Arrow's), or empty for a number neither defines}
     *
     * @param code a {@code device_type} value
     */
    public static Optional<DeviceKind> fromCode(int code) {
        return Optional.ofNullable(code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null);
    }

    /** {@return Arrow's name of this kind with its number, e.g. {@code ARROW_DEVICE_CUDA (2)}, for messages} */
    public String arrowName() {
        return "ARROW_DEVICE_" + name() + " (" + code + ")";
    }

    /** {@return DLPack's name of this kind with its number, e.g. {@code kDLCUDA (2)}, for messages} */
    public String dlpackName() {
        return "kDL" + dlpackSuffix + " (" + code + ")";
    }
}
