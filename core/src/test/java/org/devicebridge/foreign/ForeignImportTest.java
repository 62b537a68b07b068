package org.devicebridge.foreign;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.ValidationException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.dlpack.DLManagedTensorVersioned;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Move, then validate, release on failure: exactly one release on every path. */
class ForeignImportTest {
    static final AtomicInteger RELEASES = new AtomicInteger();
    static final MemorySegment RELEASE_ARRAY = Native.upcallStub(MethodHandles.lookup(), ForeignImportTest.class,
            "releaseArray", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment DELETE_TENSOR = Native.upcallStub(MethodHandles.lookup(), ForeignImportTest.class,
            "deleteTensor", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private static void releaseArray(MemorySegment array) {
        RELEASES.incrementAndGet();
        ArrowArray.release(array.reinterpret(ArrowArray.sizeof()), MemorySegment.NULL);
    }

    private static void deleteTensor(MemorySegment tensor) {
        RELEASES.incrementAndGet();
    }

    @BeforeEach
    void reset() {
        RELEASES.set(0);
    }

    private static MemorySegment liveArray(Arena arena) {
        MemorySegment a = arena.allocate(ArrowArray.layout());
        ArrowArray.length(a, 3);
        ArrowArray.release(a, RELEASE_ARRAY);
        return a;
    }

    @Test
    void successMovesTheStructAndMarksTheSourceReleased() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = liveArray(arena);
            MemorySegment owned = ForeignImport.take(ForeignImport.Kind.ARROW_ARRAY, src, s -> s);
            assertEquals(MemorySegment.NULL, ArrowArray.release(src), "source must be marked released");
            assertEquals(3, ArrowArray.length(owned), "the copy holds the producer's fields");
            assertEquals(0, RELEASES.get());
            ForeignImport.Kind.ARROW_ARRAY.release(owned);
            assertEquals(1, RELEASES.get());
        }
    }

    @Test
    void failedValidationReleasesExactlyOnceAndKeepsTheTypedException() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = liveArray(arena);
            ValidationException e = assertThrows(ValidationException.class, () -> ForeignImport.take(
                    ForeignImport.Kind.ARROW_ARRAY, src, s -> {
                        throw new ValidationException(ValidationException.Category.SIZE, "length", "negative");
                    }));
            assertEquals(ValidationException.Category.SIZE, e.category());
            assertEquals(1, RELEASES.get());
        }
    }

    @Test
    void unexpectedExceptionBecomesALibraryExceptionAfterRelease() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = liveArray(arena);
            DeviceBridgeException e = assertThrows(DeviceBridgeException.class, () -> ForeignImport.take(
                    ForeignImport.Kind.ARROW_ARRAY, src, s -> {
                        throw new IndexOutOfBoundsException("bug");
                    }));
            assertTrue(e.getMessage().contains("was released"), e.getMessage());
            assertEquals(1, RELEASES.get());
        }
    }

    @Test
    void nullAndReleasedInputsAreRejectedWithoutAnyRelease() {
        ValidationException nul = assertThrows(ValidationException.class,
                () -> ForeignImport.take(ForeignImport.Kind.ARROW_SCHEMA, MemorySegment.NULL, s -> s));
        assertEquals(ValidationException.Category.RELEASED, nul.category());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment released = arena.allocate(ArrowArray.layout());
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ForeignImport.take(ForeignImport.Kind.ARROW_ARRAY, released, s -> s));
            assertEquals(ValidationException.Category.RELEASED, e.category());
        }
        assertEquals(0, RELEASES.get());
    }

    @Test
    void dlpackTensorsAreTakenInPlaceAndTheirDeleterRunsOnFailure() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment t = arena.allocate(DLManagedTensorVersioned.layout());
            DLManagedTensorVersioned.deleter(t, DELETE_TENSOR);
            MemorySegment owned = ForeignImport.take(ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, t, s -> s);
            assertEquals(t.address(), owned.address(), "DLPack tensors are not moved: the deleter gets self");
            assertThrows(ValidationException.class, () -> ForeignImport.take(
                    ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED, t, s -> {
                        throw new ValidationException(ValidationException.Category.VERSION, "version", "too new");
                    }));
            assertEquals(1, RELEASES.get());
            assertSame(ForeignImport.Kind.DL_MANAGED_TENSOR_VERSIONED,
                    ForeignImport.Kind.valueOf("DL_MANAGED_TENSOR_VERSIONED"));
        }
    }
}
