package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.junit.jupiter.api.Test;

/** The device types are the C Device Data Interface's numbers; the offset width has one home. */
class ArrowDeviceTypeTest {

    @Test
    void everyDeviceTypeHasTheSpecificationsNumber() {
        // CDeviceDataInterface.rst, written out independently of the header
        Map<ArrowDeviceType, Integer> spec = Map.ofEntries(Map.entry(ArrowDeviceType.CPU, 1),
                Map.entry(ArrowDeviceType.CUDA, 2), Map.entry(ArrowDeviceType.CUDA_HOST, 3),
                Map.entry(ArrowDeviceType.OPENCL, 4), Map.entry(ArrowDeviceType.VULKAN, 7),
                Map.entry(ArrowDeviceType.METAL, 8), Map.entry(ArrowDeviceType.VPI, 9),
                Map.entry(ArrowDeviceType.ROCM, 10), Map.entry(ArrowDeviceType.ROCM_HOST, 11),
                Map.entry(ArrowDeviceType.EXT_DEV, 12), Map.entry(ArrowDeviceType.CUDA_MANAGED, 13),
                Map.entry(ArrowDeviceType.ONEAPI, 14), Map.entry(ArrowDeviceType.WEBGPU, 15),
                Map.entry(ArrowDeviceType.HEXAGON, 16));
        assertEquals(spec.size(), ArrowDeviceType.values().length);
        for (ArrowDeviceType t : ArrowDeviceType.values()) {
            assertEquals(spec.get(t), t.code(), t.name());
            assertEquals(Optional.of(t), ArrowDeviceType.fromCode(t.code()), t.name());
        }
        assertEquals("ARROW_DEVICE_CUDA (2)", ArrowDeviceType.CUDA.cName());
    }

    @Test
    void numbersTheSpecificationLeavesOutAreUnknown() {
        for (int code : new int[] {0, 5, 6, 17, -1, Integer.MAX_VALUE}) {
            assertTrue(ArrowDeviceType.fromCode(code).isEmpty(), "code " + code);
        }
    }

    @Test
    void offsetWidthIsFourForTheSmallLayoutsEightForTheLargeAndZeroWithoutOffsets() {
        assertEquals(4, Layout.VARIABLE.offsetWidth());
        assertEquals(4, Layout.LIST.offsetWidth());
        assertEquals(4, Layout.LIST_VIEW.offsetWidth());
        assertEquals(8, Layout.LARGE_VARIABLE.offsetWidth());
        assertEquals(8, Layout.LARGE_LIST.offsetWidth());
        assertEquals(8, Layout.LARGE_LIST_VIEW.offsetWidth());
        for (Layout l : new Layout[] {Layout.NULL, Layout.BOOL, Layout.FIXED_WIDTH, Layout.VIEW,
                Layout.FIXED_SIZE_BINARY, Layout.FIXED_SIZE_LIST, Layout.STRUCT, Layout.SPARSE_UNION,
                Layout.DENSE_UNION, Layout.RUN_END_ENCODED}) {
            assertEquals(0, l.offsetWidth(), l.name());
        }
    }
}
