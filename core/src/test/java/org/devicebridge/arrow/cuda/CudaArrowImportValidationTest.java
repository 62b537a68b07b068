package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.foreign.CudaStructs;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * CUDA imports validated from the imported struct itself with host copies of what each level reads (no
 * second struct): buffers spread over several allocations, sizes that DEFAULT derives checked against the
 * allocations, batches of a device stream at every level, downloads of batches imported at MINIMAL (read
 * again at DEFAULT), and arguments refused with the struct released once.
 */
@RequiresCuda
class CudaArrowImportValidationTest {
    private static final int DEVICE = 0;

    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private int treesBefore;
    private int downloadsBefore;
    private long deviceBytesBefore;
    private CudaStream stream;
    private HostDeviceTransfer transfer;

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

    private VectorSchemaRoot strings(int rows) {
        List<FieldVector> vectors = ExportTestSupport.family("strings", allocator, rows, true,
                new DictionaryProvider.MapDictionaryProvider());
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }

    private static SchemaNode schemaOf(VectorSchemaRoot root) {
        try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), null, out));
             ImportedSchema is = ArrowC.importSchema(es.segment())) {
            return is.root();
        }
    }

    private static void assertSameValues(VectorSchemaRoot want, VectorSchemaRoot got) {
        assertEquals(want.getRowCount(), got.getRowCount());
        for (int i = 0; i < want.getFieldVectors().size(); i++) {
            FieldVector w = want.getVector(i);
            assertTrue(VectorEqualsVisitor.vectorEquals(w, got.getVector(i)), () -> "values differ for " + w.getField());
        }
    }

    /**
     * A CUDA {@code ArrowDeviceArray} over the buffers of {@code a} and {@code b} (two uploads of one table):
     * the nodes in odd positions of the tree take their buffers from {@code b}.
     */
    private static MemorySegment spreadOver(Arena arena, CudaArrowBatch a, CudaArrowBatch b) {
        List<ArrayNode> fromA = Nodes.collect(a.root());
        List<ArrayNode> fromB = Nodes.collect(b.root());
        Map<ArrayNode, ArrayNode> source = new IdentityHashMap<>();
        for (int k = 0; k < fromA.size(); k++) {
            source.put(fromA.get(k), k % 2 == 1 ? fromB.get(k) : fromA.get(k));
        }
        MemorySegment d = arena.allocate(ArrowDeviceArray.layout());
        Nodes.write(a.root(), (node, i) -> Nodes.address(source.get(node), i),
                d.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof()), () -> { });
        ArrowDeviceArray.device_type(d, DeviceKind.CUDA.code());
        ArrowDeviceArray.device_id(d, (long) DEVICE);
        return d;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ValidationLevel.class, names = {"MINIMAL", "DEFAULT", "FULL"})
    void buffersInTwoAllocationsAreValidatedInOneImportAndDownloaded(ValidationLevel level) {
        try (VectorSchemaRoot root = strings(50);
             CudaArrowBatch a = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             CudaArrowBatch b = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            MemorySegment d = spreadOver(arena, a, b);
            try (CudaArrowBatch imported = CudaArrow.importDeviceArray(a.schema(), d, level, DeviceCopies.of(transfer, stream))) {
                assertEquals(2, imported.memory().size(), "one wrap per allocation");
                ArrayNode utf8 = imported.root().children().get(0);
                assertEquals(level == ValidationLevel.MINIMAL ? -1 : a.root().children().get(0).bufferLength(2),
                        utf8.bufferLength(2), "DEFAULT and FULL size the data buffer from the copied offsets");
                try (VectorSchemaRoot down = CudaArrow.download(imported, new DeviceCopies(allocator, transfer, stream))) {
                    assertSameValues(root, down);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = ValidationLevel.class, names = {"DEFAULT", "FULL"})
    void aLastOffsetBeyondTheAllocationIsADeviceErrorAndTheStructIsReleasedOnce(ValidationLevel level) {
        try (VectorSchemaRoot root = strings(20);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            stream.synchronize(); // the synchronous copy below runs on the legacy stream
            ArrayNode col = batch.root().children().get(0);
            DeviceBuffer mem = batch.memory().get(0);
            MemorySegment last = arena.allocate(ValueLayout.JAVA_INT);
            last.set(ValueLayout.JAVA_INT, 0, 1 << 30); // monotonic, but far past the end of the allocation
            CudaCopies.hostToDevice(last, mem, col.bufferPointer(1).address() - mem.address() + 4L * 20);
            int trees = CudaStructs.TREES.size();
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
            ValidationException e = assertThrows(ValidationException.class,
                    () -> CudaArrow.importDeviceArray(batch.schema(), out, level, DeviceCopies.of(transfer, stream)));
            assertEquals(ValidationException.Category.DEVICE, e.category(), e.getMessage());
            assertTrue(e.getMessage().contains("allocation"), e.getMessage());
            assertEquals(trees, CudaStructs.TREES.size(), "released exactly once");
        }
    }

    /**
     * The download validates what it copied, not what the import saw: offsets the producer corrupts on the
     * device after a validated import are caught by the struct re-read from the downloaded copies.
     */
    @Test
    void offsetsCorruptedOnTheDeviceAfterAValidatedImportAreRejectedByTheDownload() {
        try (VectorSchemaRoot root = strings(20);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
            try (CudaArrowBatch imported = CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.DEFAULT,
                    DeviceCopies.of(transfer, stream))) {
                ArrayNode col = batch.root().children().get(0);
                DeviceBuffer mem = batch.memory().get(0);
                MemorySegment bad = arena.allocate(ValueLayout.JAVA_INT);
                bad.set(ValueLayout.JAVA_INT, 0, 1000); // offsets[0] above the last offset
                CudaCopies.hostToDeviceAsync(bad, mem, col.bufferPointer(1).address() - mem.address(), stream);
                ValidationException e = assertThrows(ValidationException.class,
                        () -> CudaArrow.download(imported, new DeviceCopies(allocator, transfer, stream)).close());
                assertEquals(ValidationException.Category.CONTENT, e.category(), e.getMessage());
                assertTrue(e.path().startsWith("children[0].buffers[1]"), e.getMessage());
            }
        }
    }

    @Test
    void aMissingTransferAtDefaultIsRefusedBeforeTheImportAndTheStructIsReleasedOnce() {
        try (VectorSchemaRoot root = strings(5);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            int trees = CudaStructs.TREES.size();
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> CudaArrow.importDeviceArray(batch.schema(), out, ValidationLevel.DEFAULT, DeviceCopies.of(stream)));
            assertEquals("copies.transfer", e.parameter(), e.getMessage());
            assertEquals(0L, ArrowArray.release(out).address(), "moved");
            assertEquals(trees, CudaStructs.TREES.size(), "released exactly once");
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(ValidationLevel.class)
    void deviceStreamBatchesImportAtEveryLevelAndDownload(ValidationLevel level) {
        try (VectorSchemaRoot root = strings(30); Arena arena = Arena.ofConfined()) {
            List<CudaArrowBatch> batches = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                batches.add(CudaArrow.upload(root, DeviceCopies.of(transfer, stream)));
            }
            MemorySegment out = arena.allocate(org.devicebridge.generated.arrow.ArrowDeviceArrayStream.layout());
            CudaArrow.exportDeviceStream(root.getSchema(), batches.iterator(), DeviceCopies.of(stream), out);
            int count = 0;
            try (CudaStream consumer = CudaStream.create(Device.cuda(DEVICE));
                 HostDeviceTransfer consumerTransfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
                 ImportedArrayStream in = ArrowC.importDeviceStream(out)) {
                CudaArrowBatch b;
                while ((b = CudaArrow.importNext(in, level, DeviceCopies.of(consumerTransfer, consumer))) != null) {
                    try (CudaArrowBatch batch = b;
                         VectorSchemaRoot down = CudaArrow.download(batch,
                                 new DeviceCopies(allocator, consumerTransfer, consumer))) {
                        assertSameValues(root, down);
                        count++;
                    }
                }
                consumer.synchronize();
            }
            assertEquals(2, count);
        }
    }

    @Test
    void theImportedBatchKeepsTheValidatedSizesAndTheSchema() {
        try (VectorSchemaRoot root = strings(10);
             CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
             Arena arena = Arena.ofConfined()) {
            SchemaNode schema = schemaOf(root);
            MemorySegment out = arena.allocate(ArrowDeviceArray.layout());
            CudaArrow.exportDeviceArray(batch, DeviceCopies.of(stream), out);
            try (CudaArrowBatch imported = CudaArrow.importDeviceArray(schema, out, ValidationLevel.FULL,
                    DeviceCopies.of(transfer, stream))) {
                List<ArrayNode> want = Nodes.collect(batch.root());
                List<ArrayNode> got = Nodes.collect(imported.root());
                assertEquals(want.size(), got.size());
                for (int k = 0; k < want.size(); k++) {
                    for (int i = 0; i < want.get(k).bufferCount(); i++) {
                        assertEquals(want.get(k).bufferLength(i), got.get(k).bufferLength(i), got.get(k).path());
                        assertEquals(Nodes.address(want.get(k), i), Nodes.address(got.get(k), i), "zero-copy");
                    }
                }
                assertEquals(Device.cuda(DEVICE), imported.device());
            }
        }
    }
}
