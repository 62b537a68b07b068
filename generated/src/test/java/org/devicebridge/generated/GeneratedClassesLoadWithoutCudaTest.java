package org.devicebridge.generated;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.generated.cuda.CUipcMemHandle;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.generated.dlpack.dlpack_h;
import org.junit.jupiter.api.Test;

/** The bindings initialise on any machine (no libcuda is loaded at class-load time) and match the ABI. */
class GeneratedClassesLoadWithoutCudaTest {

    @Test
    void cudaHeaderClassInitialisesWithoutADriver() {
        assertEquals(0, cuda_driver_h.CUDA_SUCCESS());
        assertEquals(2, cuda_driver_h.CU_EVENT_DISABLE_TIMING());
        assertEquals(64, CUipcMemHandle.sizeof());
    }

    @Test
    void arrowStructsHaveTheSpecificationsLayout() {
        assertEquals(72, ArrowSchema.sizeof());
        assertEquals(80, ArrowArray.sizeof());
        assertEquals(64, ArrowArray.release$offset());
        assertEquals(128, ArrowDeviceArray.sizeof());
        assertEquals(80, ArrowDeviceArray.device_id$offset());
        assertEquals(88, ArrowDeviceArray.device_type$offset());
        assertEquals(96, ArrowDeviceArray.sync_event$offset());
    }

    @Test
    void dlpackStructsHaveTheReferenceLayout() {
        assertEquals(48, DLTensor.sizeof());
        assertEquals(80, DLManagedTensorVersioned.sizeof());
        assertEquals(16, DLManagedTensorVersioned.deleter$offset());
        assertEquals(32, DLManagedTensorVersioned.dl_tensor$offset());
        assertEquals(1, dlpack_h.DLPACK_MAJOR_VERSION());
        assertEquals(3, dlpack_h.DLPACK_MINOR_VERSION());
        assertTrue(dlpack_h.kDLFloat4_e2m1fn() == 17);
    }
}
