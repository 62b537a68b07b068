package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.Errno;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Ownership and lifetime of exports: who releases, when, from which thread, and what survives what. */
class ArrowExportLifecycleTest {
    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private Arena arena;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        arena = Arena.ofConfined();
    }

    @AfterEach
    void tearDown() {
        arena.close();
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    private VectorSchemaRoot intsAndStrings(int rows, int seed) {
        IntVector ints = new IntVector("ints", allocator);
        VarCharVector text = new VarCharVector("text", allocator);
        fill(ints, text, rows, seed);
        VectorSchemaRoot root = new VectorSchemaRoot(List.of(ints, text));
        root.setRowCount(rows);
        return root;
    }

    private static void fill(IntVector ints, VarCharVector text, int rows, int seed) {
        ints.allocateNew(Math.max(1, rows));
        text.allocateNew();
        for (int i = 0; i < rows; i++) {
            ints.set(i, seed * 1000 + i);
            text.setSafe(i, ("v" + seed + "-" + i).getBytes(StandardCharsets.UTF_8));
        }
        ints.setValueCount(rows);
        text.setValueCount(rows);
    }

    private static List<Object> rowsOf(VectorSchemaRoot root) {
        List<Object> out = new ArrayList<>();
        for (int r = 0; r < root.getRowCount(); r++) {
            for (FieldVector v : root.getFieldVectors()) {
                Object o = v.getObject(r);
                out.add(o == null ? null : o.toString());
            }
        }
        return out;
    }

    private MemorySegment newArray() {
        return arena.allocate(ArrowArray.layout());
    }

    private MemorySegment newSchema() {
        return arena.allocate(ArrowSchema.layout());
    }

    @Test
    void schemaExportedOnceThenSeveralBatchesExportedAlone() {
        MemorySegment schema = newSchema();
        try (VectorSchemaRoot root = intsAndStrings(5, 0)) {
            ArrowJava.exportSchema(root.getSchema(), null, schema);
            try (CDataDictionaryProvider dp = new CDataDictionaryProvider();
                 VectorSchemaRoot target = Data.importVectorSchemaRoot(allocator,
                         org.apache.arrow.c.ArrowSchema.wrap(schema.address()), dp)) {
                assertEquals(root.getSchema(), target.getSchema());
                for (int batch = 1; batch <= 3; batch++) {
                    fill((IntVector) root.getVector(0), (VarCharVector) root.getVector(1), batch * 4, batch);
                    root.setRowCount(batch * 4);
                    MemorySegment array = newArray();
                    ArrowJava.exportRoot(root, null, array, null);
                    Data.importIntoVectorSchemaRoot(allocator, org.apache.arrow.c.ArrowArray.wrap(array.address()),
                            target, dp);
                    assertEquals(rowsOf(root), rowsOf(target), "batch " + batch);
                }
            }
        }
    }

    @Test
    void closingTheJavaVectorsBeforeTheConsumerReleasesKeepsTheDataValid() {
        MemorySegment array = newArray();
        MemorySegment schema = newSchema();
        List<Object> expected;
        try (VectorSchemaRoot root = intsAndStrings(50, 7)) {
            expected = rowsOf(root);
            ArrowJava.exportRoot(root, null, array, schema);
        } // the producer's vectors are closed here; the export still holds its buffer references
        assertTrue(allocator.getAllocatedMemory() > 0, "the export keeps the buffers alive");
        try (CDataDictionaryProvider dp = new CDataDictionaryProvider();
             VectorSchemaRoot back = Data.importVectorSchemaRoot(allocator,
                     org.apache.arrow.c.ArrowArray.wrap(array.address()),
                     org.apache.arrow.c.ArrowSchema.wrap(schema.address()), dp)) {
            assertEquals(expected, rowsOf(back));
        }
        assertEquals(0, allocator.getAllocatedMemory(), "the consumer's release dropped the last references");
    }

    @Test
    void releaseFromAThreadTheJvmDidNotCreateRunsOnce() {
        MethodHandle create = Native.libc("pthread_create", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        MethodHandle join = Native.libc("pthread_join", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        MemorySegment array = newArray();
        long before = ExportTestSupport.arrayReleases();
        try (VectorSchemaRoot root = intsAndStrings(10, 1)) {
            ArrowJava.exportRoot(root, null, array, null);
        }
        MemorySegment release = ArrowArray.release(array);
        MemorySegment thread = arena.allocate(ValueLayout.JAVA_LONG);
        try {
            // release(struct) has the shape of a pthread start routine: void* (*)(void*)
            assertEquals(0, (int) create.invokeExact(thread, MemorySegment.NULL, release, array));
            assertEquals(0, (int) join.invokeExact(thread.get(ValueLayout.JAVA_LONG, 0), MemorySegment.NULL));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        assertEquals(MemorySegment.NULL, ArrowArray.release(array));
        assertEquals(3, ExportTestSupport.arrayReleases() - before, "root and two children, once each");
    }

    @Test
    void consumerReleasesOnAnotherThreadWhileTheProducerKeepsExporting() throws Exception {
        int batches = 200;
        BlockingQueue<MemorySegment> queue = new ArrayBlockingQueue<>(batches);
        AtomicBoolean failed = new AtomicBoolean();
        long before = ExportTestSupport.arrayReleases();
        try (Arena shared = Arena.ofShared()) {
            Thread consumer = new Thread(() -> {
                try {
                    for (int i = 0; i < batches; i++) {
                        MemorySegment a = queue.take();
                        if (ArrowArray.length(a) != 8) {
                            failed.set(true);
                        }
                        Callbacks.invokeVoidPointer(ArrowArray.release(a), a);
                    }
                } catch (Throwable t) {
                    failed.set(true);
                }
            });
            consumer.start();
            try (VectorSchemaRoot root = intsAndStrings(8, 2)) {
                for (int i = 0; i < batches; i++) {
                    MemorySegment a = shared.allocate(ArrowArray.layout());
                    ArrowJava.exportRoot(root, null, a, null);
                    queue.put(a);
                }
            }
            consumer.join(30_000);
            assertFalse(consumer.isAlive());
        }
        assertFalse(failed.get());
        assertEquals(3L * batches, ExportTestSupport.arrayReleases() - before);
    }

    @Test
    void aChildMovedOutByTheConsumerOutlivesItsParentAndIsReleasedAlone() {
        MemorySegment array = newArray();
        try (VectorSchemaRoot root = intsAndStrings(6, 3)) {
            ArrowJava.exportRoot(root, null, array, null);
        }
        int live = ExportTestSupport.exportedArrays();
        MemorySegment child = ArrowArray.children(array).reinterpret(16).get(ValueLayout.ADDRESS, 8)
                .reinterpret(ArrowArray.sizeof());
        MemorySegment moved = newArray();
        moved.copyFrom(child);
        ArrowArray.release(child, MemorySegment.NULL); // the move: the original is marked released
        Callbacks.invokeVoidPointer(ArrowArray.release(array), array);
        assertEquals(live - 2, ExportTestSupport.exportedArrays(), "parent and the other child released; moved child lives");
        // the moved child's buffers and pointer arrays are still valid
        MemorySegment buffers = ArrowArray.buffers(moved).reinterpret(24);
        MemorySegment offsets = buffers.get(ValueLayout.ADDRESS, 8).reinterpret(7 * 4);
        MemorySegment data = buffers.get(ValueLayout.ADDRESS, 16).reinterpret(offsets.get(ValueLayout.JAVA_INT, 24));
        String first = new String(data.asSlice(0, offsets.get(ValueLayout.JAVA_INT, 4)).toArray(ValueLayout.JAVA_BYTE),
                StandardCharsets.UTF_8);
        assertEquals("v3-0", first);
        Callbacks.invokeVoidPointer(ArrowArray.release(moved), moved);
        assertEquals(live - 3, ExportTestSupport.exportedArrays());
        assertEquals(MemorySegment.NULL, ArrowArray.release(moved));
    }

    @Test
    void deviceArrayIsCpuWithDeviceIdMinusOneAndNoSyncEvent() {
        MemorySegment device = arena.allocate(ArrowDeviceArray.layout());
        device.fill((byte) 0x5A); // garbage that must be overwritten
        MemorySegment schema = newSchema();
        List<Object> expected;
        try (VectorSchemaRoot root = intsAndStrings(9, 4)) {
            expected = rowsOf(root);
            ArrowJava.exportDeviceArray(root, null, device);
            ArrowJava.exportSchema(root.getSchema(), null, schema);
        }
        assertEquals(1, ArrowDeviceArray.device_type(device), "ARROW_DEVICE_CPU");
        assertEquals(-1L, ArrowDeviceArray.device_id(device));
        assertEquals(MemorySegment.NULL, ArrowDeviceArray.sync_event(device));
        for (int i = 0; i < 3; i++) {
            assertEquals(0L, device.get(ValueLayout.JAVA_LONG, ArrowDeviceArray.reserved$offset() + 8L * i));
        }
        try (CDataDictionaryProvider dp = new CDataDictionaryProvider();
             VectorSchemaRoot back = Data.importVectorSchemaRoot(allocator,
                     org.apache.arrow.c.ArrowArray.wrap(device.address()), // the embedded array
                     org.apache.arrow.c.ArrowSchema.wrap(schema.address()), dp)) {
            assertEquals(expected, rowsOf(back));
        }
        assertEquals(MemorySegment.NULL, ArrowArray.release(ArrowDeviceArray.array(device)));
    }

    /** An ArrowReader over generated batches that may throw at a given batch. */
    static final class TestReader extends ArrowReader {
        final int batches;
        final int failAt;
        int next;
        boolean closed;

        TestReader(BufferAllocator allocator, int batches, int failAt) {
            super(allocator);
            this.batches = batches;
            this.failAt = failAt;
        }

        @Override
        public boolean loadNextBatch() throws IOException {
            if (next == failAt) {
                throw new IOException("disk on fire at batch " + next);
            }
            if (next == batches) {
                return false;
            }
            prepareLoadNextBatch();
            VectorSchemaRoot root = getVectorSchemaRoot();
            fill((IntVector) root.getVector(0), (VarCharVector) root.getVector(1), 3 + next, next);
            root.setRowCount(3 + next);
            next++;
            return true;
        }

        @Override
        public long bytesRead() {
            return 0;
        }

        @Override
        protected void closeReadSource() {
            closed = true;
        }

        @Override
        protected Schema readSchema() {
            return new Schema(List.of(Field.nullable("ints", new ArrowType.Int(32, true)),
                    Field.nullable("text", ArrowType.Utf8.INSTANCE)), Map.of("origin", "test"));
        }
    }

    @Test
    void streamOfAnArrowReaderReadsBackThroughArrowCData() throws Exception {
        MemorySegment stream = arena.allocate(ArrowArrayStream.layout());
        TestReader reader = new TestReader(allocator, 4, -1);
        ArrowJava.exportStream(reader, stream);
        int batches = 0;
        try (ArrowReader back = Data.importArrayStream(allocator,
                org.apache.arrow.c.ArrowArrayStream.wrap(stream.address()))) {
            assertEquals(reader.readSchema(), back.getVectorSchemaRoot().getSchema());
            while (back.loadNextBatch()) {
                VectorSchemaRoot r = back.getVectorSchemaRoot();
                assertEquals(3 + batches, r.getRowCount());
                assertEquals(batches * 1000 + 1, ((IntVector) r.getVector(0)).get(1));
                assertEquals("v" + batches + "-2", r.getVector(1).getObject(2).toString());
                batches++;
            }
        }
        assertEquals(4, batches);
        assertTrue(reader.closed, "releasing the stream closed the reader");
    }

    @Test
    void readerExceptionBecomesGetNextErrnoAndGetLastErrorMessage() {
        MemorySegment stream = arena.allocate(ArrowArrayStream.layout());
        TestReader reader = new TestReader(allocator, 4, 1);
        ArrowJava.exportStream(reader, stream);
        MemorySegment out = newArray();
        MemorySegment schema = newSchema();
        assertEquals(0, ArrowArrayStream.get_schema.invoke(ArrowArrayStream.get_schema(stream), stream, schema));
        assertEquals("+s", Native.string(ArrowSchema.format(schema)));
        Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
        assertEquals(0, ArrowArrayStream.get_next.invoke(ArrowArrayStream.get_next(stream), stream, out));
        assertEquals(3, ArrowArray.length(out));
        Callbacks.invokeVoidPointer(ArrowArray.release(out), out);
        int rc = ArrowArrayStream.get_next.invoke(ArrowArrayStream.get_next(stream), stream, out);
        assertEquals(Errno.EIO, rc, "an IOException from the reader is EIO");
        String message = Native.string(ArrowArrayStream.get_last_error.invoke(ArrowArrayStream.get_last_error(stream), stream));
        assertTrue(message.contains("disk on fire at batch 1"), message);
        assertEquals(Errno.EIO, ArrowArrayStream.get_next.invoke(ArrowArrayStream.get_next(stream), stream, out),
                "the error is sticky");
        Callbacks.invokeVoidPointer(ArrowArrayStream.release(stream), stream);
        assertEquals(MemorySegment.NULL, ArrowArrayStream.release(stream));
        assertTrue(reader.closed);
    }

    @Test
    void readerExceptionReachesArrowCDataAsAnIOExceptionWithTheMessage() throws Exception {
        MemorySegment stream = arena.allocate(ArrowArrayStream.layout());
        TestReader reader = new TestReader(allocator, 4, 2);
        ArrowJava.exportStream(reader, stream);
        try (ArrowReader back = Data.importArrayStream(allocator,
                org.apache.arrow.c.ArrowArrayStream.wrap(stream.address()))) {
            assertTrue(back.loadNextBatch());
            assertTrue(back.loadNextBatch());
            IOException e = assertThrows(IOException.class, back::loadNextBatch);
            assertTrue(e.getMessage().contains("disk on fire at batch 2"), e.getMessage());
        }
        assertTrue(reader.closed);
    }

    @Test
    void deviceStreamIsCpuAndYieldsCpuDeviceArraysThenTheEnd() {
        MemorySegment stream = arena.allocate(ArrowDeviceArrayStream.layout());
        TestReader reader = new TestReader(allocator, 2, -1);
        ArrowJava.exportDeviceStream(reader, stream);
        assertEquals(1, ArrowDeviceArrayStream.device_type(stream));
        MemorySegment schema = newSchema();
        assertEquals(0, ArrowDeviceArrayStream.get_schema.invoke(ArrowDeviceArrayStream.get_schema(stream), stream, schema));
        MemorySegment device = arena.allocate(ArrowDeviceArray.layout());
        try (CDataDictionaryProvider dp = new CDataDictionaryProvider();
             VectorSchemaRoot target = Data.importVectorSchemaRoot(allocator,
                     org.apache.arrow.c.ArrowSchema.wrap(schema.address()), dp)) {
            for (int b = 0; b < 2; b++) {
                assertEquals(0, ArrowDeviceArrayStream.get_next.invoke(ArrowDeviceArrayStream.get_next(stream), stream, device));
                assertEquals(1, ArrowDeviceArray.device_type(device));
                assertEquals(-1L, ArrowDeviceArray.device_id(device));
                Data.importIntoVectorSchemaRoot(allocator, org.apache.arrow.c.ArrowArray.wrap(device.address()), target, dp);
                assertEquals(3 + b, target.getRowCount());
                assertEquals(b * 1000 + 2, ((IntVector) target.getVector(0)).get(2));
            }
        }
        assertEquals(0, ArrowDeviceArrayStream.get_next.invoke(ArrowDeviceArrayStream.get_next(stream), stream, device));
        assertEquals(MemorySegment.NULL, ArrowArray.release(ArrowDeviceArray.array(device)), "end of stream");
        Callbacks.invokeVoidPointer(ArrowDeviceArrayStream.release(stream), stream);
        assertTrue(reader.closed);
    }

    @Test
    void iteratorStreamExportsEachRootOnDemand() throws Exception {
        MemorySegment stream = arena.allocate(ArrowArrayStream.layout());
        try (VectorSchemaRoot a = intsAndStrings(2, 1); VectorSchemaRoot b = intsAndStrings(4, 2)) {
            ArrowJava.exportStream(a.getSchema(), List.of(a, b).iterator(), null, stream);
            try (ArrowReader back = Data.importArrayStream(allocator,
                    org.apache.arrow.c.ArrowArrayStream.wrap(stream.address()))) {
                assertTrue(back.loadNextBatch());
                assertEquals(rowsOf(a), rowsOf(back.getVectorSchemaRoot()));
                assertTrue(back.loadNextBatch());
                assertEquals(rowsOf(b), rowsOf(back.getVectorSchemaRoot()));
                assertFalse(back.loadNextBatch());
            }
        }
    }

    @Test
    void libraryAllocatedArrayClosedWithoutAConsumerReleasesTheExport() {
        long before = ExportTestSupport.arrayReleases();
        ExportedStruct handle;
        try (VectorSchemaRoot root = intsAndStrings(3, 5)) {
            handle = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
        }
        assertNotEquals(0L, handle.address());
        assertEquals(3, ArrowArray.length(handle.segment()));
        handle.close();
        handle.close(); // idempotent
        assertEquals(3, ExportTestSupport.arrayReleases() - before);
        assertThrows(org.devicebridge.HandleClosedException.class, handle::segment);
    }

    @Test
    void libraryAllocatedStructsMovedByArrowCDataAreReleasedByItAndClosedByUs() {
        List<Object> expected;
        try (VectorSchemaRoot root = intsAndStrings(12, 6);
             ExportedStruct array = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
             ExportedStruct schema = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), null, out))) {
            expected = rowsOf(root);
            long before = ExportTestSupport.arrayReleases();
            try (CDataDictionaryProvider dp = new CDataDictionaryProvider();
                 VectorSchemaRoot back = Data.importVectorSchemaRoot(allocator,
                         org.apache.arrow.c.ArrowArray.wrap(array.address()),
                         org.apache.arrow.c.ArrowSchema.wrap(schema.address()), dp)) {
                assertEquals(expected, rowsOf(back));
            }
            assertEquals(3, ExportTestSupport.arrayReleases() - before, "released by the consumer");
            assertEquals(MemorySegment.NULL, ArrowArray.release(array.segment()));
        } // closing the handles frees only the struct memory: nothing is released twice (checked in tearDown)
    }

    @Test
    void libraryAllocatedStreamClosedUnusedClosesTheReader() {
        TestReader reader = new TestReader(allocator, 1, -1);
        try (ExportedStruct s = ExportedStruct.allocateStream(out -> ArrowJava.exportStream(reader, out))) {
            assertFalse(reader.closed);
            assertFalse(s.isDevice());
            assertEquals(ArrowArrayStream.sizeof(), s.segment().byteSize());
        }
        assertTrue(reader.closed);
        TestReader reader2 = new TestReader(allocator, 1, -1);
        try (ExportedStruct s = ExportedStruct.allocateDeviceStream(out -> ArrowJava.exportDeviceStream(reader2, out))) {
            assertTrue(s.isDevice());
            assertEquals(ArrowDeviceArrayStream.sizeof(), s.segment().byteSize());
            assertEquals(1, ArrowDeviceArrayStream.device_type(s.segment()));
        }
        assertTrue(reader2.closed);
        try (VectorSchemaRoot root = intsAndStrings(2, 1);
             ExportedStruct d = ExportedStruct.allocateDeviceArray(out -> ArrowJava.exportDeviceArray(root, null, out));
             ExportedStruct a = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null))) {
            assertTrue(d.isDevice());
            assertEquals(ArrowDeviceArray.sizeof(), d.segment().byteSize());
            assertEquals(-1L, ArrowDeviceArray.device_id(d.segment()));
            assertFalse(a.isDevice());
            assertEquals(ArrowArray.sizeof(), a.segment().byteSize());
        }
    }

    @Test
    void aVectorWhoseLengthDisagreesWithTheRowCountIsRejectedAndNothingIsHeld() {
        MemorySegment array = newArray();
        try (VectorSchemaRoot root = intsAndStrings(5, 1)) {
            root.getVector(1).setValueCount(4);
            int live = ExportTree.liveNodes();
            long memory = allocator.getAllocatedMemory();
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrowJava.exportRoot(root, null, array, null));
            assertEquals(ValidationException.Category.LENGTH, e.category());
            assertEquals("children[1]", e.path());
            assertEquals(live, ExportTree.liveNodes());
            assertEquals(memory, allocator.getAllocatedMemory());
            assertEquals(0L, ArrowArray.release(array).address(), "the output is untouched");
        }
    }

    @Test
    void aDictionaryEncodedVectorWithoutItsProviderIsRejected() {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        try (FieldVector v = ExportTestSupport.dictionaryEncoded(allocator, 3, false, dictionaries)) {
            ValidationException e = assertThrows(ValidationException.class,
                    () -> ArrowJava.exportVector(v, null, newArray(), newSchema()));
            assertEquals(ValidationException.Category.SCHEMA, e.category());
            assertEquals(ExportTestSupport.Baseline.class, baseline.getClass());
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    @Test
    void outputStructsThatAreTooSmallOrOnTheHeapAreRejected() {
        try (VectorSchemaRoot root = intsAndStrings(1, 1)) {
            ValidationException small = assertThrows(ValidationException.class,
                    () -> ArrowJava.exportRoot(root, null, arena.allocate(40), null));
            assertEquals(ValidationException.Category.SIZE, small.category());
            assertEquals("outArray: expected at least 80 bytes but found 40", small.getMessage());
            assertThrows(ValidationException.class,
                    () -> ArrowJava.exportRoot(root, null, MemorySegment.ofArray(new byte[80]), null));
            assertThrows(ValidationException.class, () -> ArrowJava.exportRoot(root, null, MemorySegment.NULL, null));
        }
    }

    @Test
    void nullCountAndValidityAreExactAndEmptyBuffersAreNeverNull() {
        MemorySegment array = newArray();
        try (IntVector v = new IntVector("v", allocator)) {
            v.allocateNew(4);
            v.set(0, 1);
            v.setNull(1);
            v.set(2, 3);
            v.setValueCount(3);
            ArrowJava.exportVector(v, null, array, null);
            assertEquals(1, ArrowArray.null_count(array));
            MemorySegment buffers = ArrowArray.buffers(array).reinterpret(16);
            assertEquals(v.getValidityBuffer().memoryAddress(), buffers.get(ValueLayout.JAVA_LONG, 0), "zero-copy");
            assertEquals(v.getDataBuffer().memoryAddress(), buffers.get(ValueLayout.JAVA_LONG, 8), "zero-copy");
            Callbacks.invokeVoidPointer(ArrowArray.release(array), array);
        }
        try (VarCharVector empty = new VarCharVector("e", allocator)) {
            empty.setValueCount(0);
            ArrowJava.exportVector(empty, null, array, null);
            MemorySegment buffers = ArrowArray.buffers(array).reinterpret(24);
            assertEquals(0L, buffers.get(ValueLayout.JAVA_LONG, 0), "no validity needed without values");
            assertNotEquals(0L, buffers.get(ValueLayout.JAVA_LONG, 8), "offsets: one zero, never NULL");
            assertEquals(0, buffers.get(ValueLayout.ADDRESS, 8).reinterpret(4).get(ValueLayout.JAVA_INT, 0));
            assertNotEquals(0L, buffers.get(ValueLayout.JAVA_LONG, 16));
            Callbacks.invokeVoidPointer(ArrowArray.release(array), array);
        }
    }

    @Test
    void dictionaryOrderedAndNullableFlagsAndMetadataReachTheStruct() {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        MemorySegment schema = newSchema();
        try (FieldVector v = ExportTestSupport.dictionaryEncoded(allocator, 3, false, dictionaries)) {
            Field f = new Field("enc", new FieldType(false, v.getField().getType(), v.getField().getDictionary(),
                    Map.of("k", "vé")), null);
            ArrowJava.exportField(f, dictionaries, schema);
            assertEquals("i", Native.string(ArrowSchema.format(schema)));
            assertEquals(SchemaNode.FLAG_DICTIONARY_ORDERED, ArrowSchema.flags(schema));
            MemorySegment dict = ArrowSchema.dictionary(schema).reinterpret(ArrowSchema.sizeof());
            assertEquals("u", Native.string(ArrowSchema.format(dict)));
            byte[] key = "k".getBytes(StandardCharsets.UTF_8);
            byte[] value = "vé".getBytes(StandardCharsets.UTF_8);
            MemorySegment md = ArrowSchema.metadata(schema).reinterpret(4 + 4 + key.length + 4 + value.length);
            assertEquals(1, md.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            assertEquals(key.length, md.get(ValueLayout.JAVA_INT_UNALIGNED, 4));
            assertEquals(value.length, md.get(ValueLayout.JAVA_INT_UNALIGNED, 8 + key.length));
            assertEquals("vé", new String(md.asSlice(12 + key.length, value.length).toArray(ValueLayout.JAVA_BYTE),
                    StandardCharsets.UTF_8));
            Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    @Test
    void formatStringsAtTheCLevelIncludingTypesArrowCDataReadsInexactly() {
        // arrow-c-data 19 reads decimal32/64 as 128-bit, so these are checked on the struct itself.
        Object[][] cases = {
            {new ArrowType.Decimal(9, 2, 32), "d:9,2,32"},
            {new ArrowType.Decimal(18, 3, 64), "d:18,3,64"},
            {new ArrowType.Decimal(38, 5, 128), "d:38,5"},
            {new ArrowType.Decimal(70, 1, 256), "d:70,1,256"},
            {new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, "Europe/Paris"), "tsu:Europe/Paris"},
            {new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.SECOND, null), "tss:"},
            {new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.HALF), "e"},
            {new ArrowType.Interval(org.apache.arrow.vector.types.IntervalUnit.MONTH_DAY_NANO), "tin"},
            {new ArrowType.Int(16, false), "S"},
            {ArrowType.Utf8View.INSTANCE, "vu"},
            {ArrowType.BinaryView.INSTANCE, "vz"},
        };
        for (Object[] c : cases) {
            MemorySegment schema = newSchema();
            ArrowJava.exportField(Field.nullable("x", (ArrowType) c[0]), null, schema);
            assertEquals(c[1], Native.string(ArrowSchema.format(schema)), c[0].toString());
            assertEquals(SchemaNode.FLAG_NULLABLE, ArrowSchema.flags(schema));
            assertEquals(MemorySegment.NULL, ArrowSchema.metadata(schema), "no metadata is NULL, not empty");
            Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
        }
        MemorySegment schema = newSchema();
        Field map = new Field("m", FieldType.notNullable(new ArrowType.Map(true)), List.of(new Field("entries",
                FieldType.notNullable(ArrowType.Struct.INSTANCE), List.of(
                        Field.notNullable("key", ArrowType.Utf8.INSTANCE), Field.nullable("value", ArrowType.Utf8.INSTANCE)))));
        ArrowJava.exportField(map, null, schema);
        assertEquals("+m", Native.string(ArrowSchema.format(schema)));
        assertEquals(SchemaNode.FLAG_MAP_KEYS_SORTED, ArrowSchema.flags(schema));
        Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
        Field union = new Field("u", FieldType.nullable(new ArrowType.Union(org.apache.arrow.vector.types.UnionMode.Sparse,
                new int[] {4, 5})), List.of(Field.nullable("a", new ArrowType.Int(32, true)),
                Field.nullable("b", new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE))));
        ArrowJava.exportField(union, null, schema);
        assertEquals("+us:4,5", Native.string(ArrowSchema.format(schema)));
        assertNull(null);
        Callbacks.invokeVoidPointer(ArrowSchema.release(schema), schema);
    }

    @Test
    void encodedDictionaryWithAMismatchedIndexTypeIsRejected() {
        DictionaryEncoding enc = new DictionaryEncoding(1L, false, new ArrowType.Int(16, true));
        Field f = new Field("bad", new FieldType(true, new ArrowType.Int(32, true), enc), null);
        ValidationException e = assertThrows(ValidationException.class,
                () -> ArrowJava.exportField(f, new DictionaryProvider.MapDictionaryProvider(), newSchema()));
        assertEquals(ValidationException.Category.SCHEMA, e.category());
    }

    @Test
    void streamOfAnIpcReaderCarriesDictionaryEncodedColumns() throws Exception {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        List<List<Object>> written = new ArrayList<>();
        try (FieldVector encoded = ExportTestSupport.dictionaryEncoded(allocator, 6, true, dictionaries);
             VectorSchemaRoot root = new VectorSchemaRoot(List.of(encoded))) {
            root.setRowCount(6);
            try (org.apache.arrow.vector.ipc.ArrowStreamWriter w = new org.apache.arrow.vector.ipc.ArrowStreamWriter(
                    root, dictionaries, bytes)) {
                w.start();
                w.writeBatch();
                written.add(rowsOf(root));
                w.writeBatch();
                written.add(rowsOf(root));
                w.end();
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
        MemorySegment stream = arena.allocate(ArrowArrayStream.layout());
        ArrowJava.exportStream(new org.apache.arrow.vector.ipc.ArrowStreamReader(
                new java.io.ByteArrayInputStream(bytes.toByteArray()), allocator), stream);
        try (ArrowReader back = Data.importArrayStream(allocator,
                org.apache.arrow.c.ArrowArrayStream.wrap(stream.address()))) {
            Field f = back.getVectorSchemaRoot().getSchema().getFields().get(0);
            assertTrue(f.getDictionary() != null && f.getDictionary().isOrdered(), "dictionary encoding travelled");
            for (List<Object> expected : written) {
                assertTrue(back.loadNextBatch());
                assertEquals(expected, rowsOf(back.getVectorSchemaRoot()));
                FieldVector dict = back.lookup(f.getDictionary().getId()).getVector();
                assertEquals("word2", dict.getObject(2).toString());
            }
            assertFalse(back.loadNextBatch());
        }
    }
}
