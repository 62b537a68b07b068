package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.extension.UuidType;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.foreign.CudaStructs;
import org.devicebridge.foreign.StreamExport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.Callbacks;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Arrow data on a GPU: every type family x (nulls, none) x (empty, 37 rows) goes upload -> CUDA export ->
 * import (MINIMAL and FULL) -> download with values compared; sliced tables; wrong device ids and host
 * memory labelled CUDA are rejected with {@link ValidationException.Category#DEVICE} after exactly one
 * release; exports released concurrently; IPC through device batches; device memory, exports, handles and
 * Arrow memory all back to their baselines after each test.
 */
@RequiresCuda
public class CudaArrowRoundTripTest {
    private static final int DEVICE = 0;

    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private int treesBefore;
    private int downloadsBefore;
    private long deviceBytesBefore;
    private CudaStream stream;
    private HostDeviceTransfer transfer;

    @BeforeAll
    static void registerExtension() {
        ExtensionTypeRegistry.register(UuidType.INSTANCE);
    }

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        treesBefore = CudaStructs.TREES.size();
        downloadsBefore = DownloadedBuffers.LIVE.get();
        stream = CudaStream.create(Device.cuda(DEVICE));
        transfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
    }

    @AfterEach
    void tearDown() {
        transfer.close();
        stream.synchronize();
        stream.close();
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
        assertEquals(treesBefore, CudaStructs.TREES.size(), "every CUDA export released");
        assertEquals(downloadsBefore, DownloadedBuffers.LIVE.get(), "every downloaded host copy freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String family : ExportTestSupport.FAMILIES) {
            for (boolean nulls : new boolean[] {false, true}) {
                for (int rows : new int[] {0, 37}) {
                    for (ValidationLevel level : new ValidationLevel[] {ValidationLevel.MINIMAL, ValidationLevel.FULL}) {
                        out.add(Arguments.of(family, nulls, rows, level));
                    }
                }
            }
        }
        return out.stream();
    }

    private static SchemaNode schemaOf(VectorSchemaRoot root, DictionaryProvider provider) {
        try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), provider, out));
             ImportedSchema is = ArrowC.importSchema(es.segment())) {
            return is.root();
        }
    }

    @ParameterizedTest(name = "{0} nulls={1} rows={2} import at {3}: values survive upload, export, import, download")
    @MethodSource("cases")
    void everyFamilyRoundTripsThroughTheDevice(String family, boolean nulls, int rows, ValidationLevel level) {
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, allocator, rows, nulls, dictionaries);
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
            root.setRowCount(rows);
            roundTrip(root, dictionaries, level, family);
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
        }
    }

    @Test
    void slicedTablesRoundTripWithTheirOwnValues() {
        for (String family : List.of("integers", "bool", "strings", "views", "lists", "struct", "nested")) {
            DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
            List<FieldVector> vectors = ExportTestSupport.family(family, allocator, 37, true, dictionaries);
            try (VectorSchemaRoot root = new VectorSchemaRoot(vectors)) {
                root.setRowCount(37);
                try (VectorSchemaRoot slice = root.slice(5, 19)) {
                    roundTrip(slice, dictionaries, ValidationLevel.FULL, family);
                }
            } finally {
                ExportTestSupport.closeDictionaries(dictionaries);
            }
        }
    }

    private void roundTrip(VectorSchemaRoot root, DictionaryProvider.MapDictionaryProvider dictionaries,
                           ValidationLevel level, String family) {
        SchemaNode schema = schemaOf(root, dictionaries);
        try (CudaArrowBatch batch = CudaArrow.upload(root, dictionaries, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            assertEquals(root.getRowCount(), batch.length());
            assertEquals(Device.cuda(DEVICE), batch.device());
            assertSameNullCounts(root, dictionaries, batch);
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            int trees = CudaStructs.TREES.size();
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
            assertEquals(trees + 1, CudaStructs.TREES.size());
            assertEquals(DeviceKind.CUDA.code(), ArrowDeviceArray.device_type(out));
            assertEquals(DEVICE, ArrowDeviceArray.device_id(out));
            MemorySegment sync = ArrowDeviceArray.sync_event(out);
            assertNotEquals(MemorySegment.NULL, sync);
            assertNotEquals(0L, sync.reinterpret(8).get(ValueLayout.JAVA_LONG, 0), "sync_event points to a CUevent");
            DictionaryProvider.MapDictionaryProvider back = new DictionaryProvider.MapDictionaryProvider();
            // a second stream as the consumer: it must wait on the producer's event
            try (CudaStream consumer = CudaStream.create(Device.cuda(DEVICE));
                 HostDeviceTransfer consumerTransfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20)) {
                try (CudaArrowBatch imported = CudaArrow.importDeviceArray(schema, out, level,
                        DeviceCopies.of(consumerTransfer, consumer))) {
                    assertEquals(0L, ArrowArray.release(out).address(), "moved: the producer's struct is released");
                    try (VectorSchemaRoot down = CudaArrow.download(imported, back,
                            new DeviceCopies(allocator, consumerTransfer, consumer))) {
                        assertSameValues(root, down, dictionaries, back, family);
                    }
                }
                consumer.synchronize();
            } finally {
                ExportTestSupport.closeDictionaries(back);
            }
            assertEquals(trees, CudaStructs.TREES.size(), "the export was released once the import closed");
        }
    }

    /**
     * The upload counts the nulls its export left unknown while the copies run: every node of the device view
     * has the null count a counting export of the root writes, none is left -1.
     */
    static void assertSameNullCounts(VectorSchemaRoot root, DictionaryProvider provider, CudaArrowBatch batch) {
        try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, provider, out, null));
             ImportedArray host = ArrowC.importArray(batch.schema(), ea.segment(), ValidationLevel.FULL)) {
            List<ArrayNode> want = Nodes.collect(host.root());
            List<ArrayNode> got = Nodes.collect(batch.root());
            assertEquals(want.size(), got.size());
            for (int i = 0; i < want.size(); i++) {
                assertEquals(want.get(i).nullCount(), got.get(i).nullCount(), want.get(i).path());
                assertTrue(got.get(i).nullCount() >= 0, got.get(i).path());
            }
        }
    }

    private static void assertSameValues(VectorSchemaRoot want, VectorSchemaRoot got,
                                         DictionaryProvider.MapDictionaryProvider wantDictionaries,
                                         DictionaryProvider.MapDictionaryProvider gotDictionaries, String family) {
        assertEquals(want.getRowCount(), got.getRowCount());
        assertEquals(want.getFieldVectors().size(), got.getFieldVectors().size());
        for (int i = 0; i < want.getFieldVectors().size(); i++) {
            FieldVector o = want.getVector(i);
            FieldVector c = got.getVector(i);
            assertSameFieldOrStorage(o.getField(), c.getField());
            if (o.getField().getDictionary() == null && !family.equals("denseUnion")
                    && o.getField().getType().equals(c.getField().getType())) {
                assertTrue(VectorEqualsVisitor.vectorEquals(o, c), () -> "values differ for " + o.getField());
            }
            if (o.getField().getDictionary() != null) {
                Dictionary w = wantDictionaries.lookup(o.getField().getDictionary().getId());
                Dictionary g = gotDictionaries.lookup(c.getField().getDictionary().getId());
                assertNotNull(g, "the dictionary travelled with the array");
                assertTrue(VectorEqualsVisitor.vectorEquals(w.getVector(), g.getVector()), "dictionary values differ");
            }
            for (int r = 0; r < want.getRowCount(); r++) {
                final int row = r;
                assertTrue(Objects.deepEquals(valueOf(o, r), valueOf(c, r)), () -> o.getName() + "[" + row + "]");
            }
        }
    }

    /**
     * {@link ExportTestSupport#assertSameField}, except that an extension type may come back as its
     * storage type with the extension metadata: {@link ArrowJava} (not this code) does not rebuild
     * registered extension types.
     */
    public static void assertSameFieldOrStorage(org.apache.arrow.vector.types.pojo.Field want,
                                         org.apache.arrow.vector.types.pojo.Field got) {
        if (want.getType() instanceof org.apache.arrow.vector.types.pojo.ArrowType.ExtensionType ext
                && !(got.getType() instanceof org.apache.arrow.vector.types.pojo.ArrowType.ExtensionType)) {
            assertEquals(want.getName(), got.getName());
            assertEquals(ext.storageType(), got.getType(), "the storage type");
            assertEquals(ext.extensionName(), got.getMetadata().get("ARROW:extension:name"), "the extension name");
            return;
        }
        ExportTestSupport.assertSameField(want, got);
    }

    /** A row's value; an extension vector's as its storage value (see {@link #assertSameFieldOrStorage}). */
    public static Object valueOf(FieldVector v, int row) {
        return v instanceof org.apache.arrow.vector.ExtensionTypeVector<?> ext
                ? ext.getUnderlyingVector().getObject(row) : v.getObject(row);
    }

    @Test
    void batchesOfOneSchemaObjectWithOtherSchemasBetweenThemKeepTheirValues() {
        // upload without dictionaries keeps the last schema's import per thread: a cache hit must be the same schema
        Schema numbers = new Schema(List.of(Field.nullable("a", new ArrowType.Int(64, true)),
                Field.nullable("b", ArrowType.Utf8.INSTANCE)));
        Schema other = new Schema(List.of(Field.nullable("a", ArrowType.Utf8.INSTANCE),
                Field.nullable("b", new ArrowType.Int(32, true))));
        DictionaryProvider.MapDictionaryProvider none = new DictionaryProvider.MapDictionaryProvider();
        for (int round = 0; round < 3; round++) {
            for (Schema schema : List.of(numbers, numbers, other)) {
                try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
                    root.allocateNew();
                    for (int r = 0; r < 5 + round; r++) {
                        for (FieldVector v : root.getFieldVectors()) {
                            if (r % 3 == 1) {
                                v.setNull(r);
                            } else if (v instanceof BigIntVector n) {
                                n.setSafe(r, 1000L * round + r);
                            } else if (v instanceof IntVector n) {
                                n.setSafe(r, -r - round);
                            } else {
                                ((VarCharVector) v).setSafe(r, ("v" + round + "/" + r).getBytes(StandardCharsets.UTF_8));
                            }
                        }
                    }
                    root.setRowCount(5 + round);
                    try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
                         VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(allocator, transfer, stream))) {
                        assertEquals(schema, down.getSchema());
                        assertSameValues(root, down, none, none, "cached schema");
                    }
                }
            }
        }
    }

    private VectorSchemaRoot strings(int rows) {
        List<FieldVector> vectors = ExportTestSupport.family("strings", allocator, rows, true,
                new DictionaryProvider.MapDictionaryProvider());
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }

    @Test
    void wrongDeviceIdIsRejectedAsDeviceAfterExactlyOneRelease() {
        try (VectorSchemaRoot root = strings(20);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            for (long wrongId : new long[] {-1, 1000}) {
                MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
                int trees = CudaStructs.TREES.size();
                CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
                ArrowDeviceArray.device_id(out, wrongId);
                ValidationException e = assertThrows(ValidationException.class,
                        () -> CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.MINIMAL, DeviceCopies.of(stream)));
                assertEquals(ValidationException.Category.DEVICE, e.category(), e.getMessage());
                assertTrue(e.getMessage().contains("device_id"), e.getMessage());
                assertEquals(0L, ArrowArray.release(out).address(), "released");
                assertEquals(trees, CudaStructs.TREES.size(), "the export was released exactly once");
            }
        }
    }

    @Test
    void hostMemoryLabelledCudaIsRejectedAsDeviceAfterExactlyOneRelease() {
        try (VectorSchemaRoot root = strings(20); Arena arena = Arena.ofConfined()) {
            SchemaNode schema = schemaOf(root, null);
            MemorySegment in = arena.allocate(ArrowDeviceArray.layout());
            int nodesBefore = ExportTestSupport.exportedArrays();
            long releasesBefore = ExportTestSupport.arrayReleases();
            ArrowJava.exportDeviceArray(root, null, in); // CPU buffers ...
            int nodes = ExportTestSupport.exportedArrays() - nodesBefore;
            ArrowDeviceArray.device_type(in, DeviceKind.CUDA.code()); // ... labelled CUDA
            ArrowDeviceArray.device_id(in, (long) DEVICE);
            ValidationException e = assertThrows(ValidationException.class,
                    () -> CudaArrow.importDeviceArray(schema, in, ValidationLevel.MINIMAL, DeviceCopies.of(stream)));
            assertEquals(ValidationException.Category.DEVICE, e.category(), e.getMessage());
            assertTrue(e.path().contains("buffers["), e.getMessage());
            assertEquals(nodes, ExportTestSupport.arrayReleases() - releasesBefore, "every node released exactly once");
        }
    }

    @Test
    void exportsReleasedConcurrentlyFromTwoThreadsFreeTheDeviceMemoryOnce() throws Exception {
        for (int round = 0; round < 20; round++) {
            try (VectorSchemaRoot root = strings(50); Arena arena = Arena.ofShared()) {
                MemorySegment a = arena.allocate(ArrowDeviceArray.layout());
                MemorySegment b = arena.allocate(ArrowDeviceArray.layout());
                int trees = CudaStructs.TREES.size();
                try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream))) {
                    CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), a);
                    CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), b);
                }
                assertEquals(trees + 2, CudaStructs.TREES.size(), "the exports outlive the closed batch");
                stream.synchronize();
                CountDownLatch start = new CountDownLatch(1);
                List<Thread> threads = new ArrayList<>();
                for (MemorySegment s : List.of(a, b)) {
                    Thread t = new Thread(() -> {
                        try {
                            start.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            return;
                        }
                        Callbacks.invokeVoidPointer(ArrowArray.release(s), s);
                    });
                    t.start();
                    threads.add(t);
                }
                start.countDown();
                for (Thread t : threads) {
                    t.join();
                }
                assertEquals(trees, CudaStructs.TREES.size(), "round " + round + ": both exports released once");
                assertEquals(0L, ArrowArray.release(a).address());
                assertEquals(0L, ArrowArray.release(b).address());
            }
        }
        // tearDown checks the device memory came back
    }

    @Test
    void cudaDeviceStreamCarriesEveryBatchBothWays() {
        try (VectorSchemaRoot root = strings(25); Arena arena = Arena.ofConfined()) {
            List<CudaArrowBatch> batches = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                batches.add(CudaArrow.upload(root, DeviceCopies.of(transfer, stream)));
            }
            int streamsBefore = StreamExport.liveStreams();
            MemorySegment out = arena.allocate(org.devicebridge.generated.arrow.ArrowDeviceArrayStream.layout());
            CudaArrow.exportDeviceStream(root.getSchema(), batches.iterator(), DeviceCopies.of(stream), out);
            assertEquals(DeviceKind.CUDA.code(), org.devicebridge.generated.arrow.ArrowDeviceArrayStream.device_type(out));
            int count = 0;
            try (CudaStream consumer = CudaStream.create(Device.cuda(DEVICE));
                 HostDeviceTransfer consumerTransfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
                 ImportedArrayStream in = ArrowC.importDeviceStream(out)) {
                assertEquals(DeviceKind.CUDA, in.deviceType());
                CudaArrowBatch b;
                while ((b = CudaArrow.importNext(in, ValidationLevel.DEFAULT,
                        DeviceCopies.of(consumerTransfer, consumer))) != null) {
                    try (CudaArrowBatch batch = b;
                         VectorSchemaRoot down = CudaArrow.download(batch,
                                 new DeviceCopies(allocator, consumerTransfer, consumer))) {
                        assertSameValues(root, down, null, null, "strings");
                        count++;
                    }
                }
                consumer.synchronize();
            }
            assertEquals(3, count, "every batch arrived once");
            assertEquals(streamsBefore, StreamExport.liveStreams(), "the stream was released");
            for (CudaArrowBatch b : batches) {
                assertEquals(org.devicebridge.NativeHandle.State.RELEASED, b.state(), "the stream closed each batch it sent");
            }
        }
    }

    @Test
    void corruptOffsetsOnTheDeviceAreCaughtByHostValidationButNotReadAtMinimal() {
        try (org.apache.arrow.vector.VarCharVector v = new org.apache.arrow.vector.VarCharVector("s", allocator)) {
            for (int i = 0; i < 10; i++) {
                v.setSafe(i, ("value" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            v.setValueCount(10);
            try (VectorSchemaRoot root = VectorSchemaRoot.of(v);
                 CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
                 Arena arena = Arena.ofConfined()) {
                stream.synchronize(); // the synchronous copy below runs on the legacy stream
                ArrayNode col = batch.root().children().get(0);
                org.devicebridge.cuda.DeviceBuffer mem = batch.memory().get(0);
                MemorySegment bad = arena.allocate(ValueLayout.JAVA_INT);
                bad.set(ValueLayout.JAVA_INT, 0, 1000); // offsets[0] above the last offset: caught at DEFAULT and FULL
                org.devicebridge.cuda.CudaCopies.hostToDevice(bad, mem, col.bufferPointer(1).address() - mem.address());
                int trees = CudaStructs.TREES.size();

                MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
                CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
                ValidationException e = assertThrows(ValidationException.class,
                        () -> CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.DEFAULT,
                                DeviceCopies.of(transfer, stream)));
                assertEquals(ValidationException.Category.CONTENT, e.category(), e.getMessage());
                assertTrue(e.path().startsWith("children[0].buffers[1]"), e.getMessage());
                assertEquals(trees, CudaStructs.TREES.size(), "released exactly once");

                MemorySegment out2 = arena.allocate(ArrowDeviceArray.layout());
                CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out2);
                try (CudaArrowBatch minimal = CudaArrow.importDeviceArray(batch.schema(), out2, ValidationLevel.MINIMAL,
                        DeviceCopies.of(stream))) {
                    assertEquals(10, minimal.length(), "MINIMAL does not read device memory");
                    assertThrows(ValidationException.class,
                            () -> CudaArrow.download(minimal, new DeviceCopies(allocator, transfer, stream)).close(),
                            "the host copy is validated before Arrow Java sees it");
                }
                assertEquals(trees, CudaStructs.TREES.size(), "released exactly once");
            }
        }
    }

    @Test
    void uploadUsesOneDeviceAllocationPerBatch() {
        try (VectorSchemaRoot root = strings(100)) {
            long before = CudaCounters.snapshot().memAllocAsyncCalls();
            try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream))) {
                assertEquals(before + 1, CudaCounters.snapshot().memAllocAsyncCalls());
                assertEquals(1, batch.memory().size());
                ArrayNode col = batch.root().children().get(0);
                for (int i = 0; i < col.bufferCount(); i++) {
                    if (!col.isBufferNull(i)) {
                        assertEquals(0, col.bufferPointer(i).address() % HostDeviceTransfer.ALIGNMENT, "64-byte aligned");
                    }
                }
            }
        }
    }
}
