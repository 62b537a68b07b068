package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The malformed-input matrix: every case must fail with its typed exception (and category), after the
 * producer's deleter was called exactly once, with the producer's own struct pointer.
 */
class DLPackMalformedTest {
    private long liveBaseline;

    record Case(String name, Consumer<NativeTensor> mutate, ImportOptions options,
                Class<? extends DeviceBridgeException> type, Category category) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static final List<Case> CASES = new ArrayList<>();

    private static void bad(String name, Category category, Consumer<NativeTensor> mutate) {
        CASES.add(new Case(name, mutate, ImportOptions.any(), ValidationException.class, category));
    }

    private static void badExpecting(String name, Device expected, Consumer<NativeTensor> mutate) {
        CASES.add(new Case(name, mutate, ImportOptions.expecting(expected), ValidationException.class, Category.DEVICE));
    }

    private static void unsupported(String name, Consumer<NativeTensor> mutate) {
        CASES.add(new Case(name, mutate, ImportOptions.any(), UnsupportedFeatureException.class, null));
    }

    static {
        // versions: only the version is read before the deleter runs
        bad("major 2 is newer than supported", Category.VERSION, t -> t.major = 2);
        bad("major 0 predates versioned tensors", Category.VERSION, t -> t.major = 0);
        bad("major 0xFFFFFFFF", Category.VERSION, t -> t.major = -1);
        bad("major 100 with minor 0", Category.VERSION, t -> { t.major = 100; t.minor = 0; });
        bad("major 2 with garbage elsewhere is rejected by version only", Category.VERSION, t -> {
            t.major = 2; t.ndim = -5; t.nullShape = true; t.code = 99; t.deviceType = 0; t.flags = -1; });
        // flags
        bad("unknown flag bit 3", Category.SCHEMA, t -> t.flags = 1L << 3);
        bad("unknown flag bit 63", Category.SCHEMA, t -> t.flags = Long.MIN_VALUE);
        bad("sub-byte padding flag on float32", Category.SCHEMA, t -> t.flags = DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED);
        // devices
        bad("device type 0 is undefined", Category.DEVICE, t -> t.deviceType = 0);
        bad("device type 5 is a gap in the enum", Category.DEVICE, t -> t.deviceType = 5);
        bad("device type 6 is a gap in the enum", Category.DEVICE, t -> t.deviceType = 6);
        bad("device type 19 is newer than the header", Category.DEVICE, t -> t.deviceType = 19);
        bad("device type -1", Category.DEVICE, t -> t.deviceType = -1);
        bad("CPU with device id 1", Category.DEVICE, t -> t.deviceId = 1);
        bad("CUDA with device id -1", Category.DEVICE, t -> { t.deviceType = 2; t.deviceId = -1; });
        badExpecting("expected CPU but found CUDA:0", Device.CPU, t -> t.deviceType = 2);
        badExpecting("expected CUDA:0 but found CUDA:1", Device.cuda(0), t -> { t.deviceType = 2; t.deviceId = 1; });
        badExpecting("expected CUDA_HOST but found CPU", Device.cudaHost(0), t -> { });
        badExpecting("expected CUDA:0 but found CUDA_MANAGED:0", Device.cuda(0), t -> t.deviceType = 13);
        // dtypes
        bad("type code 18 is newer than the header", Category.FORMAT, t -> t.code = 18);
        bad("type code 255", Category.FORMAT, t -> t.code = 255);
        bad("lanes 0", Category.FORMAT, t -> t.lanes = 0);
        unsupported("lanes 4 (vector type)", t -> t.lanes = 4);
        unsupported("lanes 65535", t -> t.lanes = 65535);
        bad("int with 12 bits", Category.FORMAT, t -> { t.code = DType.KDL_INT; t.bits = 12; });
        bad("int with 0 bits", Category.FORMAT, t -> { t.code = DType.KDL_INT; t.bits = 0; });
        bad("uint with 128 bits", Category.FORMAT, t -> { t.code = DType.KDL_UINT; t.bits = 128; });
        bad("float with 8 bits", Category.FORMAT, t -> t.bits = 8);
        bad("float with 128 bits", Category.FORMAT, t -> t.bits = 128);
        bad("bfloat with 32 bits", Category.FORMAT, t -> { t.code = DType.KDL_BFLOAT; t.bits = 32; });
        bad("complex with 16 bits", Category.FORMAT, t -> { t.code = DType.KDL_COMPLEX; t.bits = 16; });
        unsupported("bit-packed bool", t -> { t.code = DType.KDL_BOOL; t.bits = 1; });
        bad("bool with 16 bits", Category.FORMAT, t -> { t.code = DType.KDL_BOOL; t.bits = 16; });
        unsupported("opaque handle", t -> { t.code = DType.KDL_OPAQUE_HANDLE; t.bits = 64; });
        bad("float8_e4m3fn with 16 bits", Category.FORMAT, t -> { t.code = DType.KDL_FLOAT8_E4M3FN; t.bits = 16; });
        bad("float6_e2m3fn with 8 bits", Category.FORMAT, t -> { t.code = DType.KDL_FLOAT6_E2M3FN; t.bits = 8; });
        bad("float4_e2m1fn with 8 bits", Category.FORMAT, t -> { t.code = DType.KDL_FLOAT4_E2M1FN; t.bits = 8; });
        bad("packed float4 with non-compact strides", Category.SCHEMA, t -> {
            t.code = DType.KDL_FLOAT4_E2M1FN; t.bits = 4; t.strides = new long[] {1, 2}; });
        // ndim and shape
        bad("ndim -1", Category.SIZE, t -> t.ndim = -1);
        bad("ndim 65 exceeds the cap", Category.SIZE, t -> t.ndim = 65);
        bad("ndim Integer.MIN_VALUE", Category.SIZE, t -> t.ndim = Integer.MIN_VALUE);
        bad("NULL shape with ndim 2", Category.NULL_POINTER, t -> t.nullShape = true);
        bad("negative extent", Category.SIZE, t -> t.shape = new long[] {-1, 3});
        bad("extent Long.MIN_VALUE", Category.SIZE, t -> t.shape = new long[] {2, Long.MIN_VALUE});
        bad("element count overflows int64", Category.SIZE, t -> {
            t.shape = new long[] {1L << 32, 1L << 32}; t.strides = new long[] {1, 1}; });
        bad("three extents overflow int64", Category.SIZE, t -> {
            t.shape = new long[] {1L << 21, 1L << 21, 1L << 22}; t.strides = new long[] {0, 0, 0}; });
        bad("misaligned shape pointer", Category.ALIGNMENT, t -> t.shapeAddressDelta = 4);
        // strides
        bad("NULL strides in DLPack 1.3 with ndim 2", Category.NULL_POINTER, t -> t.nullStrides = true);
        bad("NULL strides in DLPack 1.2 with ndim 2", Category.NULL_POINTER, t -> { t.minor = 2; t.nullStrides = true; });
        bad("stride times extent overflows", Category.SIZE, t -> {
            t.shape = new long[] {3, 3}; t.strides = new long[] {Long.MAX_VALUE / 2 + 1, 1}; });
        bad("negative stride times extent overflows", Category.SIZE, t -> {
            t.shape = new long[] {3, 3}; t.strides = new long[] {Long.MIN_VALUE / 2 - 1, 1}; });
        bad("stride Long.MIN_VALUE", Category.SIZE, t -> t.strides = new long[] {Long.MIN_VALUE, 1});
        bad("sum of stride spans overflows", Category.SIZE, t -> {
            t.shape = new long[] {2, 2}; t.strides = new long[] {Long.MAX_VALUE - 1, Long.MAX_VALUE - 1}; });
        bad("element offset in bytes overflows", Category.SIZE, t -> {
            t.shape = new long[] {2, 1}; t.strides = new long[] {Long.MAX_VALUE / 4 + 1, 1}; });
        bad("misaligned strides pointer", Category.ALIGNMENT, t -> t.stridesAddressDelta = 3);
        // byte offset and data
        bad("byte_offset of 2^63", Category.SIZE, t -> t.byteOffset = Long.MIN_VALUE);
        bad("byte_offset plus extent overflows", Category.SIZE, t -> t.byteOffset = Long.MAX_VALUE - 8);
        bad("NULL data with six elements", Category.NULL_POINTER, t -> t.data = 0);
        bad("NULL data for a 0-d scalar", Category.NULL_POINTER, t -> {
            t.data = 0; t.shape = new long[0]; t.strides = new long[0]; });
        bad("data + byte_offset overflows the address space", Category.SIZE, t -> {
            t.data = Long.MAX_VALUE - 64; t.byteOffset = 1024; });
        bad("negative strides reach below address 0", Category.SIZE, t -> {
            t.data = 64; t.shape = new long[] {100}; t.strides = new long[] {-1}; });
        // legacy tensors
        bad("legacy: device type 0", Category.DEVICE, t -> t.legacy().deviceType = 0);
        bad("legacy: negative extent", Category.SIZE, t -> t.legacy().shape = new long[] {3, -2});
        bad("legacy: NULL data with elements", Category.NULL_POINTER, t -> t.legacy().data = 0);
        unsupported("legacy: lanes 2", t -> t.legacy().lanes = 2);
        bad("legacy: packed float4 with non-compact strides", Category.SCHEMA, t -> {
            t.legacy().code = DType.KDL_FLOAT4_E2M1FN; t.bits = 4; t.strides = new long[] {1, 2}; });
        bad("legacy: ndim 70", Category.SIZE, t -> t.legacy().ndim = 70);
        bad("legacy: NULL shape", Category.NULL_POINTER, t -> t.legacy().nullShape = true);
        bad("legacy: unknown type code", Category.FORMAT, t -> t.legacy().code = 40);
        badExpecting("legacy: expected CUDA:0 but found CPU", Device.cuda(0), t -> t.legacy());
    }

