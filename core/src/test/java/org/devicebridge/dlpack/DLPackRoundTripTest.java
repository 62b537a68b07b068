package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.devicebridge.Device;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Export -> import within the JVM, for every dtype x device x layout x struct kind: the importer sees exactly
 * what was exported, the bytes it can read are the exporter's (no copy), and the owner is closed exactly once
 * when the consumer closes. CUDA and CUDA_HOST exports here use host memory standing in for device memory
 * (neither path calls the driver); real device memory is covered by the GPU tests.
 */
class DLPackRoundTripTest {
    enum Layout { CONTIGUOUS, STRIDED, OFFSET, ZERO_SIZE, READ_ONLY, NEGATIVE_STRIDE, BROADCAST, SCALAR }

    private long liveBaseline;
    private int exportsBaseline;
    private long strayBaseline;

    @BeforeEach
    void baseline() {
        liveBaseline = HandleTracker.liveHandles();
        exportsBaseline = Exports.REGISTRY.size();
        strayBaseline = Exports.STRAY_DELETES.get();
    }

    @AfterEach
    void nothingLeaked() {
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
        assertEquals(strayBaseline, Exports.STRAY_DELETES.get(), "deleter calls for unknown exports");
    }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (DType dt : DType.SUPPORTED) {
            for (Device dev : List.of(Device.CPU, Device.cudaHost(0), Device.cuda(0), Device.cuda(1))) {
                for (Layout l : Layout.values()) {
                    for (boolean versioned : new boolean[] {true, false}) {
                        if (!versioned && (l == Layout.READ_ONLY || dt.isSubByte())) {
                            continue; // legacy tensors have no flags: covered by dedicated tests
                        }
                        out.add(Arguments.of(dt, dev, l, versioned));
                    }
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} on {1}, {2}, versioned={3}")
    @MethodSource("cases")
    void importerSeesExactlyWhatWasExportedAndTheOwnerIsClosedOnce(DType dtype, Device device, Layout layout,
                                                                    boolean versioned) {
        long item = dtype.byteSize();
        long[] shape;
        long[] strides;
        long offset = 0;
        switch (layout) {
            case CONTIGUOUS, READ_ONLY -> { shape = new long[] {3, 4}; strides = null; }
            case STRIDED -> { shape = new long[] {3, 4}; strides = new long[] {10, 2}; }
            case OFFSET -> { shape = new long[] {2, 5}; strides = new long[] {5, 1}; offset = 3 * item; }
            case ZERO_SIZE -> { shape = new long[] {0, 7}; strides = new long[] {7, 1}; }
            case NEGATIVE_STRIDE -> { shape = new long[] {4}; strides = new long[] {-2}; offset = 6 * item; }
            case BROADCAST -> { shape = new long[] {3, 4}; strides = new long[] {0, 1}; }
            case SCALAR -> { shape = new long[0]; strides = new long[0]; offset = 2 * item; }
            default -> throw new AssertionError(layout);
        }
        boolean readOnly = layout == Layout.READ_ONLY;
        AtomicInteger ownerCloses = new AtomicInteger();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(512, 64);
            for (int i = 0; i < 512; i++) {
                data.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            TensorSpec spec = TensorSpec.of(data, dtype, shape).withByteOffset(offset).withDevice(device);
            spec = strides == null ? spec : spec.withStrides(strides);
            spec = readOnly ? spec.withFlags(TensorFlag.READ_ONLY) : spec;
            ExportedTensor exported = versioned
                    ? DLPack.exportVersioned(spec, ownerCloses::incrementAndGet)
                    : DLPack.exportLegacy(spec, ownerCloses::incrementAndGet);
            if (versioned) {
                MemorySegment s = exported.address().reinterpret(DLManagedTensorVersioned.sizeof());
                assertEquals(1, DLPackVersion.major(DLManagedTensorVersioned.version(s)));
                assertEquals(3, DLPackVersion.minor(DLManagedTensorVersioned.version(s)));
                long expectedFlags = (readOnly ? DLPack.FLAG_READ_ONLY : 0)
                        | (dtype.isSubByte() ? DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED : 0);
                assertEquals(expectedFlags, DLManagedTensorVersioned.flags(s), "flags (IS_COPIED never set)");
            }
            ImportedTensor t = DLPack.importTensor(exported, ImportOptions.expecting(device));
            assertEquals(NativeHandle.State.CONSUMED, exported.state());
            assertEquals(dtype, t.dtype());
            assertEquals(device, t.device());
            assertArrayEquals(shape, t.shape());
            assertArrayEquals(strides == null ? Geometry.compactStrides(shape, "") : strides, t.strides());
            assertEquals(offset, t.byteOffset());
            assertEquals(readOnly, t.isReadOnly());
            assertFalse(t.isCopied());
            assertEquals(versioned ? 1 : 0, t.majorVersion());
            long elements = 1;
            for (long e : shape) {
                elements *= e;
            }
            assertEquals(elements, t.elementCount());
            long expectedExtent = switch (layout) {
                case CONTIGUOUS, READ_ONLY -> 12 * item;
                case STRIDED -> (2 * 10 + 3 * 2 + 1) * item;
                case OFFSET -> 10 * item;
                case ZERO_SIZE -> 0;
                case NEGATIVE_STRIDE -> 7 * item;
                case BROADCAST -> 4 * item;
                case SCALAR -> item;
            };
            assertEquals(expectedExtent, t.byteExtent());
            long expectedStart = layout == Layout.NEGATIVE_STRIDE ? 0 : offset;
            assertEquals(data.address() + offset, t.devicePointer().address(), "data + byte_offset");
            if (device.kind().isHostAccessible()) {
                MemorySegment seg = t.segment();
                assertEquals(expectedExtent, seg.byteSize());
                if (expectedExtent > 0) {
                    assertEquals(data.address() + expectedStart, seg.address(), "zero copy: the exporter's bytes");
                    assertEquals(-1L, seg.mismatch(data.asSlice(expectedStart, expectedExtent)), "same contents");
                }
                assertEquals(readOnly, seg.isReadOnly());
                assertEquals(offset - expectedStart, t.originOffset());
            } else {
                assertThrows(UnsupportedFeatureException.class, t::segment);
            }
            assertEquals(0, ownerCloses.get(), "owner stays open while the consumer holds the tensor");
            t.close();
            assertEquals(1, ownerCloses.get(), "the deleter closed the owner once");
            t.close();
            exported.close();
            assertEquals(1, ownerCloses.get(), "closing again frees nothing");
            assertEquals(NativeHandle.State.RELEASED, t.state());
        }
    }

    @org.junit.jupiter.api.Test
    void everySupportedTypePassesItsOwnCheck() {
        for (DType dt : DType.SUPPORTED) {
            dt.check("dtype");
            assertTrue(dt.byteSize() >= 1, dt.toString());
        }
        assertEquals(27, DType.SUPPORTED.size());
        assertEquals(17, DType.SUPPORTED.stream().mapToInt(DType::code).distinct().count(),
                "every DLPack 1.3 type code but kDLOpaqueHandle has at least one width");
    }
}
