package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.HandleClosedException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Streams: batches from arrow-c-data's exported reader; producer errors travel with errno and text. */
class ArrowStreamImportTest extends ArrowTestSupport {
    static final AtomicInteger RELEASES = new AtomicInteger();
    static final AtomicInteger SCHEMA_ERRNO = new AtomicInteger();
    static final MemorySegment ERROR_TEXT = Arena.global().allocateFrom("disk gone");
    static org.apache.arrow.memory.BufferAllocator upcallAllocator;

    static final MemorySegment GET_SCHEMA = Native.upcallStub(MethodHandles.lookup(), ArrowStreamImportTest.class,
            "getSchema", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment GET_NEXT = Native.upcallStub(MethodHandles.lookup(), ArrowStreamImportTest.class,
            "getNext", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment GET_LAST_ERROR = Native.upcallStub(MethodHandles.lookup(), ArrowStreamImportTest.class,
            "getLastError", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment RELEASE = Native.upcallStub(MethodHandles.lookup(), ArrowStreamImportTest.class,
            "release", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        int errno = SCHEMA_ERRNO.get();
        if (errno != 0) {
            return errno;
        }
        Data.exportField(upcallAllocator, Field.nullable("x", new ArrowType.Int(32, true)), null,
                org.apache.arrow.c.ArrowSchema.wrap(out.address()));
        return 0;
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        return 5; // EIO
    }

    private static MemorySegment getLastError(MemorySegment stream) {
        return ERROR_TEXT;
    }

    private static void release(MemorySegment stream) {
        RELEASES.incrementAndGet();
        ArrowArrayStream.release(stream.reinterpret(ArrowArrayStream.sizeof()), MemorySegment.NULL);
    }

    @BeforeEach
    void reset() {
        RELEASES.set(0);
        SCHEMA_ERRNO.set(0);
        upcallAllocator = allocator;
    }

    private static MemorySegment failingStream(Arena arena) {
        MemorySegment s = arena.allocate(ArrowArrayStream.layout());
        ArrowArrayStream.get_schema(s, GET_SCHEMA);
        ArrowArrayStream.get_next(s, GET_NEXT);
        ArrowArrayStream.get_last_error(s, GET_LAST_ERROR);
        ArrowArrayStream.release(s, RELEASE);
        return s;
    }

    @Test
    void batchesOfAnArrowCDataStreamImportInOrderThenEnd() throws IOException {
        Schema schema = new Schema(List.of(Field.nullable("i", new ArrowType.Int(32, true)),
                Field.nullable("s", ArrowType.Utf8.INSTANCE)));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
             ArrowStreamWriter writer = new ArrowStreamWriter(root, null, bytes)) {
            writer.start();
            for (int batch = 0; batch < 2; batch++) {
                IntVector i = (IntVector) root.getVector(0);
                VarCharVector s = (VarCharVector) root.getVector(1);
                root.allocateNew();
                for (int k = 0; k < 3 + batch; k++) {
                    i.setSafe(k, batch * 100 + k);
                    s.setSafe(k, ("b" + batch + "r" + k).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
                root.setRowCount(3 + batch);
                writer.writeBatch();
            }
            writer.end();
        }
        ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(bytes.toByteArray()), allocator);
        try (org.apache.arrow.c.ArrowArrayStream exported = org.apache.arrow.c.ArrowArrayStream.allocateNew(allocator)) {
            Data.exportArrayStream(allocator, reader, exported);
            try (ImportedArrayStream stream = ArrowC.importStream(MemorySegment.ofAddress(exported.memoryAddress()))) {
                assertEquals(List.of("i", "s"), stream.schema().children().stream().map(SchemaNode::name).toList());
                for (int batch = 0; batch < 2; batch++) {
                    try (VectorSchemaRoot got = ArrowJava.importVectorSchemaRoot(allocator,
                            stream.next(ValidationLevel.FULL), null)) {
                        assertEquals(3 + batch, got.getRowCount());
                        for (int k = 0; k < 3 + batch; k++) {
                            assertEquals(batch * 100 + k, ((IntVector) got.getVector(0)).get(k));
                            assertEquals("b" + batch + "r" + k, got.getVector(1).getObject(k).toString());
                        }
                    }
                }
                assertNull(stream.next(ValidationLevel.FULL), "end of stream");
                assertNull(stream.next(ValidationLevel.FULL), "still the end");
            }
        }
    }

    @Test
    void getSchemaErrnoIsTypedWithTheProducersTextAndTheStreamIsReleasedOnce() {
        SCHEMA_ERRNO.set(22);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = failingStream(arena);
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> ArrowC.importStream(s));
            assertEquals(22, e.errno());
            assertEquals("disk gone", e.producerMessage());
            assertEquals("get_schema failed with errno 22 (EINVAL): disk gone", e.getMessage());
            assertEquals(1, RELEASES.get());
        }
    }

    @Test
    void getNextErrnoIsTypedAndTheStreamStaysTheCallersToClose() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = failingStream(arena);
            ImportedArrayStream stream = ArrowC.importStream(s);
            assertEquals("x", stream.schema().name());
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> stream.next(ValidationLevel.DEFAULT));
            assertEquals(5, e.errno());
            assertTrue(e.getMessage().startsWith("get_next failed with errno 5 (EIO): disk gone"), e.getMessage());
            assertEquals(0, RELEASES.get());
            stream.close();
            stream.close();
            assertEquals(1, RELEASES.get(), "released exactly once");
            assertThrows(HandleClosedException.class, () -> stream.next(ValidationLevel.DEFAULT));
        }
    }

    @Test
    void aStreamWithoutCallbacksIsRejectedAndReleased() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = failingStream(arena);
            ArrowArrayStream.get_next(s, MemorySegment.NULL);
            ValidationException e = assertThrows(ValidationException.class, () -> ArrowC.importStream(s));
            assertEquals(ValidationException.Category.NULL_POINTER, e.category());
            assertEquals("get_next", e.path());
            assertEquals(1, RELEASES.get());
            assertEquals(MemorySegment.NULL, ArrowArrayStream.release(s), "the producer's struct is marked moved");
        }
    }
}
