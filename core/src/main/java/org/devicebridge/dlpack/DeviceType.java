package org.devicebridge.dlpack;

/** {@code DLDeviceType} of DLPack 1.3. */
public enum DeviceType {
    CPU(1, true), CUDA(2, false), CUDA_HOST(3, true), OPENCL(4, false), VULKAN(7, false), METAL(8, false),
    VPI(9, false), ROCM(10, false), ROCM_HOST(11, true), EXT_DEV(12, false), CUDA_MANAGED(13, true),
    ONE_API(14, false), WEBGPU(15, false), HEXAGON(16, false), MAIA(17, false), TRN(18, false);

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

    /** The type with C value {@code code}, or {@code null} if DLPack 1.3 defines none. */
    public static DeviceType of(int code) {
        for (DeviceType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        return null;
    }
}
