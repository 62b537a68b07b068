package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.HandleClosedException;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Exactly-once deleters, capsule semantics and the accepted edge cases of import. */
class DLPackOwnershipTest {
    private Arena arena;
    private long liveBaseline;
    private int exportsBaseline;
    private long strayBaseline;
    private final AtomicInteger ownerCloses = new AtomicInteger();

    @BeforeEach
    void setUp() {
        arena = Arena.ofConfined();
        NativeTensor.reset();
        liveBaseline = HandleTracker.liveHandles();
        exportsBaseline = Exports.REGISTRY.size();
        strayBaseline = Exports.STRAY_DELETES.get();
    }

    @AfterEach
    void tearDown() {
        arena.close();
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
    }

    private ExportedTensor export(boolean versioned) {
        MemorySegment data = arena.allocate(64, 16);
        return versioned
                ? DLPack.exportVersioned(TensorSpec.of(data, DType.INT32, 4), ownerCloses::incrementAndGet)
                : DLPack.exportLegacy(TensorSpec.of(data, DType.INT32, 4), ownerCloses::incrementAndGet);
    }

    private static void callDeleter(MemorySegment struct, boolean versioned) {
        MemorySegment s = struct.reinterpret(versioned ? DLManagedTensorVersioned.sizeof() : DLManagedTensor.sizeof());
        MemorySegment fn = versioned ? DLManagedTensorVersioned.deleter(s) : DLManagedTensor.deleter(s);
        Callbacks.invokeVoidPointer(fn, struct);
    }

    @Test
    void closingAnUntakenExportFreesItOnceAndClosesTheOwnerOnce() {
        ExportedTensor e = export(true);
        e.close();
        e.close();
        assertEquals(1, ownerCloses.get());
        assertEquals(NativeHandle.State.RELEASED, e.state());
        assertThrows(HandleClosedException.class, e::address);
    }

    @Test
    void consumerDeleterFreesOnceAndASecondCallIsIgnoredAndCounted() {
        for (boolean versioned : new boolean[] {true, false}) {
            ownerCloses.set(0);
            long stray = Exports.STRAY_DELETES.get();
            ExportedTensor e = export(versioned);
            MemorySegment p = e.transferOwnership();
            e.close(); // consumed: frees nothing
            assertEquals(0, ownerCloses.get());
            callDeleter(p, versioned);
            assertEquals(1, ownerCloses.get());
            // a buggy consumer calling again reads freed memory in C; here the struct block is gone, so only
            // the key lookup path is exercised through the registry directly
            Exports.release(Long.MAX_VALUE);
            assertEquals(stray + 1, Exports.STRAY_DELETES.get());
            assertEquals(1, ownerCloses.get());
        }
    }

    @Test
    void transferringTwiceIsRefusedTyped() {
        ExportedTensor e = export(true);
        MemorySegment p = e.transferOwnership();
        assertThrows(HandleClosedException.class, e::transferOwnership);
        assertThrows(HandleClosedException.class, e::address);
        assertThrows(HandleClosedException.class, () -> DLPack.importTensor(e, ImportOptions.any()));
        callDeleter(p, true);
        assertEquals(1, ownerCloses.get());
    }

    @Test
    void importTensorFreesTheStructAtOnceAndClosesTheOwnerWithTheResult() {
        for (boolean versioned : new boolean[] {true, false}) {
            ownerCloses.set(0);
            long stray = Exports.STRAY_DELETES.get();
            ExportedTensor e = export(versioned);
            try (Arena scope = Arena.ofConfined()) {
                ImportedTensor t = DLPack.importTensor(e, ImportOptions.expecting(Device.CPU), scope);
                assertEquals(NativeHandle.State.CONSUMED, e.state());
                assertEquals(exportsBaseline, Exports.REGISTRY.size(),
                        "a hand-over inside the library registers nothing");
                assertEquals(0, ownerCloses.get(), "the owner lives as long as the imported tensor");
                assertEquals(16, t.segment().byteSize(), "four int32");
                assertArrayEquals(new long[] {4}, t.shape());
                t.close(); // the arena owns the release: nothing happens
                assertEquals(0, ownerCloses.get());
            }
            assertEquals(1, ownerCloses.get(), "closing the arena closes the owner once");
            assertEquals(stray, Exports.STRAY_DELETES.get());
        }
    }

