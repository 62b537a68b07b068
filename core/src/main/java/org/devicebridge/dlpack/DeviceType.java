package org.devicebridge.dlpack;

/**
 * {@code DLDeviceType} of DLPack 1.3; the numbers are the header's {@code kDL*}
 * constants, written here so that this type loads without native access ({@code HeaderConstantsTest} pins
 * each to the generated header).
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
public enum DeviceType {
    /** Host memory ({@code kDLCPU}). */
    CPU(1, true),
    /** CUDA device memory ({@code kDLCUDA}). */
    CUDA(2, false),
    /** CUDA pinned host memory ({@code kDLCUDAHost}). */
    CUDA_HOST(3, true),
    /** OpenCL device memory ({@code kDLOpenCL}). */
    OPENCL(4, false),
    /** Vulkan buffer ({@code kDLVulkan}). */
    VULKAN(7, false),
    /** Metal buffer ({@code kDLMetal}). */
    METAL(8, false),
    /** Verilog simulator buffer ({@code kDLVPI}). */
    VPI(9, false),
    /** ROCm device memory ({@code kDLROCM}). */
    ROCM(10, false),
    /** ROCm pinned host memory ({@code kDLROCMHost}). */
    ROCM_HOST(11, true),
    /** A device of an extension ({@code kDLExtDev}). */
    EXT_DEV(12, false),
    /** CUDA managed (unified) memory ({@code kDLCUDAManaged}). */
    CUDA_MANAGED(13, true),
    /** OneAPI unified shared memory ({@code kDLOneAPI}). */
    ONE_API(14, false),
    /** WebGPU buffer ({@code kDLWebGPU}). */
    WEBGPU(15, false),
    /** Qualcomm Hexagon DSP memory ({@code kDLHexagon}). */
    HEXAGON(16, false),
    /** Microsoft MAIA device memory ({@code kDLMAIA}). */
    MAIA(17, false),
    /** AWS Trainium device memory ({@code kDLTrn}). */
    TRN(18, false);

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
