package org.devicebridge.dlpack;

/**
 * {@code DLDeviceType} of DLPack 1.3. The numbers are the header's {@code kDL*} constants, written here so that
 * this type loads without native access ({@code HeaderConstantsTest} pins each to the generated header).
 */
public enum DeviceType {
    CPU(1, true), CUDA(2, false), CUDA_HOST(3, true),
    OPENCL(4, false), VULKAN(7, false), METAL(8, false),
    VPI(9, false), ROCM(10, false), ROCM_HOST(11, true),
    EXT_DEV(12, false), CUDA_MANAGED(13, true),
    ONE_API(14, false), WEBGPU(15, false), HEXAGON(16, false),
    MAIA(17, false), TRN(18, false);

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
