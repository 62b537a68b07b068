package org.devicebridge.access;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.devicebridge.arrow.ArrowDeviceType;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.DeviceType;
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
            {dlpack_h.kDLCPU(), DeviceType.CPU.code()}, {dlpack_h.kDLCUDA(), DeviceType.CUDA.code()},
            {dlpack_h.kDLCUDAHost(), DeviceType.CUDA_HOST.code()}, {dlpack_h.kDLOpenCL(), DeviceType.OPENCL.code()},
            {dlpack_h.kDLVulkan(), DeviceType.VULKAN.code()}, {dlpack_h.kDLMetal(), DeviceType.METAL.code()},
            {dlpack_h.kDLVPI(), DeviceType.VPI.code()}, {dlpack_h.kDLROCM(), DeviceType.ROCM.code()},
            {dlpack_h.kDLROCMHost(), DeviceType.ROCM_HOST.code()}, {dlpack_h.kDLExtDev(), DeviceType.EXT_DEV.code()},
            {dlpack_h.kDLCUDAManaged(), DeviceType.CUDA_MANAGED.code()}, {dlpack_h.kDLOneAPI(), DeviceType.ONE_API.code()},
            {dlpack_h.kDLWebGPU(), DeviceType.WEBGPU.code()}, {dlpack_h.kDLHexagon(), DeviceType.HEXAGON.code()},
            {dlpack_h.kDLMAIA(), DeviceType.MAIA.code()}, {dlpack_h.kDLTrn(), DeviceType.TRN.code()},
        };
        assertEquals(DeviceType.values().length, pairs.length);
        for (int i = 0; i < pairs.length; i++) {
            assertEquals(pairs[i][0], pairs[i][1], DeviceType.values()[i].toString());
        }
    }

    @Test
    void arrowDeviceTypesAndFlagsAreTheHeaders() {
        int[][] pairs = {
            {arrow_c_abi_h.ARROW_DEVICE_CPU(), ArrowDeviceType.CPU.code()},
            {arrow_c_abi_h.ARROW_DEVICE_CUDA(), ArrowDeviceType.CUDA.code()},
            {arrow_c_abi_h.ARROW_DEVICE_CUDA_HOST(), ArrowDeviceType.CUDA_HOST.code()},
            {arrow_c_abi_h.ARROW_DEVICE_OPENCL(), ArrowDeviceType.OPENCL.code()},
            {arrow_c_abi_h.ARROW_DEVICE_VULKAN(), ArrowDeviceType.VULKAN.code()},
            {arrow_c_abi_h.ARROW_DEVICE_METAL(), ArrowDeviceType.METAL.code()},
            {arrow_c_abi_h.ARROW_DEVICE_VPI(), ArrowDeviceType.VPI.code()},
            {arrow_c_abi_h.ARROW_DEVICE_ROCM(), ArrowDeviceType.ROCM.code()},
            {arrow_c_abi_h.ARROW_DEVICE_ROCM_HOST(), ArrowDeviceType.ROCM_HOST.code()},
            {arrow_c_abi_h.ARROW_DEVICE_EXT_DEV(), ArrowDeviceType.EXT_DEV.code()},
            {arrow_c_abi_h.ARROW_DEVICE_CUDA_MANAGED(), ArrowDeviceType.CUDA_MANAGED.code()},
            {arrow_c_abi_h.ARROW_DEVICE_ONEAPI(), ArrowDeviceType.ONEAPI.code()},
            {arrow_c_abi_h.ARROW_DEVICE_WEBGPU(), ArrowDeviceType.WEBGPU.code()},
            {arrow_c_abi_h.ARROW_DEVICE_HEXAGON(), ArrowDeviceType.HEXAGON.code()},
        };
        assertEquals(ArrowDeviceType.values().length, pairs.length);
        for (int i = 0; i < pairs.length; i++) {
            assertEquals(pairs[i][0], pairs[i][1], ArrowDeviceType.values()[i].toString());
        }
        assertEquals(arrow_c_abi_h.ARROW_FLAG_DICTIONARY_ORDERED(), SchemaNode.FLAG_DICTIONARY_ORDERED);
        assertEquals(arrow_c_abi_h.ARROW_FLAG_NULLABLE(), SchemaNode.FLAG_NULLABLE);
        assertEquals(arrow_c_abi_h.ARROW_FLAG_MAP_KEYS_SORTED(), SchemaNode.FLAG_MAP_KEYS_SORTED);
    }
}
