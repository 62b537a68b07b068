package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
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
import org.devicebridge.arrow.cuda.CudaArrowRoundTripTest;
import org.devicebridge.foreign.CudaStructs;
import org.devicebridge.ipc.IpcBatchDescriptor.BufferRef;
import org.devicebridge.ipc.IpcBatchDescriptor.Node;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The CUDA IPC batch descriptor on the CPU: its JSON read back, what CPython writes, the typed refusals of
 * malformed descriptors, the schema message both ways, and the host half of an import (the struct tree written
 * from a descriptor over host buffers validates at FULL and reads back the same values). No GPU needed.
 */
class IpcBatchDescriptorTest {
    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private int treesBefore;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        treesBefore = CudaStructs.TREES.size();
    }

    @AfterEach
    void tearDown() {
        assertEquals(treesBefore, CudaStructs.TREES.size(), "every written tree freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    private static byte[] handle(int seed) {
        byte[] h = new byte[64];
        Arrays.fill(h, (byte) seed);
        h[0] = (byte) 0xAB;
        return h;
    }

    private static Node leaf(long length, long nullCount, BufferRef... buffers) {
        return new Node(length, nullCount, 0, Arrays.asList(buffers), List.of(), null);
    }

    private static byte[] schemaMessage(Field... fields) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            MessageSerializer.serialize(new WriteChannel(Channels.newChannel(out)), new Schema(List.of(fields)));
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        return out.toByteArray();
    }

    private static IpcBatchDescriptor sample(byte[] event) {
        Node ints = leaf(3, 1, new BufferRef(0, 0, 1), new BufferRef(0, 64, 12));
        Node strings = leaf(3, 0, null, new BufferRef(1, 128, 16), new BufferRef(0, 192, 5));
        Node root = new Node(3, 0, 0, Arrays.asList((BufferRef) null), List.of(ints, strings), null);
        byte[] schema = schemaMessage(Field.nullable("i", new ArrowType.Int(32, true)),
                Field.notNullable("s", ArrowType.Utf8.INSTANCE));
        return new IpcBatchDescriptor("id-\"1\"", 0, schema, List.of(handle(1), handle(2)), List.of(), root, event);
    }

    @Test
    void jsonRoundTripKeepsEveryFieldAndNullBuffers() {
        for (byte[] event : new byte[][] {null, handle(9)}) {
            IpcBatchDescriptor d = sample(event);
            String json = d.toJson();
            assertTrue(json.startsWith("{\"devicebridge_ipc\": 1, \"kind\": \"arrow_batch\""), json);
            assertTrue(json.contains("\"buffers\": [null, [1, 128, 16], [0, 192, 5]]"), json);
            IpcBatchDescriptor back = IpcBatchDescriptor.parse(json);
            assertEquals(d, back);
            assertEquals("id-\"1\"", back.id());
            assertArrayEquals(handle(2), back.handles().get(1));
            assertArrayEquals(event, back.eventHandle());
            assertNull(back.array().buffers().get(0));
            assertEquals(new BufferRef(0, 64, 12), back.array().children().get(0).buffers().get(1));
            assertEquals("id-\"1\"", IpcBatchDescriptor.closedId(back.closeMessage()));
        }
    }

    @Test
    void readsWhatPythonJsonDumpsWritesWithoutDictionariesAndWithExtraKeys() {
        String schema = Base64.getEncoder().encodeToString(schemaMessage(Field.nullable("x", new ArrowType.Int(64, true))));
        String json = "{\"devicebridge_ipc\": 1, \"kind\": \"arrow_batch\", \"id\": \"py-1\", \"device\": 0, "
                + "\"schema\": \"" + schema.replace("/", "\\/") + "\", \"handles\": [\"" + "cd".repeat(64) + "\"], "
                + "\"array\": {\"length\": 2, \"null_count\": 0, \"offset\": 0, \"buffers\": [null], \"children\": "
                + "[{\"length\": 2, \"null_count\": 0, \"offset\": 1, \"buffers\": [null, [0, 4096, 24]], "
                + "\"children\": []}]}, \"event_handle\": null, \"producer\": \"cupy 13\"}";
        IpcBatchDescriptor d = IpcBatchDescriptor.parse(json);
        assertEquals("py-1", d.id());
        assertNull(d.eventHandle());
        assertEquals(1, d.array().children().get(0).offset());
        assertEquals(4096, d.array().children().get(0).buffers().get(1).offset());
        SchemaNode type = IpcSchemas.deserialize(d.schema());
        assertEquals("x", type.children().get(0).name());
        assertEquals("l", type.children().get(0).format());
    }

    private static ValidationException refused(String json) {
        return assertThrows(ValidationException.class, () -> IpcBatchDescriptor.parse(json));
    }

    private static void refused(String json, Category category, String path) {
        ValidationException e = refused(json);
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
    }

    @Test
    void refusesMalformedDescriptorsByCategoryAndPath() {
        String good = sample(null).toJson();
        assertEquals(Category.FORMAT, refused(good.substring(0, good.length() - 1)).category());
        assertEquals(Category.FORMAT, refused("[1, 2]").category());
        assertEquals(Category.FORMAT, refused(good + " x").category());
        refused(good.replace("\"devicebridge_ipc\": 1", "\"devicebridge_ipc\": 3"), Category.VERSION, "devicebridge_ipc");
        refused(good.replace("\"arrow_batch\"", "\"tensor\""), Category.FORMAT, "kind");
        refused(good.replace("\"device\": 0", "\"device\": -1"), Category.DEVICE, "device");
        refused(good.replace("\"device\": 0", "\"device\": 0.5"), Category.FORMAT, "device");
        refused(good.replace("\"device\": 0", "\"device\": 4294967296"), Category.DEVICE, "device");
        refused(good.replace("\"id\": \"id-\\\"1\\\"\", ", ""), Category.STRUCTURE, "id");
        refused(good.replace("\"schema\": \"", "\"schema\": \"%"), Category.FORMAT, "schema");
        refused(good.replace("\"handles\": [\"ab", "\"handles\": [\"zz"), Category.FORMAT, "handles[0]");
        refused(good.replace("\"handles\": [\"ab", "\"handles\": [\""), Category.STRUCTURE, "handles[0]");
        refused(good.replace("\"event_handle\": null", "\"event_handle\": \"abcd\""), Category.STRUCTURE, "event_handle");
        refused(good.replace("[1, 128, 16]", "[2, 128, 16]"), Category.SIZE, "array.children[1].buffers[1][0]");
        refused(good.replace("[1, 128, 16]", "[-4294967296, 128, 16]"), Category.SIZE, "array.children[1].buffers[1][0]");
        refused(good.replace("[1, 128, 16]", "[4294967296, 128, 16]"), Category.SIZE, "array.children[1].buffers[1][0]");
        refused(good.replace("[1, 128, 16]", "[1, -128, 16]"), Category.SIZE, "array.children[1].buffers[1][1]");
        refused(good.replace("[1, 128, 16]", "[1, 9223372036854775807, 16]"), Category.SIZE,
                "array.children[1].buffers[1][2]");
        refused(good.replace("\"null_count\": 1", "\"null_count\": 4"), Category.SIZE, "array.children[0].null_count");
        refused(good.replace("\"id\": \"id-\\\"1\\\"\"", "\"id\": \"\""), Category.SIZE, "id");
        refused(good.replace("[1, 128, 16]", "[1, 128]"), Category.FORMAT, "array.children[1].buffers[1]");
        refused(good.replace("[1, 128, 16]", "\"x\""), Category.FORMAT, "array.children[1].buffers[1]");
        refused(good.replace("{\"length\": 3, \"null_count\": 1", "{\"length\": -3, \"null_count\": 1"),
                Category.SIZE, "array.children[0].length");
        refused(good.replace("\"null_count\": 1", "\"null_count\": -2"), Category.SIZE, "array.children[0].null_count");
        refused(good.replace("\"children\": [{", "\"children\": [7, {"), Category.FORMAT, "array.children[0]");
        refused(good.replace("\"buffers\": [null], ", ""), Category.STRUCTURE, "array.buffers");
        refused(good.replace("\"kind\": \"arrow_batch\"", "\"kind\": \"arrow_batch\", \"kind\": \"arrow_batch\""),
                Category.FORMAT, "");
        String dictionary = "{\"length\": 0, \"null_count\": 0, \"offset\": 0, \"buffers\": [], \"children\": []}";
        refused(good.replace("\"dictionary\": null}, \"event_handle\"", "\"dictionary\": " + dictionary
                + "}, \"event_handle\""), Category.FORMAT, "array.dictionary");
    }

    @Test
    void refusesNestingPastTheCapsWithoutExhaustingTheStack() {
        String node = "{\"length\": 0, \"null_count\": 0, \"offset\": 0, \"buffers\": [], \"children\": [";
        String deep = node.repeat(70) + "]}".repeat(70);
        String good = sample(null).toJson();
        int at = good.indexOf("\"array\": ") + "\"array\": ".length();
        int end = good.indexOf(", \"event_handle\"");
        ValidationException e = refused(good.substring(0, at) + deep + good.substring(end));
        assertEquals(Category.DEPTH, e.category(), e.getMessage());
        assertEquals("array" + ".children[0]".repeat(65), e.path());
        assertEquals(Category.DEPTH, refused("{\"a\": " + "[".repeat(100_000) + "]".repeat(100_000) + "}").category());
    }

    @Test
    void closeMessagesAreReadBackAndOthersRefused() {
        assertEquals("x", IpcBatchDescriptor.closedId("{\"devicebridge_ipc_closed\": \"x\"}"));
        assertEquals(Category.STRUCTURE, assertThrows(ValidationException.class,
                () -> IpcBatchDescriptor.closedId("{\"done\": true}")).category());
        assertEquals(Category.FORMAT, assertThrows(ValidationException.class,
                () -> IpcBatchDescriptor.closedId("{\"devicebridge_ipc_closed\": 1}")).category());
    }

    @Test
    void schemaMessagesThatArrowJavaCannotReadOrThatHoldDictionariesAreRefused() {
        ValidationException e = assertThrows(ValidationException.class,
                () -> IpcSchemas.deserialize(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}));
        assertEquals(Category.SIZE, e.category()); // a length claim beyond the bytes, refused before Arrow Java reads it
        assertEquals("schema", e.path());
        Field dict = new Field("d", new FieldType(true, ArrowType.Utf8.INSTANCE,
                new DictionaryEncoding(0, false, new ArrowType.Int(32, true))), List.of());
        assertThrows(UnsupportedFeatureException.class, () -> IpcSchemas.deserialize(schemaMessage(dict)));
    }

    static Stream<Arguments> families() {
        List<Arguments> out = new ArrayList<>();
        for (String family : ExportTestSupport.FAMILIES) {
            if (family.equals("dictionary")) {
                continue; // refused by the descriptor (see above)
            }
            for (boolean nulls : new boolean[] {false, true}) {
                out.add(Arguments.of(family, nulls, 29));
            }
        }
        out.add(Arguments.of("nested", true, 0));
        return out.stream();
    }

    /**
     * The host half of a CUDA IPC round trip: a batch's nodes become a descriptor (each buffer its own
     * "allocation", as the exporter names them), go through JSON and the schema message, and the struct tree an
     * import writes from it over the same (host) buffers validates at FULL and reads back the same values;
     * the tree's release runs once.
     */
    @ParameterizedTest(name = "{0} nulls={1} rows={2}: through the descriptor and back")
    @MethodSource("families")
    void everyFamilyReadsBackThroughTheDescriptor(String family, boolean nulls, int rows) {
        org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry.register(org.apache.arrow.vector.extension.UuidType.INSTANCE);
        List<FieldVector> vectors = ExportTestSupport.family(family, allocator, rows, nulls,
                new DictionaryProvider.MapDictionaryProvider());
        AtomicInteger freed = new AtomicInteger();
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors); Arena arena = Arena.ofConfined()) {
            root.setRowCount(rows);
            SchemaNode schema;
            try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), null, out));
                 ImportedSchema is = ArrowC.importSchema(es.segment())) {
                schema = is.root();
            }
            try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
                 ImportedArray host = ArrowC.importArray(schema, ea.segment(), ValidationLevel.DEFAULT)) {
                List<Long> bases = new ArrayList<>();
                Node described = describe(host.root(), bases);
                IpcBatchDescriptor d = IpcBatchDescriptor.parse(new IpcBatchDescriptor("cpu", 0,
                        IpcSchemas.serialize(schema), bases.stream().map(b -> handle(b.intValue())).toList(), List.of(), described,
                        null).toJson());
                SchemaNode type = IpcSchemas.deserialize(d.schema());
                assertEquals(ArrowJava.toField(schema), ArrowJava.toField(type), "the schema message");
                long[] sizes = new long[bases.size()];
                Arrays.fill(sizes, Long.MAX_VALUE);
                IpcBatchImport.checkInside(d.array(), sizes, "array");
                MemorySegment struct = arena.allocate(ArrowDeviceArray.layout());
                IpcBatchImport.writeDeviceArray(d.array(), bases.stream().mapToLong(Long::longValue).toArray(), 0,
                        struct, freed::incrementAndGet);
                MemorySegment array = struct.asSlice(ArrowDeviceArray.array$offset(), ArrowArray.sizeof());
                ImportedArray again = ArrowC.importArray(type, array, ValidationLevel.FULL);
                try (VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, again, null)) {
                    assertEquals(rows, back.getRowCount());
                    for (int i = 0; i < vectors.size(); i++) { // compared as the CUDA round trip compares them
                        FieldVector o = vectors.get(i);
                        FieldVector c = back.getVector(i);
                        CudaArrowRoundTripTest.assertSameFieldOrStorage(o.getField(), c.getField());
                        for (int r = 0; r < rows; r++) {
                            int row = r;
                            assertTrue(java.util.Objects.deepEquals(CudaArrowRoundTripTest.valueOf(o, r),
                                    CudaArrowRoundTripTest.valueOf(c, r)), () -> o.getName() + "[" + row + "]");
                        }
                    }
                }
                assertEquals(1, freed.get(), "the written tree released once");
            }
        }
    }

    /** The descriptor node of {@code n}: each non-NULL buffer its own allocation, at offset 0. */
    private static Node describe(ArrayNode n, List<Long> bases) {
        List<BufferRef> buffers = new ArrayList<>();
        for (int i = 0; i < n.bufferCount(); i++) {
            long address = n.bufferPointer(i).address();
            if (address == 0) {
                buffers.add(null);
            } else {
                buffers.add(new BufferRef(bases.size(), 0, n.bufferLength(i)));
                bases.add(address);
            }
        }
        List<Node> children = new ArrayList<>();
        for (ArrayNode c : n.children()) {
            children.add(describe(c, bases));
        }
        return new Node(n.length(), n.nullCount(), n.offset(), buffers, children, null);
    }

    @Test
    void withoutACudaDriverBothEndsThrowTheTypedErrorFirst() {
        org.junit.jupiter.api.Assumptions.assumeFalse(org.devicebridge.cuda.Cuda.isAvailable(), "a CUDA driver is here");
        assertThrows(org.devicebridge.cuda.CudaUnavailableException.class,
                () -> IpcBatchImport.open(sample(null), ValidationLevel.MINIMAL, null, null));
        assertThrows(org.devicebridge.cuda.CudaUnavailableException.class,
                () -> IpcBatchExport.export(null, null, IpcExport.Memory.SHARE_ONLY));
    }

    @Test
    void checkInsideNamesTheBufferBeyondItsMapping() {
        IpcBatchDescriptor d = sample(null);
        ValidationException e = assertThrows(ValidationException.class,
                () -> IpcBatchImport.checkInside(d.array(), new long[] {4096, 143}, "array"));
        assertEquals(Category.LENGTH, e.category());
        assertEquals("array.children[1].buffers[1]", e.path());
        IpcBatchImport.checkInside(d.array(), new long[] {197, 144}, "array"); // exactly fits
    }
}