    @Test
    void aFailedImportTensorClosesTheOwnerOnceAndCallsNoStrayDeleter() {
        long stray = Exports.STRAY_DELETES.get();
        for (boolean versioned : new boolean[] {true, false}) {
            ownerCloses.set(0);
            ExportedTensor e = export(versioned);
            ValidationException v = assertThrows(ValidationException.class,
                    () -> DLPack.importTensor(e, ImportOptions.expecting(Device.cuda(0))));
            assertEquals(Category.DEVICE, v.category());
            assertEquals(NativeHandle.State.CONSUMED, e.state(), "consumed before the step that failed");
            assertEquals(1, ownerCloses.get(), "after a throw the owner was closed");
        }
        Arena closed = Arena.ofConfined();
        closed.close();
        ownerCloses.set(0);
        assertThrows(HandleClosedException.class, () -> DLPack.importTensor(export(true), ImportOptions.any(), closed));
        assertEquals(1, ownerCloses.get());
        MemorySegment data = arena.allocate(16);
        assertThrows(ValidationException.class, () -> DLPack.importTensor(
                DLPack.exportVersioned(TensorSpec.of(data, DType.UINT8, 16)), ImportOptions.expecting(Device.cuda(0))));
        assertEquals(stray, Exports.STRAY_DELETES.get(), "every deleter call found its export");
    }

    @Test
    void aDeleterCalledOnAnUntransferredExportFindsNothing() {
        ExportedTensor e = export(true);
        long stray = Exports.STRAY_DELETES.get();
        callDeleter(e.address(), true); // address() gives no ownership: manager_ctx is still NULL
        assertEquals(stray + 1, Exports.STRAY_DELETES.get());
        assertEquals(0, ownerCloses.get());
        assertTrue(e.isLive());
        e.close();
        assertEquals(1, ownerCloses.get());
    }

