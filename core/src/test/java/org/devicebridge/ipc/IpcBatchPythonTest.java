package org.devicebridge.ipc;

import org.devicebridge.Device;
import org.devicebridge.testing.PythonProcess;
import static org.devicebridge.testing.PythonProcess.python;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.util.Text;
import org.devicebridge.HandleBusyException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.foreign.CudaStructs;
import org.devicebridge.ipc.IpcBatchDescriptor.BufferRef;
import org.devicebridge.ipc.IpcBatchDescriptor.Node;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Arrow device batches over CUDA IPC between this JVM and a real CPython child (CuPy + NumPy + pyarrow on the
 * host side), both ways, through the language-neutral {@link IpcBatchDescriptor}:
 * <ol>
 *   <li>an uploaded batch (stream-ordered pool memory, which CUDA IPC cannot share: {@code SHARE_ONLY} refuses
 *       it) exported with {@code COPY_UNSHAREABLE}: the child waits on Java's event, sums a column on the GPU,
 *       rebuilds the batch with {@code pa.Array.from_buffers}, validates it in full and compares it with the
 *       expected one; the export refuses to close ({@link HandleBusyException}) until the child's close message;</li>
 *   <li>the same batch in {@code cuMemAlloc} memory exported zero-copy ({@code SHARE_ONLY}, nothing copied):
 *       the child doubles a column in place and Java downloads the doubled values;</li>
 *   <li>the child's batch (every buffer in one CuPy allocation that is a sub-range of a larger pooled block, an
 *       event recorded after unsynchronised uploads) imported at FULL, its typed refusals (wrong device, a
 *       buffer beyond its mapping, a handle that does not open) first, downloaded and compared; the close message
 *       is refused while mapped and sent after close.</li>
 * </ol>
 * Device memory, handles, struct trees and Arrow memory are back to their baselines at the end. Skipped without a
 * GPU, or where the interpreter ({@code DEVICEBRIDGE_PYTHON}, else {@code python3}) cannot import CuPy, NumPy and
 * pyarrow with a GPU.
 */
