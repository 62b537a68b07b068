package org.devicebridge.access;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.generated.arrow.arrow_c_abi_h;
import org.devicebridge.generated.dlpack.dlpack_h;
import org.junit.jupiter.api.Test;

/**
 * The header constants that the value types hold as literals (so that they load where native access is denied,
 * which the generated header classes cannot) equal the generated headers' values: the headers stay the one home.
 */
class HeaderConstantsTest {
    @Test
    void dlpackVersionAndFlagsAreTheHeaders() {
        assertEquals(dlpack_h.DLPACK_MAJOR_VERSION(), DLPack.MAJOR_VERSION);
        assertEquals(dlpack_h.DLPACK_MINOR_VERSION(), DLPack.MINOR_VERSION);
        assertEquals(dlpack_h.DLPACK_FLAG_BITMASK_READ_ONLY(), DLPack.FLAG_READ_ONLY);
        assertEquals(dlpack_h.DLPACK_FLAG_BITMASK_IS_COPIED(), DLPack.FLAG_IS_COPIED);
        assertEquals(dlpack_h.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED(), DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED);
    }

    @Test
    void dlpackTypeCodesAreTheHeaders() {
        int[][] pairs = {
            {dlpack_h.kDLInt(), DType.KDL_INT}, {dlpack_h.kDLUInt(), DType.KDL_UINT}, {dlpack_h.kDLFloat(), DType.KDL_FLOAT},
            {dlpack_h.kDLOpaqueHandle(), DType.KDL_OPAQUE_HANDLE}, {dlpack_h.kDLBfloat(), DType.KDL_BFLOAT},
            {dlpack_h.kDLComplex(), DType.KDL_COMPLEX}, {dlpack_h.kDLBool(), DType.KDL_BOOL},
            {dlpack_h.kDLFloat8_e3m4(), DType.KDL_FLOAT8_E3M4}, {dlpack_h.kDLFloat8_e4m3(), DType.KDL_FLOAT8_E4M3},
            {dlpack_h.kDLFloat8_e4m3b11fnuz(), DType.KDL_FLOAT8_E4M3B11FNUZ},
            {dlpack_h.kDLFloat8_e4m3fn(), DType.KDL_FLOAT8_E4M3FN}, {dlpack_h.kDLFloat8_e4m3fnuz(), DType.KDL_FLOAT8_E4M3FNUZ},
            {dlpack_h.kDLFloat8_e5m2(), DType.KDL_FLOAT8_E5M2}, {dlpack_h.kDLFloat8_e5m2fnuz(), DType.KDL_FLOAT8_E5M2FNUZ},
            {dlpack_h.kDLFloat8_e8m0fnu(), DType.KDL_FLOAT8_E8M0FNU}, {dlpack_h.kDLFloat6_e2m3fn(), DType.KDL_FLOAT6_E2M3FN},
            {dlpack_h.kDLFloat6_e3m2fn(), DType.KDL_FLOAT6_E3M2FN}, {dlpack_h.kDLFloat4_e2m1fn(), DType.KDL_FLOAT4_E2M1FN},
        };
        for (int i = 0; i < pairs.length; i++) {
            assertEquals(pairs[i][0], pairs[i][1], "code #" + i);
        }
    }

    @Test
    void dlpackDeviceTypesAreTheHeaders() {
        int[][] pairs = {
            {dlpack_h.kDLCPU(), DeviceKind.CPU.code()}, {dlpack_h.kDLCUDA(), DeviceKind.CUDA.code()},
            {dlpack_h.kDLCUDAHost(), DeviceKind.CUDA_HOST.code()}, {dlpack_h.kDLOpenCL(), DeviceKind.OPENCL.code()},
            {dlpack_h.kDLVulkan(), DeviceKind.VULKAN.code()}, {dlpack_h.kDLMetal(), DeviceKind.METAL.code()},
            {dlpack_h.kDLVPI(), DeviceKind.VPI.code()}, {dlpack_h.kDLROCM(), DeviceKind.ROCM.code()},
            {dlpack_h.kDLROCMHost(), DeviceKind.ROCM_HOST.code()}, {dlpack_h.kDLExtDev(), DeviceKind.EXT_DEV.code()},
            {dlpack_h.kDLCUDAManaged(), DeviceKind.CUDA_MANAGED.code()}, {dlpack_h.kDLOneAPI(), DeviceKind.ONEAPI.code()},
            {dlpack_h.kDLWebGPU(), DeviceKind.WEBGPU.code()}, {dlpack_h.kDLHexagon(), DeviceKind.HEXAGON.code()},
            {dlpack_h.kDLMAIA(), DeviceKind.MAIA.code()}, {dlpack_h.kDLTrn(), DeviceKind.TRN.code()},
        };
        assertEquals(DeviceKind.values().length, pairs.length);
        for (int i = 0; i < pairs.length; i++) {
            assertEquals(pairs[i][0], pairs[i][1], DeviceKind.values()[i].toString());
        }
    }

    @Test
    void arrowDeviceTypesAndFlagsAreTheHeaders() {
        int[][] pairs = {
            {arrow_c_abi_h.ARROW_DEVICE_CPU(), DeviceKind.CPU.code()},
            {arrow_c_abi_h.ARROW_DEVICE_CUDA(), DeviceKind.CUDA.code()},
            {arrow_c_abi_h.ARROW_DEVICE_CUDA_HOST(), DeviceKind.CUDA_HOST.code()},
            {arrow_c_abi_h.ARROW_DEVICE_OPENCL(), DeviceKind.OPENCL.code()},
            {arrow_c_abi_h.ARROW_DEVICE_VULKAN(), DeviceKind.VULKAN.code()},
            {arrow_c_abi_h.ARROW_DEVICE_METAL(), DeviceKind.METAL.code()},
            {arrow_c_abi_h.ARROW_DEVICE_VPI(), DeviceKind.VPI.code()},
            {arrow_c_abi_h.ARROW_DEVICE_ROCM(), DeviceKind.ROCM.code()},
            {arrow_c_abi_h.ARROW_DEVICE_ROCM_HOST(), DeviceKind.ROCM_HOST.code()},
            {arrow_c_abi_h.ARROW_DEVICE_EXT_DEV(), DeviceKind.EXT_DEV.code()},
            {arrow_c_abi_h.ARROW_DEVICE_CUDA_MANAGED(), DeviceKind.CUDA_MANAGED.code()},
            {arrow_c_abi_h.ARROW_DEVICE_ONEAPI(), DeviceKind.ONEAPI.code()},
            {arrow_c_abi_h.ARROW_DEVICE_WEBGPU(), DeviceKind.WEBGPU.code()},
            {arrow_c_abi_h.ARROW_DEVICE_HEXAGON(), DeviceKind.HEXAGON.code()},
        };
        DeviceKind[] arrowKinds = Arrays.stream(DeviceKind.values()).filter(DeviceKind::isArrowDeviceType)
                .toArray(DeviceKind[]::new);
        assertEquals(arrowKinds.length, pairs.length);
        for (int i = 0; i < pairs.length; i++) {
            assertEquals(pairs[i][0], pairs[i][1], arrowKinds[i].toString());
        }
        assertEquals(arrow_c_abi_h.ARROW_FLAG_DICTIONARY_ORDERED(), SchemaNode.FLAG_DICTIONARY_ORDERED);
        assertEquals(arrow_c_abi_h.ARROW_FLAG_NULLABLE(), SchemaNode.FLAG_NULLABLE);
        assertEquals(arrow_c_abi_h.ARROW_FLAG_MAP_KEYS_SORTED(), SchemaNode.FLAG_MAP_KEYS_SORTED);
    }
}
