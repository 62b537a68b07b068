package org.devicebridge.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.devicebridge.Device;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * What a CUDA device is: its name, compute capability, memory and a few attributes, read once (the
 * driver's counterpart of the runtime's {@code cudaDeviceProp}). Not an identity: {@link #device()} is the
 * {@link Device} these describe, the type every signature takes.
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 *
 * @param device the device ({@link org.devicebridge.DeviceKind#CUDA} and its ordinal)
 * @param name the marketing name, e.g. "NVIDIA H100 80GB HBM3"
 * @param computeCapabilityMajor e.g. 9 for Hopper
 * @param computeCapabilityMinor e.g. 0
 * @param totalMemoryBytes global memory
 * @param multiprocessors streaming multiprocessor count
 * @param pciBusId "domain:bus:device" as {@code nvidia-smi} prints it
 * @param memoryPoolsSupported whether stream-ordered allocation ({@code cuMemAllocAsync}) works
 */
public record CudaDeviceProperties(Device device, String name, int computeCapabilityMajor, int computeCapabilityMinor,
                         long totalMemoryBytes, int multiprocessors, String pciBusId,
                         boolean memoryPoolsSupported) {

    static CudaDeviceProperties get(int ordinal) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dev = arena.allocate(JAVA_INT);
            CudaDriver.check("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, ordinal));
            int d = dev.get(JAVA_INT, 0);
            MemorySegment name = arena.allocate(256);
            CudaDriver.check("cuDeviceGetName", cuda_driver_h.cuDeviceGetName(name, 256, d));
            MemorySegment total = arena.allocate(JAVA_LONG);
            CudaDriver.check("cuDeviceTotalMem_v2", cuda_driver_h.cuDeviceTotalMem_v2(total, d));
            return new CudaDeviceProperties(Device.cuda(ordinal), name.getString(0),
                    attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR()),
                    attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR()),
                    total.get(JAVA_LONG, 0),
                    attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT()),
                    String.format(Locale.ROOT, "%04x:%02x:%02x",
                            attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID()),
                            attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID()),
                            attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID())),
                    attribute(arena, d, cuda_driver_h.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED()) != 0);
        }
    }

    private static int attribute(Arena arena, int device, int attribute) {
        MemorySegment v = arena.allocate(JAVA_INT);
        CudaDriver.check("cuDeviceGetAttribute", cuda_driver_h.cuDeviceGetAttribute(v, attribute, device));
        return v.get(JAVA_INT, 0);
    }

    /**
     * Checks the components.
     *
     * @throws org.devicebridge.InvalidArgumentException for a device that is not {@link org.devicebridge.DeviceKind#CUDA}
     */
    public CudaDeviceProperties {
        Cuda.requireCudaDevice(device);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "CUDA device %d: %s (sm_%d%d, %.1f GiB, %d SMs, PCI %s)", device.ordinal(), name,
                computeCapabilityMajor, computeCapabilityMinor, totalMemoryBytes / (1024.0 * 1024 * 1024),
                multiprocessors, pciBusId);
    }
}