@RequiresCuda
class IpcBatchPythonTest {
    private static final int DEVICE = 0;
    private static final int ROWS = 6;

    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private int treesBefore;
    private long liveBefore;
    private long deviceBytesBefore;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        treesBefore = CudaStructs.TREES.size();
        liveBefore = HandleTracker.liveHandles();
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
    }

    @AfterEach
    void tearDown() {
        assertEquals(treesBefore, CudaStructs.TREES.size(), "every struct tree released");
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    private static boolean hasModules() {
        return PythonProcess.runs("import cupy, numpy, pyarrow; assert cupy.cuda.runtime.getDeviceCount() > 0");
    }

    /** The batch batch_ipc_child.py expects (its JAVA_ROWS): int64, float64, utf8, bool, list, struct, with nulls. */
    private VectorSchemaRoot javaBatch() {
        BigIntVector i = new BigIntVector("i", allocator);
        Float8Vector f = new Float8Vector("f", allocator);
        VarCharVector s = new VarCharVector("s", allocator);
        BitVector b = new BitVector("b", allocator);
        ListVector l = ListVector.empty("l", allocator);
        StructVector st = StructVector.empty("st", allocator);
        IntVector a = st.addOrGet("a", FieldType.nullable(new ArrowType.Int(32, true)), IntVector.class);
        Long[] is = {0L, 10L, null, 30L, 40L, 50L};
        String[] ss = {"alpha", "", null, "\u03b3\u03b4", "e", "ff"};
        Boolean[] bs = {true, false, true, null, false, true};
        int[][] ls = {{1}, {}, null, {2, 3}, {4}, {5, 6, 7}};
        Integer[] as = {1, null, 3, 4, 5, 6};
        st.allocateNew();
        UnionListWriter w = l.getWriter();
        for (int r = 0; r < ROWS; r++) {
            if (is[r] == null) {
                i.setNull(r);
            } else {
                i.setSafe(r, is[r]);
            }
            f.setSafe(r, 0.25 * r);
            if (ss[r] == null) {
                s.setNull(r);
            } else {
                s.setSafe(r, ss[r].getBytes(StandardCharsets.UTF_8));
            }
            if (bs[r] == null) {
                b.setNull(r);
            } else {
                b.setSafe(r, bs[r] ? 1 : 0);
            }
            if (ls[r] != null) {
                w.setPosition(r);
                w.startList();
                for (int v : ls[r]) {
                    w.writeInt(v);
                }
                w.endList();
            }
            if (as[r] == null) {
                st.setNull(r);
                a.setNull(r);
            } else {
                a.setSafe(r, as[r]);
                st.setIndexDefined(r);
            }
        }
        w.setValueCount(ROWS);
        VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(i, f, s, b, l, st));
        root.setRowCount(ROWS);
        return root;
    }

    private static List<Object> values(FieldVector v) {
        List<Object> out = new ArrayList<>();
        for (int r = 0; r < v.getValueCount(); r++) {
            Object o = v.getObject(r);
            out.add(o instanceof Text t ? t.toString() : o);
        }
        return out;
    }

    /** The schema of {@code root} as the library imports it. */
    private static SchemaNode schemaOf(VectorSchemaRoot root) {
        try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), null, out));
             ImportedSchema is = ArrowC.importSchema(es.segment())) {
            return is.root();
        }
    }

    /**
     * {@code root} copied into one {@code cuMemAlloc} allocation and imported as a device batch (its memory
     * wrapped at the allocation's base, which CUDA IPC can share in place); the batch's release frees it.
     */
    private static CudaArrowBatch inMemAlloc(VectorSchemaRoot root, CudaStream stream, HostDeviceTransfer transfer) {
        SchemaNode schema = schemaOf(root);
        try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
             ImportedArray host = ArrowC.importArray(schema, ea.segment(), ValidationLevel.DEFAULT);
             Arena arena = Arena.ofConfined()) {
            List<MemorySegment> sources = new ArrayList<>();
            long[] total = {0};
            Node described = place(host.root(), sources, total);
            DeviceBuffer memory = DeviceBuffer.allocate(Device.cuda(DEVICE), Math.max(total[0], 64));
            long at = 0;
            for (MemorySegment src : sources) {
                CudaCopies.hostToDevice(src, memory, at);
                at = (at + src.byteSize() + 63) & -64L;
            }
            MemorySegment struct = arena.allocate(ArrowDeviceArray.layout());
            try {
                IpcBatchImport.writeDeviceArray(described, new long[] {memory.address()}, DEVICE, struct, memory::close);
            } catch (RuntimeException | Error e) {
                memory.close();
                throw e;
            }
            return CudaArrow.importDeviceArray(schema, struct, ValidationLevel.DEFAULT, DeviceCopies.of(transfer, stream));
        }
    }

    /** The descriptor node of {@code n} with every non-empty buffer at the next 64-byte offset of one allocation. */
    private static Node place(ArrayNode n, List<MemorySegment> sources, long[] total) {
        List<BufferRef> buffers = new ArrayList<>();
        for (int k = 0; k < n.bufferCount(); k++) {
            if (n.isBufferNull(k) || n.bufferLength(k) == 0) {
                buffers.add(null);
                continue;
            }
            MemorySegment src = n.buffer(k);
            buffers.add(new BufferRef(0, total[0], src.byteSize()));
            sources.add(src);
            total[0] = (total[0] + src.byteSize() + 63) & -64L;
        }
        List<Node> children = new ArrayList<>();
        for (ArrayNode c : n.children()) {
            children.add(place(c, sources, total));
        }
        return new Node(n.length(), n.nullCount(), n.offset(), buffers, children, null);
    }

    private static void send(Writer toChild, String line) throws IOException {
        toChild.write(line + "\n");
        toChild.flush();
    }

    /** Sends one of Java's exports, checks the child's report, the busy close and the acknowledgement. */
    private static void shareWithChild(IpcBatchExport export, Writer toChild, BufferedReader fromChild)
            throws IOException {
        try {
            send(toChild, export.descriptor().toJson());
            String line = fromChild.readLine();
            Map<String, Object> report = StrictJson.object(line, 1 << 20);
            assertEquals(Boolean.TRUE, report.get("equal"), "the child's batch equals the expected one: " + line);
            assertEquals((long) ROWS, report.get("rows"));
            assertEquals(130L, report.get("sum_i"), "sum of the valid int64 values, on the child's GPU");
            assertEquals(Arrays.asList("alpha", "", null, "\u03b3\u03b4", "e", "ff"), report.get("strings"));
            assertEquals((long) export.descriptor().handles().size(), report.get("allocations"));
            String closed = fromChild.readLine();
            assertFalse(export.gate().isAcknowledged());
            assertThrows(HandleBusyException.class, export.gate()::close, "no close before the acknowledgement");
            export.gate().acknowledge(closed);
            assertTrue(export.gate().isAcknowledged());
            export.gate().close();
        } finally {
            export.gate().forceClose(); // a no-op after close(); releases if an assertion failed above
        }
    }

    @Test
    void batchesCrossBothWaysWithEventsCloseAcknowledgementsAndTypedRefusals(@TempDir Path dir) throws Exception {
        assumeTrue(hasModules(), python() + " cannot import CuPy, NumPy and pyarrow with a GPU");
        Path script = dir.resolve("batch_ipc_child.py");
        try (InputStream in = IpcBatchPythonTest.class.getResourceAsStream("batch_ipc_child.py")) {
            Files.write(script, in.readAllBytes());
        }
        Process child = new ProcessBuilder(python(), script.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (CudaStream stream = CudaStream.create(Device.cuda(DEVICE));
             HostDeviceTransfer transfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
             VectorSchemaRoot root = javaBatch();
             Writer toChild = child.outputWriter(StandardCharsets.UTF_8);
             BufferedReader fromChild = new BufferedReader(new InputStreamReader(child.getInputStream(),
                     StandardCharsets.UTF_8))) {
            // 1. an upload: pool memory, copied for the child
            IpcBatchExport copied;
            try (CudaArrowBatch uploaded = CudaArrow.upload(root, DeviceCopies.of(transfer, stream))) {
                assertThrows(UnsupportedFeatureException.class,
                        () -> IpcBatchExport.export(uploaded, stream, IpcExport.Memory.SHARE_ONLY));
                copied = IpcBatchExport.export(uploaded, stream, IpcExport.Memory.COPY_UNSHAREABLE);
            } // the export keeps what it needs
            assertTrue(copied.copiedBytes() > 0, "pool memory copied into the export's own allocation");
            assertEquals(1, copied.descriptor().handles().size(), "one allocation: the copy");
            shareWithChild(copied, toChild, fromChild);

            // 2. cuMemAlloc memory, shared in place: the child's doubling shows here
            try (CudaArrowBatch inPlace = inMemAlloc(root, stream, transfer)) {
                IpcBatchExport shared = IpcBatchExport.export(inPlace, stream, IpcExport.Memory.SHARE_ONLY);
                assertEquals(0, shared.copiedBytes(), "nothing copied");
                shareWithChild(shared, toChild, fromChild);
                try (VectorSchemaRoot down = CudaArrow.download(inPlace, new DeviceCopies(allocator, transfer, stream))) {
                    assertEquals(Arrays.asList(0L, 20L, null, 60L, 80L, 100L), values(down.getVector("i")),
                            "doubled in place by the child: zero copy");
                    assertEquals(values(root.getVector("s")), values(down.getVector("s")));
                    assertEquals(values(root.getVector("l")), values(down.getVector("l")));
                    assertEquals(values(root.getVector("st")), values(down.getVector("st")));
                }
            }

            // 3. the child's batch
            send(toChild, "{\"next\": \"yours\"}");
            IpcBatchDescriptor theirs = IpcBatchDescriptor.parse(fromChild.readLine());
            assertEquals(1, theirs.handles().size(), "every buffer in one pooled CuPy block");
            assertTrue(theirs.array().children().get(0).buffers().get(1).offset() >= 4096,
                    "the buffers lie past the block's base: base handle + offset");
            IpcBatchDescriptor otherDevice = new IpcBatchDescriptor(theirs.id(), Cuda.deviceCount(), theirs.schema(),
                    theirs.handles(), List.of(), theirs.array(), theirs.eventHandle());
            assertEquals(Category.DEVICE, assertThrows(ValidationException.class, () -> IpcBatchImport.open(
                    otherDevice, ValidationLevel.FULL, stream, transfer)).category());
            Node x = theirs.array().children().get(0);
            BufferRef data = x.buffers().get(1);
            List<BufferRef> beyond = new ArrayList<>(x.buffers());
            beyond.set(1, new BufferRef(0, data.offset(), 1L << 40));
            List<Node> columns = new ArrayList<>(theirs.array().children());
            columns.set(0, new Node(x.length(), x.nullCount(), x.offset(), beyond, x.children(), null));
            IpcBatchDescriptor tooLong = new IpcBatchDescriptor(theirs.id(), DEVICE, theirs.schema(), theirs.handles(),
                    List.of(), new Node(theirs.array().length(), 0, 0, theirs.array().buffers(), columns, null), theirs.eventHandle());
            ValidationException e = assertThrows(ValidationException.class,
                    () -> IpcBatchImport.open(tooLong, ValidationLevel.FULL, stream, transfer));
            assertEquals(Category.LENGTH, e.category(), e.getMessage());
            assertEquals("array.children[0].buffers[1]", e.path());
            byte[] garbage = new byte[64];
            Arrays.fill(garbage, (byte) 0x5A);
            IpcBatchDescriptor unopenable = new IpcBatchDescriptor("none", DEVICE, theirs.schema(), List.of(garbage),
                    List.of(), theirs.array(), null);
            ValidationException h = assertThrows(ValidationException.class,
                    () -> IpcBatchImport.open(unopenable, ValidationLevel.MINIMAL, stream, null));
            assertEquals(Category.DEVICE, h.category(), h.getMessage());
            assertEquals("handles[0]", h.path());

            IpcBatchImport imported = IpcBatchImport.open(theirs, ValidationLevel.FULL, stream, transfer);
            try (imported) {
                assertEquals(5, imported.batch().length());
                assertThrows(HandleBusyException.class, imported::closeMessage, "still mapped");
                try (VectorSchemaRoot down = CudaArrow.download(imported.batch(),
                        new DeviceCopies(allocator, transfer, stream))) {
                    assertEquals(Arrays.asList(1, null, 3, 4, null), values(down.getVector("x")));
                    assertEquals(Arrays.asList(0.5, 1.5, 2.5, 3.5, 4.5), values(down.getVector("y")));
                    assertEquals(Arrays.asList("a", "bb", null, "dddd", "\u00e9"), values(down.getVector("s")));
                    assertEquals(Arrays.asList(List.of((short) 1, (short) 2), List.of(), null, List.of((short) 3),
                            List.of((short) 4, (short) 5, (short) 6)), values(down.getVector("l")));
                    assertEquals(Arrays.asList(true, false, null, true, true), values(down.getVector("b")));
                    assertEquals(Arrays.asList(Map.of("a", 10L), Map.of("a", 20L), null, Map.of("a", 40L),
                            Map.of("a", 50L)), values(down.getVector("st")));
                }
                stream.synchronize();
            }
            assertTrue(imported.isUnmapped(), "closing the batch closed the mappings");
            send(toChild, imported.closeMessage());
            assertEquals("{\"done\": true}", fromChild.readLine());
            assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the child exits");
            assertEquals(0, child.exitValue());
            stream.synchronize();
        } finally {
            child.destroyForcibly();
        }
    }
}
