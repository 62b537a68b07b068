package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.ADDRESS_UNALIGNED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.generated.dlpack.DLManagedTensor;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Capsules#export} leaves exactly one owner, after a return and after a throw, for a source struct of
 * every kind at every alignment (issue 12, item 5: a misaligned source once made the write that marks it
 * released throw after the capsule owned its copy, so the caller and the capsule both released). The
 * structs here hold nothing but a counting release callback (deleter for DLPack), found at the offset the
 * generated layout gives, so every release is counted exactly.
 */
class CapsulesExportOwnershipTest {
    /** Release calls, in total and per struct address (the Arrow copy's, or the DLPack source's). */
    private static final AtomicInteger RELEASES = new AtomicInteger();
    private static final Map<Long, Integer> RELEASES_BY_ADDRESS = new ConcurrentHashMap<>();
    private static final MemorySegment COUNTING_RELEASE = Native.upcallStub(MethodHandles.lookup(),
            CapsulesExportOwnershipTest.class, "countRelease", FunctionDescriptor.ofVoid(ADDRESS));

    private long liveBefore;
    private MemorySegment block;

    @SuppressWarnings("unused")
    private static void countRelease(MemorySegment self) {
        RELEASES.incrementAndGet();
        RELEASES_BY_ADDRESS.merge(self.address(), 1, Integer::sum);
    }

    @BeforeEach
    void setUp() {
        PythonTesting.runtime();
        liveBefore = HandleTracker.liveHandles();
        RELEASES.set(0);
        RELEASES_BY_ADDRESS.clear();
    }

    @AfterEach
    void tearDown() {
        if (block != null) {
            Native.free(block);
        }
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
    }

    static Stream<Arguments> kindsAndMisalignments() {
        return Stream.of(CapsuleKind.values())
                .flatMap(k -> Stream.of(0, 1, 3, 4).map(m -> Arguments.of(k, m)));
    }

    /** The offset of the release callback (deleter) in the struct, from the generated layouts. */
    private static long releaseOffset(CapsuleKind kind) {
        return switch (kind) {
            case ARROW_SCHEMA -> ArrowSchema.release$offset();
            case ARROW_ARRAY -> ArrowArray.release$offset();
            case ARROW_DEVICE_ARRAY -> ArrowDeviceArray.array$offset() + ArrowArray.release$offset();
            case ARROW_ARRAY_STREAM -> ArrowArrayStream.release$offset();
            case ARROW_DEVICE_ARRAY_STREAM -> ArrowDeviceArrayStream.release$offset();
            case DLTENSOR -> DLManagedTensor.deleter$offset();
            case DLTENSOR_VERSIONED -> DLManagedTensorVersioned.deleter$offset();
        };
    }

    private static long size(CapsuleKind kind) {
        return switch (kind) {
            case ARROW_SCHEMA -> ArrowSchema.sizeof();
            case ARROW_ARRAY -> ArrowArray.sizeof();
            case ARROW_DEVICE_ARRAY -> ArrowDeviceArray.sizeof();
            case ARROW_ARRAY_STREAM -> ArrowArrayStream.sizeof();
            case ARROW_DEVICE_ARRAY_STREAM -> ArrowDeviceArrayStream.sizeof();
            case DLTENSOR -> DLManagedTensor.sizeof();
            case DLTENSOR_VERSIONED -> DLManagedTensorVersioned.sizeof();
        };
    }

    /** A zeroed struct of {@code kind} at {@code misalignment} bytes past a malloc'd (16-aligned) address. */
    private MemorySegment source(CapsuleKind kind, int misalignment) {
        block = Native.calloc(size(kind) + 16);
        MemorySegment s = block.asSlice(misalignment, size(kind));
        s.set(ADDRESS_UNALIGNED, releaseOffset(kind), COUNTING_RELEASE);
        return s;
    }

    private static MemorySegment callback(MemorySegment source, CapsuleKind kind) {
        return source.get(ADDRESS_UNALIGNED, releaseOffset(kind));
    }

    @ParameterizedTest(name = "{0} at +{1}")
    @MethodSource("kindsAndMisalignments")
    void anExportedSourceIsReleasedOnceByTheCapsuleAndNeverByTheCaller(CapsuleKind kind, int misalignment) {
        MemorySegment source = source(kind, misalignment);
        long releasedAddress;
        try (PyObjectRef capsule = Capsules.export(source, kind)) {
            assertEquals(kind, Capsules.kindOf(capsule));
            assertEquals(0, RELEASES.get(), "nothing released while the capsule lives");
            if (kind.isDLPack()) {
                assertEquals(COUNTING_RELEASE, callback(source, kind), "a DLPack source is not touched");
                releasedAddress = source.address();
            } else {
                assertEquals(MemorySegment.NULL, callback(source, kind),
                        "the caller's struct reads as released, so a caller following the contract releases nothing");
                releasedAddress = Capsules.borrow(capsule, kind).address();
                assertNotEquals(source.address(), releasedAddress, "the capsule owns a moved copy");
            }
        }
        assertEquals(1, RELEASES.get(), "the capsule's destructor released exactly once");
        assertEquals(Map.of(releasedAddress, 1), RELEASES_BY_ADDRESS);
        // what the caller does after a return: release its struct only if it is still live (Arrow), never (DLPack)
        if (!kind.isDLPack() && !callback(source, kind).equals(MemorySegment.NULL)) {
            Callbacks.invokeVoidPointer(callback(source, kind), source);
        }
        assertEquals(1, RELEASES.get(), "released exactly once in all");
    }

    @ParameterizedTest(name = "{0} at +{1}")
    @MethodSource("kindsAndMisalignments")
    void aFailedExportLeavesTheSourceUnchangedToTheCallerAndNoCapsuleReleasesIt(CapsuleKind kind, int misalignment) {
        MemorySegment source = source(kind, misalignment);
        byte[] before = source.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        OutOfMemoryError failure = new OutOfMemoryError("test: wrapping the new capsule failed");
        OutOfMemoryError thrown = assertThrows(OutOfMemoryError.class, () -> Capsules.export(source, kind, capsule -> {
            throw failure;
        }));
        assertSame(failure, thrown);
        assertEquals(0, thrown.getSuppressed().length, "the capsule was disarmed and dropped cleanly");
        try (PyObjectRef ns = PythonTesting.runtime().newNamespace()) {
            PythonTesting.runtime().exec("import gc\ngc.collect()", ns); // a leaked armed capsule would release now
        }
        assertEquals(0, RELEASES.get(), "the dropped capsule released nothing");
        assertEquals(-1, source.mismatch(MemorySegment.ofArray(before)), "the source is unchanged");
        // what the caller does after a throw: it still owns the struct, and releases it once
        Callbacks.invokeVoidPointer(callback(source, kind), source);
        assertEquals(Map.of(source.address(), 1), RELEASES_BY_ADDRESS);
    }

    @Test
    void aReadOnlyArrowSourceIsRefusedBeforeAnythingMoves() {
        for (CapsuleKind kind : List.of(CapsuleKind.ARROW_SCHEMA, CapsuleKind.ARROW_DEVICE_ARRAY_STREAM)) {
            MemorySegment source = source(kind, 1);
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> Capsules.export(source.asReadOnly(), kind));
            assertEquals("struct", e.parameter());
            assertEquals(COUNTING_RELEASE, callback(source, kind));
            Native.free(block);
            block = null;
        }
        assertEquals(0, RELEASES.get());
    }
}
