package org.devicebridge.dlpack;

import org.devicebridge.generated.dlpack.dlpack_h;

/**
 * {@code DLDeviceType} of DLPack 1.3; the numbers are read from the header's {@code kDL*} constants.
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
public enum DeviceType {
    /** Host memory ({@code kDLCPU}). */
    CPU(dlpack_h.kDLCPU(), true),
    /** CUDA device memory ({@code kDLCUDA}). */
    CUDA(dlpack_h.kDLCUDA(), false),
    /** CUDA pinned host memory ({@code kDLCUDAHost}). */
    CUDA_HOST(dlpack_h.kDLCUDAHost(), true),
    /** OpenCL device memory ({@code kDLOpenCL}). */
    OPENCL(dlpack_h.kDLOpenCL(), false),
    /** Vulkan buffer ({@code kDLVulkan}). */
    VULKAN(dlpack_h.kDLVulkan(), false),
    /** Metal buffer ({@code kDLMetal}). */
    METAL(dlpack_h.kDLMetal(), false),
    /** Verilog simulator buffer ({@code kDLVPI}). */
    VPI(dlpack_h.kDLVPI(), false),
    /** ROCm device memory ({@code kDLROCM}). */
    ROCM(dlpack_h.kDLROCM(), false),
    /** ROCm pinned host memory ({@code kDLROCMHost}). */
    ROCM_HOST(dlpack_h.kDLROCMHost(), true),
    /** A device of an extension ({@code kDLExtDev}). */
    EXT_DEV(dlpack_h.kDLExtDev(), false),
    /** CUDA managed (unified) memory ({@code kDLCUDAManaged}). */
    CUDA_MANAGED(dlpack_h.kDLCUDAManaged(), true),
    /** OneAPI unified shared memory ({@code kDLOneAPI}). */
    ONE_API(dlpack_h.kDLOneAPI(), false),
    /** WebGPU buffer ({@code kDLWebGPU}). */
    WEBGPU(dlpack_h.kDLWebGPU(), false),
    /** Qualcomm Hexagon DSP memory ({@code kDLHexagon}). */
    HEXAGON(dlpack_h.kDLHexagon(), false),
    /** Microsoft MAIA device memory ({@code kDLMAIA}). */
    MAIA(dlpack_h.kDLMAIA(), false),
    /** AWS Trainium device memory ({@code kDLTrn}). */
    TRN(dlpack_h.kDLTrn(), false);

    private final int code;
    private final boolean hostAccessible;

    DeviceType(int code, boolean hostAccessible) {
        this.code = code;
        this.hostAccessible = hostAccessible;
    }

    /** {@return the C enum value} */
    public int code() {
        return code;
    }

    /** {@return {@code true} where the CPU may read the memory directly (CPU, pinned host, managed memory)} */
    public boolean isHostAccessible() {
        return hostAccessible;
    }

    /** The types by C value (small, dense numbers); null where DLPack 1.3 defines none. */
    private static final DeviceType[] BY_CODE;

    static {
        int max = 0;
        for (DeviceType t : values()) {
            max = Math.max(max, t.code);
        }
        BY_CODE = new DeviceType[max + 1];
        for (DeviceType t : values()) {
            BY_CODE[t.code] = t;
        }
    }

    /**
     * {@return the type with C value {@code code}, or {@code null} if DLPack 1.3 defines none}
     *
     * @param code a {@code DLDeviceType} value
     */
    public static DeviceType of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