    static Stream<Case> cases() {
        return CASES.stream();
    }

    @BeforeEach
    void reset() {
        NativeTensor.reset();
        liveBaseline = HandleTracker.liveHandles();
    }

    @AfterEach
    void noLeak() {
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void malformedTensorIsRejectedTypedAfterExactlyOneDeleterCall(Case c) {
        try (Arena arena = Arena.ofConfined()) {
            NativeTensor spec = NativeTensor.cpu();
            c.mutate().accept(spec);
            MemorySegment ptr = spec.build(arena);
            DeviceBridgeException e = assertThrows(DeviceBridgeException.class, () -> {
                ImportedTensor t = spec.versioned
                        ? DLPack.importVersioned(ptr, c.options()) : DLPack.importLegacy(ptr, c.options());
                t.close();
            });
            assertInstanceOf(c.type(), e, () -> "wrong exception type: " + e);
            if (c.category() != null) {
                assertEquals(c.category(), ((ValidationException) e).category(), e::getMessage);
            }
            assertEquals(1, NativeTensor.DELETES.get(), "deleter calls");
            assertEquals(ptr.address(), NativeTensor.DELETED.peek(), "the deleter got the producer's own struct");
            assertTrue(e.getMessage() != null && !e.getMessage().isBlank());
        }
    }

    @org.junit.jupiter.api.Test
    void matrixHasAtLeastSixtyCases() {
        assertTrue(CASES.size() >= 60, "cases: " + CASES.size());
    }
}