    @Test
    void anOwnerWhoseCloseThrowsNeverEscapesTheDeleter() {
        MemorySegment data = arena.allocate(16);
        ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(data, DType.UINT8, 16),
                () -> {
                    ownerCloses.incrementAndGet();
                    throw new IllegalStateException("owner broke");
                });
        long errors = org.devicebridge.testing.CountingLoggerFinder.loggedErrors();
        callDeleter(e.transferOwnership(), true); // would kill the JVM if the exception escaped the upcall
        assertEquals(1, ownerCloses.get());
        assertEquals(errors + 1, org.devicebridge.testing.CountingLoggerFinder.loggedErrors(), "the failure is logged");
        org.devicebridge.testing.CountingLoggerFinder.acknowledge(1);
    }

    @Test
    void invalidExportArgumentsThrowAndLeaveTheOwnerToTheCaller() {
        MemorySegment small = arena.allocate(16);
        ValidationException e = assertThrows(ValidationException.class, () -> DLPack.exportVersioned(
                TensorSpec.of(small, DType.FLOAT64, 3), ownerCloses::incrementAndGet));
        assertEquals(Category.LENGTH, e.category());
        assertEquals("data", e.path());
        e = assertThrows(ValidationException.class, () -> DLPack.exportVersioned(
                TensorSpec.of(small, DType.UINT8, 4).withStrides(-1), ownerCloses::incrementAndGet));
        assertEquals(Category.LENGTH, e.category(), "a negative stride must not reach before data");
        e = assertThrows(ValidationException.class, () -> DLPack.exportLegacy(
                TensorSpec.of(small, DType.UINT8, 0).withByteOffset(17), ownerCloses::incrementAndGet));
        assertEquals(Category.LENGTH, e.category(), "an empty range must still start inside data");
        assertEquals("byte_offset", e.path());
        assertEquals(0, ownerCloses.get(), "after a throw the caller still owns the owner");
        // what a spec can check on its own is refused when it is made, before any export
        e = assertThrows(ValidationException.class, () -> TensorSpec.of(small, DType.UINT8, 4, 2).withStrides(1));
        assertEquals(Category.STRUCTURE, e.category());
        assertEquals("strides", e.path());
        e = assertThrows(ValidationException.class, () -> TensorSpec.of(small, DType.UINT8, 4, -2));
        assertEquals(Category.SIZE, e.category());
        assertEquals("shape[1]", e.path());
        e = assertThrows(ValidationException.class, () -> TensorSpec.of(small, DType.UINT8, 4).withByteOffset(-1));
        assertEquals(Category.SIZE, e.category());
        e = assertThrows(ValidationException.class, () -> TensorSpec.of(small, DType.UINT8, Long.MAX_VALUE, 3));
        assertEquals(Category.SIZE, e.category(), "the element count overflows int64");
        e = assertThrows(ValidationException.class, () -> TensorSpec.of(small, DType.UINT8, new long[65]));
        assertEquals("ndim", e.path());
        e = assertThrows(ValidationException.class, () -> TensorSpec.of(small, DType.UINT8, 2)
                .withStrides(Long.MAX_VALUE));
        assertEquals(Category.SIZE, e.category(), "the byte range overflows int64");
        assertThrows(UnsupportedFeatureException.class, () -> TensorSpec.of(MemorySegment.ofArray(new byte[16]),
                DType.UINT8, 16));
        assertThrows(UnsupportedFeatureException.class, () -> TensorSpec.of(small, new DType(DType.KDL_INT, 32, 2), 2));
        assertThrows(UnsupportedFeatureException.class, () -> DLPack.exportLegacy(
                TensorSpec.of(small, DType.FLOAT4_E2M1FN, 16), ownerCloses::incrementAndGet));
        assertThrows(UnsupportedFeatureException.class, () -> DLPack.exportLegacy(
                TensorSpec.of(small, DType.UINT8, 16).withFlags(TensorFlag.IS_COPIED), ownerCloses::incrementAndGet));
        assertEquals(0, ownerCloses.get(), "after a throw the caller still owns the owner");
    }

    @Test
    void aReadOnlySegmentIsExportedReadOnlyAndRefusedAsLegacy() {
        MemorySegment data = arena.allocate(32).asReadOnly();
        try (ImportedTensor t = DLPack.importTensor(DLPack.exportVersioned(TensorSpec.of(data, DType.INT8, 32),
                ownerCloses::incrementAndGet), ImportOptions.any())) {
            assertTrue(t.isReadOnly(), "READ_ONLY set truthfully");
        }
        assertEquals(1, ownerCloses.get());
        assertEquals(java.util.Set.of(TensorFlag.READ_ONLY), TensorSpec.of(data, DType.INT8, 32).withFlags().flags(),
                "clearing the flags keeps READ_ONLY for a read-only segment");
        assertThrows(UnsupportedFeatureException.class, () -> DLPack.exportLegacy(TensorSpec.of(data, DType.INT8, 32),
                ownerCloses::incrementAndGet));
        assertEquals(1, ownerCloses.get());
    }

    @Test
    void importOfNullOwnsNothingAndCallsNoDeleter() {
        ValidationException e = assertThrows(ValidationException.class,
                () -> DLPack.importVersioned(MemorySegment.NULL, ImportOptions.any()));
        assertEquals(Category.RELEASED, e.category());
        assertEquals(0, NativeTensor.DELETES.get());
    }

    @Test
    void importedTensorCallsTheDeleterExactlyOnceAcrossRepeatedCloses() {
        MemorySegment p = NativeTensor.cpu().build(arena);
        ImportedTensor t = DLPack.importVersioned(p, ImportOptions.expecting(Device.CPU));
        MemorySegment seg = t.segment();
        assertEquals(24, seg.byteSize());
        assertEquals(0, NativeTensor.DELETES.get());
        t.close();
        t.close();
        assertEquals(1, NativeTensor.DELETES.get());
        assertEquals(p.address(), NativeTensor.DELETED.peek());
        assertThrows(HandleClosedException.class, t::segment);
        assertThrows(HandleClosedException.class, t::devicePointer);
        assertFalse(seg.scope().isAlive(), "segments die with the handle");
    }

    @Test
    void readOnlyTensorsYieldReadOnlySegments() {
        NativeTensor spec = NativeTensor.cpu();
        spec.flags = DLPack.FLAG_READ_ONLY | DLPack.FLAG_IS_COPIED;
        try (ImportedTensor t = DLPack.importVersioned(spec.build(arena), ImportOptions.any())) {
            assertTrue(t.isReadOnly());
            assertTrue(t.isCopied());
            assertTrue(t.segment().isReadOnly());
            assertThrows(RuntimeException.class, () -> t.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1));
        }
        assertEquals(1, NativeTensor.DELETES.get());
    }

    @Test
    void nullStridesMeanCompactForLegacyTensorsAndVersionsBefore12() {
        NativeTensor legacy = NativeTensor.cpu().legacy();
        legacy.nullStrides = true;
        try (ImportedTensor t = DLPack.importLegacy(legacy.build(arena), ImportOptions.any())) {
            assertArrayEquals(new long[] {3, 1}, t.strides());
            assertEquals(0, t.majorVersion(), "a legacy struct carries no version");
            assertEquals(0, t.minorVersion());
            assertFalse(t.isReadOnly());
        }
        NativeTensor v11 = NativeTensor.cpu();
        v11.minor = 1;
        v11.nullStrides = true;
        try (ImportedTensor t = DLPack.importVersioned(v11.build(arena), ImportOptions.any())) {
            assertArrayEquals(new long[] {3, 1}, t.strides());
            assertEquals(1, t.majorVersion());
            assertEquals(1, t.minorVersion());
        }
        NativeTensor scalar = NativeTensor.cpu();
        scalar.shape = new long[0];
        scalar.nullShape = true;
        scalar.nullStrides = true;
        try (ImportedTensor t = DLPack.importVersioned(scalar.build(arena), ImportOptions.any())) {
            assertEquals(0, t.ndim());
            assertEquals(4, t.byteExtent(), "a 0-d tensor holds one element");
        }
        assertEquals(3, NativeTensor.DELETES.get());
    }

    @Test
    void aNewerMinorVersionIsAccepted() {
        NativeTensor spec = NativeTensor.cpu();
        spec.minor = 9;
        try (ImportedTensor t = DLPack.importVersioned(spec.build(arena), ImportOptions.any())) {
            assertEquals(9, t.minorVersion());
        }
        assertEquals(1, NativeTensor.DELETES.get());
    }

    @Test
    void aNullDeleterIsAllowedAndNeverCalled() {
        NativeTensor spec = NativeTensor.cpu();
        spec.withDeleter = false;
        DLPack.importVersioned(spec.build(arena), ImportOptions.any()).close();
        assertEquals(0, NativeTensor.DELETES.get());
    }

    @Test
    void nullDataIsAcceptedForZeroElements() {
        NativeTensor spec = NativeTensor.cpu();
        spec.data = 0;
        spec.shape = new long[] {0, 3};
        try (ImportedTensor t = DLPack.importVersioned(spec.build(arena), ImportOptions.any())) {
            assertEquals(0, t.elementCount());
            assertEquals(0, t.segment().byteSize());
        }
        assertEquals(1, NativeTensor.DELETES.get());
    }

    @Test
    void negativeAndZeroStridesCoverExactlyTheBytesTheyReach() {
        NativeTensor spec = NativeTensor.cpu();
        spec.code = DType.KDL_INT;
        spec.bits = 16;
        spec.shape = new long[] {3, 5};
        spec.strides = new long[] {-5, 0};
        spec.byteOffset = 20; // element [0,0] is element 10 of the buffer
        try (ImportedTensor t = DLPack.importVersioned(spec.build(arena), ImportOptions.any())) {
            assertEquals(2 * 10 + 2, t.byteExtent(), "elements 0..10 of int16");
            assertEquals(20, t.originOffset());
            assertFalse(t.isCompact());
        }
    }

    @Test
    void packedAndPaddedSubByteTensorsHaveTheirOwnExtents() {
        NativeTensor packed = NativeTensor.cpu();
        packed.code = DType.KDL_FLOAT4_E2M1FN;
        packed.bits = 4;
        packed.shape = new long[] {3, 3};
        packed.strides = new long[] {3, 1};
        try (ImportedTensor t = DLPack.importVersioned(packed.build(arena), ImportOptions.any())) {
            assertEquals(5, t.byteExtent(), "nine 4-bit values packed: ceil(36 / 8) bytes");
            assertFalse(t.isSubBytePadded());
        }
        NativeTensor padded = NativeTensor.cpu();
        padded.code = DType.KDL_FLOAT6_E3M2FN;
        padded.bits = 6;
        padded.flags = DLPack.FLAG_IS_SUBBYTE_TYPE_PADDED;
        padded.shape = new long[] {3, 3};
        padded.strides = new long[] {6, 2};
        try (ImportedTensor t = DLPack.importVersioned(padded.build(arena), ImportOptions.any())) {
            assertEquals(2 * 6 + 2 * 2 + 1, t.byteExtent(), "one byte per padded element, strided");
            assertTrue(t.isSubBytePadded());
        }
    }
}
