package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A hand-made CPU ArrowDeviceArrayStream serving arrow-c-data exports, one batch per get_next. */
class ArrowDeviceStreamImportTest extends ArrowTestSupport {
    static final AtomicInteger RELEASES = new AtomicInteger();
    static final Deque<Exported> BATCHES = new ArrayDeque<>();
    static final AtomicInteger BATCH_DEVICE = new AtomicInteger(1);
    static FieldVector schemaSource;

    static final MemorySegment GET_SCHEMA = Native.upcallStub(MethodHandles.lookup(), ArrowDeviceStreamImportTest.class,
            "getSchema", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment GET_NEXT = Native.upcallStub(MethodHandles.lookup(), ArrowDeviceStreamImportTest.class,
            "getNext", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment GET_LAST_ERROR = Native.upcallStub(MethodHandles.lookup(), ArrowDeviceStreamImportTest.class,
            "getLastError", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment RELEASE = Native.upcallStub(MethodHandles.lookup(), ArrowDeviceStreamImportTest.class,
            "release", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        Data.exportField(schemaSource.getAllocator(), schemaSource.getField(), null,
                org.apache.arrow.c.ArrowSchema.wrap(out.address()));
        return 0;
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        MemorySegment d = out.reinterpret(ArrowDeviceArray.sizeof());
        Exported next = BATCHES.poll();
        if (next == null) {
            ArrowArray.release(d.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof()), MemorySegment.NULL);
            return 0;
        }
        MemorySegment.copy(next.arrayStruct(), 0, d, ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
        ArrowArray.release(next.arrayStruct(), MemorySegment.NULL);
        ArrowDeviceArray.device_type(d, BATCH_DEVICE.get());
        ArrowDeviceArray.device_id(d, -1);
        return 0;
    }

    private static MemorySegment getLastError(MemorySegment stream) {
        return MemorySegment.NULL;
    }

    private static void release(MemorySegment stream) {
        RELEASES.incrementAndGet();
        ArrowDeviceArrayStream.release(stream.reinterpret(ArrowDeviceArrayStream.sizeof()), MemorySegment.NULL);
    }

    @BeforeEach
    void reset() {
        RELEASES.set(0);
        BATCHES.clear();
        BATCH_DEVICE.set(1);
    }

    private static MemorySegment stream(Arena arena) {
        return stream(arena, 1);
    }

    private static MemorySegment stream(Arena arena, int deviceType) {
        MemorySegment s = arena.allocate(ArrowDeviceArrayStream.layout());
        ArrowDeviceArrayStream.device_type(s, deviceType);
        ArrowDeviceArrayStream.get_schema(s, GET_SCHEMA);
        ArrowDeviceArrayStream.get_next(s, GET_NEXT);
        ArrowDeviceArrayStream.get_last_error(s, GET_LAST_ERROR);
        ArrowDeviceArrayStream.release(s, RELEASE);
        return s;
    }

    @Test
    void cpuDeviceBatchesImportInOrderThenEndAndTheStreamIsReleasedOnce() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("int32").apply(allocator);
             Exported b1 = export(v); Exported b2 = export(v)) {
            schemaSource = v;
            BATCHES.add(b1);
            BATCHES.add(b2);
            try (ImportedArrayStream s = ArrowC.importDeviceStream(stream(arena))) {
                assertEquals(1, s.deviceType().code());
                for (int b = 0; b < 2; b++) {
                    try (ImportedArray batch = s.next(ValidationLevel.FULL)) {
                        assertEquals(1, batch.deviceType().code());
                        assertEquals(((IntVector) v).get(1),
                                batch.root().buffer(1).getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, 1));
                    }
                }
                assertNull(s.next(ValidationLevel.FULL));
            }
            assertEquals(1, RELEASES.get());
        }
    }

    @Test
    void aBatchOnAnotherDeviceThanTheStreamIsADeviceErrorAndIsReleased() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("int32").apply(allocator);
             Exported b1 = export(v)) {
            schemaSource = v;
            BATCHES.add(b1);
            BATCH_DEVICE.set(2);
            try (ImportedArrayStream s = ArrowC.importDeviceStream(stream(arena))) {
                ValidationException ex = assertThrows(ValidationException.class, () -> s.next(ValidationLevel.MINIMAL));
                assertEquals(ValidationException.Category.DEVICE, ex.category());
                assertEquals("device_type: expected the stream's device type 1 but found 2", ex.getMessage());
            }
        }
    }

    @Test
    void deviceBatchesPulledWithACopierAreValidatedAtFullFromHostCopiesAfterPrepare() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("utf8").apply(allocator);
             Exported b1 = export(v); Exported b2 = export(v);
             DeviceCopierPrepareTest.RecordingCopier copier = new DeviceCopierPrepareTest.RecordingCopier()) {
            schemaSource = v;
            BATCHES.add(b1);
            BATCHES.add(b2);
            BATCH_DEVICE.set(DeviceKind.CUDA.code()); // host memory labelled CUDA, read only through the copier
            try (ImportedArrayStream s = ArrowC.importDeviceStream(stream(arena, DeviceKind.CUDA.code()))) {
                for (int b = 0; b < 2; b++) {
                    try (ImportedArray batch = s.next(ValidationLevel.FULL, null, copier)) {
                        assertEquals(DeviceKind.CUDA, batch.deviceType());
                        assertEquals(false, batch.root().isHostAccessible());
                        assertEquals(((org.apache.arrow.vector.VarCharVector) v).getOffsetBuffer()
                                .getInt(4L * TestVectors.N), batch.root().bufferLength(2), "sized from the host copies");
                    }
                }
                assertEquals(java.util.List.of("prepare", "copy", "copy", "prepare", "copy", "copy"), copier.calls);
                assertNull(s.next(ValidationLevel.FULL, null, copier));
            }
            assertEquals(1, RELEASES.get());
        }
    }

    @Test
    void aCpuBatchPulledWithACopierIsADeviceErrorAndIsReleased() {
        try (Arena arena = Arena.ofConfined(); FieldVector v = TestVectors.all().get("int32").apply(allocator);
             Exported b1 = export(v);
             DeviceCopierPrepareTest.RecordingCopier copier = new DeviceCopierPrepareTest.RecordingCopier()) {
            schemaSource = v;
            BATCHES.add(b1);
            try (ImportedArrayStream s = ArrowC.importDeviceStream(stream(arena))) {
                ValidationException ex = assertThrows(ValidationException.class,
                        () -> s.next(ValidationLevel.MINIMAL, null, copier));
                assertEquals(ValidationException.Category.DEVICE, ex.category());
                assertEquals(java.util.List.of(), copier.calls);
            }
        }
    }
}
