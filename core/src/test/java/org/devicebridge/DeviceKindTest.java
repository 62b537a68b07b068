package org.devicebridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;

/** One device kind for both specifications: Arrow's numbers are DLPack's, and DLPack has two more. */
class DeviceKindTest {

    @Test
    void everyArrowDeviceTypeHasTheSpecificationsNumber() {
        // CDeviceDataInterface.rst, written out independently of the header
        Map<DeviceKind, Integer> spec = Map.ofEntries(Map.entry(DeviceKind.CPU, 1),
                Map.entry(DeviceKind.CUDA, 2), Map.entry(DeviceKind.CUDA_HOST, 3),
                Map.entry(DeviceKind.OPENCL, 4), Map.entry(DeviceKind.VULKAN, 7),
                Map.entry(DeviceKind.METAL, 8), Map.entry(DeviceKind.VPI, 9),
                Map.entry(DeviceKind.ROCM, 10), Map.entry(DeviceKind.ROCM_HOST, 11),
                Map.entry(DeviceKind.EXT_DEV, 12), Map.entry(DeviceKind.CUDA_MANAGED, 13),
                Map.entry(DeviceKind.ONEAPI, 14), Map.entry(DeviceKind.WEBGPU, 15),
                Map.entry(DeviceKind.HEXAGON, 16));
        int arrowKinds = 0;
        for (DeviceKind t : DeviceKind.values()) {
            assertEquals(Optional.of(t), DeviceKind.fromCode(t.code()), t.name());
            if (t.isArrowDeviceType()) {
                arrowKinds++;
                assertEquals(spec.get(t), t.code(), t.name());
            }
        }
        assertEquals(spec.size(), arrowKinds);
        assertEquals("ARROW_DEVICE_CUDA (2)", DeviceKind.CUDA.arrowName());
    }

    @Test
    void dlpackAddsMaiaAndTrainiumWhichArrowDoesNotDefine() {
        // dlpack.h 1.3: kDLMAIA = 17, kDLTrn = 18
        assertEquals(17, DeviceKind.MAIA.code());
        assertEquals(18, DeviceKind.TRN.code());
        assertFalse(DeviceKind.MAIA.isArrowDeviceType());
        assertFalse(DeviceKind.TRN.isArrowDeviceType());
        assertEquals("kDLCUDAHost (3)", DeviceKind.CUDA_HOST.dlpackName());
        assertEquals("kDLTrn (18)", DeviceKind.TRN.dlpackName());
    }

    @Test
    void numbersNeitherSpecificationDefinesAreUnknown() {
        for (int code : new int[] {0, 5, 6, 19, -1, Integer.MAX_VALUE}) {
            assertTrue(DeviceKind.fromCode(code).isEmpty(), "code " + code);
        }
    }

    @Test
    void theHostReadsCpuPinnedAndManagedMemoryOnly() {
        for (DeviceKind t : DeviceKind.values()) {
            boolean host = t == DeviceKind.CPU || t == DeviceKind.CUDA_HOST || t == DeviceKind.ROCM_HOST
                    || t == DeviceKind.CUDA_MANAGED;
            assertEquals(host, t.isHostAccessible(), t.name());
        }
    }

    @Test
    void aDeviceIsAKindAndAnOrdinalWithTheCpuAtZero() {
        assertEquals(new Device(DeviceKind.CUDA, 1), Device.cuda(1));
        assertEquals(new Device(DeviceKind.CUDA_HOST, 0), Device.cudaHost(0));
        assertEquals("CUDA:1", Device.cuda(1).toString());
        assertEquals(Category.DEVICE, assertThrows(ValidationException.class, () -> Device.cuda(-1)).category());
        assertEquals(Category.DEVICE,
                assertThrows(ValidationException.class, () -> new Device(DeviceKind.CPU, 1)).category());
    }
}
