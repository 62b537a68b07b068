package org.devicebridge.dlpack;

import org.devicebridge.generated.dlpack.dlpack_h;

/** {@code DLDeviceType} of DLPack 1.3; the numbers are read from the header's {@code kDL*} constants. */
public enum DeviceType {
    CPU(dlpack_h.kDLCPU(), true), CUDA(dlpack_h.kDLCUDA(), false), CUDA_HOST(dlpack_h.kDLCUDAHost(), true),
    OPENCL(dlpack_h.kDLOpenCL(), false), VULKAN(dlpack_h.kDLVulkan(), false), METAL(dlpack_h.kDLMetal(), false),
    VPI(dlpack_h.kDLVPI(), false), ROCM(dlpack_h.kDLROCM(), false), ROCM_HOST(dlpack_h.kDLROCMHost(), true),
    EXT_DEV(dlpack_h.kDLExtDev(), false), CUDA_MANAGED(dlpack_h.kDLCUDAManaged(), true),
    ONE_API(dlpack_h.kDLOneAPI(), false), WEBGPU(dlpack_h.kDLWebGPU(), false), HEXAGON(dlpack_h.kDLHexagon(), false),
    MAIA(dlpack_h.kDLMAIA(), false), TRN(dlpack_h.kDLTrn(), false);

    private final int code;
    private final boolean hostAccessible;

    DeviceType(int code, boolean hostAccessible) {
        this.code = code;
        this.hostAccessible = hostAccessible;
    }

    /** The C enum value. */
    public int code() {
        return code;
    }

    /** {@code true} where the CPU may read the memory directly (CPU, pinned host, managed memory). */
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

    /** The type with C value {@code code}, or {@code null} if DLPack 1.3 defines none. */
    public static DeviceType of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
