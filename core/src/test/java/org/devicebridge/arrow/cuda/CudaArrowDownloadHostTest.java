package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.extension.UuidType;
import org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry;
import org.devicebridge.DeviceKind;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.DeviceCopier;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.HostCopies;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.testing.HostMemoryCopier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The host half of a CUDA download, on the CPU, with host memory standing in for device memory: the batch's
 * own struct re-read at DEFAULT from the downloaded copies ({@link ImportedArray#view}), then the validated
 * view moved to those copies ({@link ImportedArray#ofHostCopies}) and handed to Arrow Java. What Arrow Java reads
 * is what was validated: device memory changed between the copies that sized the download and the download
 * itself is refused or validated from the copy, and a change after the download never reaches it.
 */
class CudaArrowDownloadHostTest {
    private static final int CUDA = 2;

    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private int blocksBefore;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        blocksBefore = DownloadedBuffers.LIVE.get();
    }

    @AfterEach
    void tearDown() {
        assertEquals(blocksBefore, DownloadedBuffers.LIVE.get(), "every downloaded block freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }


    /**
     * The download's batch of copies over host memory (one "allocation" spanning the address space), with
     * hooks for a producer that writes the "device" memory just before or just after it. The pieces that
     * may arrive last hold 0xFF bytes until the work meant to overlap them returned, so a check or an
     * import that reads one of them too early sees garbage (and the test its wrong values or its error).
     */
    private static class HostBatch implements CudaArrowDownload.BatchCopier {
        Runnable before = () -> { };
        Runnable after = () -> { };
        int batches;
        long lateBytes;

        @Override
        public CopyPlan plan(long[] addresses, long[] byteSizes) {
            return CopyPlan.of(new long[] {0}, new long[] {Long.MAX_VALUE}, addresses, byteSizes);
        }

        @Override
        public void copy(CopyPlan.Pieces pieces, MemorySegment block, Runnable whileRestArrives) {
            batches++;
            before.run();
            for (int k = 0; k < pieces.count(); k++) {
                MemorySegment to = block.asSlice(pieces.hostOffsets()[k], pieces.sizes()[k]);
                if (k < pieces.leading()) {
                    MemorySegment.copy(MemorySegment.ofAddress(pieces.addresses()[k]).reinterpret(to.byteSize()), 0, to,
                            0, to.byteSize());
                } else {
                    to.fill((byte) 0xFF);
                    lateBytes += to.byteSize();
                }
            }
            try {
                whileRestArrives.run();
            } finally {
                for (int k = pieces.leading(); k < pieces.count(); k++) {
                    MemorySegment.copy(MemorySegment.ofAddress(pieces.addresses()[k]).reinterpret(pieces.sizes()[k]), 0,
                            block, pieces.hostOffsets()[k], pieces.sizes()[k]);
                }
            }
            after.run();
        }

        @Override
        public long minLateBytes() {
            return 1; // every late byte last, however small the test's buffers
        }
    }

    /** {@link CudaArrowDownload#toHost} handing back the host view (checked while the late pieces were garbage). */
    private ImportedArray toHost(ArrayNode root, ImportedArray imported, DeviceCopier sizing, HostBatch batch) {
        return CudaArrowDownload.toHost(new CudaArrowDownload.Source(root, imported, sizing), allocator, batch, host -> host);
    }

    /**
     * {@code root} (borrowed) exported and imported as a CUDA {@code ArrowDeviceArray} over its own host
     * buffers at {@code level}, through {@code sizing}; the caller closes the array.
     */
    private static ImportedArray asDevice(VectorSchemaRoot root, DictionaryProvider dictionaries, SchemaNode schema,
                                          ValidationLevel level, DeviceCopier sizing) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(ArrowDeviceArray.layout());
            ArrowJava.exportDeviceArray(root, dictionaries, d);
            ArrowDeviceArray.device_type(d, CUDA);
            ArrowDeviceArray.device_id(d, 0);
            return ArrowC.importDeviceArray(schema, d, level, null, sizing);
        }
    }

    private static SchemaNode schemaOf(VectorSchemaRoot root, DictionaryProvider dictionaries) {
        try (ExportedStruct es = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(root.getSchema(), dictionaries, out));
             ImportedSchema is = ArrowC.importSchema(es.segment())) {
            return is.root();
        }
    }

    /** One string column of {@code values}, every value set. */
    private VectorSchemaRoot strings(String... values) {
        VarCharVector v = new VarCharVector("s", allocator);
        v.allocateNew();
        for (int i = 0; i < values.length; i++) {
            v.setSafe(i, values[i].getBytes(StandardCharsets.UTF_8));
        }
        v.setValueCount(values.length);
        VectorSchemaRoot root = new VectorSchemaRoot(List.of(v));
        root.setRowCount(values.length);
        return root;
    }

    /** The offsets of the string column of {@code root}, writable: the "device" memory a producer changes. */
    private static MemorySegment offsets(VectorSchemaRoot root) {
        VarCharVector v = (VarCharVector) root.getVector(0);
        return MemorySegment.ofAddress(v.getOffsetBuffer().memoryAddress()).reinterpret(4L * (v.getValueCount() + 1));
    }

    private static List<String> values(VectorSchemaRoot root) {
        List<String> out = new ArrayList<>();
        VarCharVector v = (VarCharVector) root.getVector(0);
        for (int i = 0; i < v.getValueCount(); i++) {
            out.add(new String(v.get(i), StandardCharsets.UTF_8));
        }
        return out;
    }

    static Stream<Arguments> families() {
        List<Arguments> out = new ArrayList<>();
        for (String family : ExportTestSupport.FAMILIES) {
            for (boolean nulls : new boolean[] {false, true}) {
                for (int rows : new int[] {0, 37}) {
                    for (ValidationLevel level : new ValidationLevel[] {ValidationLevel.MINIMAL, ValidationLevel.DEFAULT}) {
                        out.add(Arguments.of(family, nulls, rows, level));
                    }
                }
            }
        }
        return out.stream();
    }

    /** Families with buffers that no check reads and Arrow Java only wraps (values, string data). */
    private static final java.util.Set<String> WITH_VALUES_ONLY_WRAPPED = java.util.Set.of("integers", "floats",
            "decimals", "temporal", "fixedSizeBinary", "strings", "lists", "listViews", "struct", "map", "sparseUnion",
            "denseUnion", "runEndEncoded", "dictionary", "extension", "nested");

    @ParameterizedTest(name = "{0} nulls={1} rows={2} imported at {3}: downloaded copies read back the same values")
    @MethodSource("families")
    void everyFamilyReadsBackFromItsValidatedCopies(String family, boolean nulls, int rows, ValidationLevel level) {
        ExtensionTypeRegistry.register(UuidType.INSTANCE);
        DictionaryProvider.MapDictionaryProvider dictionaries = new DictionaryProvider.MapDictionaryProvider();
        DictionaryProvider.MapDictionaryProvider back = new DictionaryProvider.MapDictionaryProvider();
        List<FieldVector> vectors = ExportTestSupport.family(family, allocator, rows, nulls, dictionaries);
        try (VectorSchemaRoot root = new VectorSchemaRoot(vectors); HostMemoryCopier sizing = new HostMemoryCopier()) {
            root.setRowCount(rows);
            SchemaNode schema = schemaOf(root, dictionaries);
            HostBatch batch = new HostBatch();
            try (ImportedArray device = asDevice(root, dictionaries, schema, level, sizing)) {
                int importBatches = sizing.batches.size();
                // Arrow Java's import runs while the values may still be arriving, as in a pinned download
                List<ImportedArray> views = new ArrayList<>();
                VectorSchemaRoot imported = CudaArrowDownload.toHost(new CudaArrowDownload.Source(device.root(), device, sizing), allocator, batch,
                        host -> {
                            views.add(host);
                            return ArrowJava.importVectorSchemaRoot(allocator, host, back);
                        });
                assertTrue(sizing.batches.size() - importBatches <= (level == ValidationLevel.MINIMAL ? 1 : 0),
                        "at most one batch of offsets to size a batch imported at MINIMAL, none otherwise");
                assertEquals(1, batch.batches, "one batch of copies of every buffer");
                assertEquals(DeviceKind.CPU, views.get(0).deviceType());
                if (rows > 0 && WITH_VALUES_ONLY_WRAPPED.contains(family)) {
                    assertTrue(batch.lateBytes > 0, "values copied after the buffers the checks read");
                }
                try (VectorSchemaRoot down = imported) {
                    assertEquals(rows, down.getRowCount());
                    for (int i = 0; i < vectors.size(); i++) {
                        FieldVector o = vectors.get(i);
                        FieldVector c = down.getVector(i);
                        CudaArrowRoundTripTest.assertSameFieldOrStorage(o.getField(), c.getField());
                        for (int r = 0; r < rows; r++) {
                            final int row = r;
                            assertTrue(java.util.Objects.deepEquals(CudaArrowRoundTripTest.valueOf(o, r),
                                    CudaArrowRoundTripTest.valueOf(c, r)), () -> o.getName() + "[" + row + "]");
                        }
                    }
                    ExportTestSupport.closeDictionaries(back); // imported dictionaries hold the copies too
                    if (rows > 0 && !family.equals("null")) { // else Arrow Java may hold no buffer of them
                        assertEquals(blocksBefore + 1, DownloadedBuffers.LIVE.get(), "held while a vector is open");
                    }
                }
                assertEquals(blocksBefore, DownloadedBuffers.LIVE.get(), "freed with the last Arrow buffer");
                assertTrue(device.isLive(), "the device array stays the caller's");
            }
        } finally {
            ExportTestSupport.closeDictionaries(dictionaries);
            ExportTestSupport.closeDictionaries(back);
        }
    }

    @Test
    void aConsumerThatReleasesTheViewAndThrowsWhileValuesArriveFreesTheBlockOnlyAfterThem() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            int[] liveWhenValuesLanded = {-1};
            HostBatch batch = new HostBatch() {
                @Override
                public void copy(CopyPlan.Pieces pieces, MemorySegment block, Runnable whileRestArrives) {
                    super.copy(pieces, block, () -> {
                        try {
                            whileRestArrives.run();
                        } finally {
                            liveWhenValuesLanded[0] = DownloadedBuffers.LIVE.get(); // the late pieces land next
                        }
                    });
                }
            };
            try (ImportedArray device = asDevice(root, null, schema, ValidationLevel.DEFAULT, sizing)) {
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> CudaArrowDownload.toHost(new CudaArrowDownload.Source(device.root(), device, sizing), allocator, batch, host -> {
                            host.close(); // releases the copies while the values may still be arriving
                            throw new IllegalStateException("consumer failed");
                        }));
                assertEquals("consumer failed", e.getMessage());
                assertTrue(batch.lateBytes > 0);
                assertEquals(blocksBefore + 1, liveWhenValuesLanded[0], "the block outlives the copies into it");
                assertEquals(blocksBefore, DownloadedBuffers.LIVE.get(), "and is freed once they finished");
            }
        }
    }

    @Test
    void aLastOffsetGrownOnTheDeviceAfterSizingIsRefusedAndNeverReachesArrowJava() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            MemorySegment offsets = offsets(root);
            HostBatch batch = new HostBatch();
            // sized from last offset 6; the producer then points the last value far past the bytes copied
            batch.before = () -> offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 1 << 20);
            try (ImportedArray device = asDevice(root, null, schema, ValidationLevel.MINIMAL, sizing)) {
                ValidationException e = assertThrows(ValidationException.class,
                        () -> toHost(device.root(), device, sizing, batch));
                assertEquals(Category.DEVICE, e.category());
                assertEquals("children[0].buffers[2]", e.path());
                assertTrue(device.isLive(), "the device array stays the caller's after a throw");
            } finally {
                offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 6);
            }
        }
        // tearDown: the downloaded block was freed
    }

    @Test
    void offsetsMadeInvalidOnTheDeviceAfterSizingAreRejectedFromTheCopiedOffsets() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            MemorySegment offsets = offsets(root);
            HostBatch batch = new HostBatch();
            batch.before = () -> offsets.setAtIndex(ValueLayout.JAVA_INT, 3, -1); // last offset before the first
            try (ImportedArray device = asDevice(root, null, schema, ValidationLevel.MINIMAL, sizing)) {
                ValidationException e = assertThrows(ValidationException.class,
                        () -> toHost(device.root(), device, sizing, batch));
                assertTrue(e.path().startsWith("children[0]"), e.getMessage());
                assertNotEquals(Category.DEVICE, e.category(), "refused by the offset checks themselves: " + e.getMessage());
            } finally {
                offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 6);
            }
        }
    }

    @Test
    void aLastOffsetShrunkOnTheDeviceAfterSizingIsReadFromTheCopyNotFromTheSizing() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            MemorySegment offsets = offsets(root);
            HostBatch batch = new HostBatch();
            batch.before = () -> offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 5); // "f" becomes ""
            try (ImportedArray device = asDevice(root, null, schema, ValidationLevel.MINIMAL, sizing)) {
                int importBatches = sizing.batches.size();
                ImportedArray host = toHost(device.root(), device, sizing, batch);
                assertEquals(1, sizing.batches.size() - importBatches, "one batch of offsets sized the download");
                assertEquals(1, batch.batches, "then one batch of every buffer");
                assertEquals(5, host.root().children().get(0).bufferLength(2), "sized by the validated copy");
                try (VectorSchemaRoot down = ArrowJava.importVectorSchemaRoot(allocator, host, null)) {
                    assertEquals(List.of("ab", "cde", ""), values(down));
                }
            } finally {
                offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 6);
            }
        }
    }

    @Test
    void deviceMemoryWrittenAfterTheDownloadDoesNotReachArrowJava() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            MemorySegment offsets = offsets(root);
            VarCharVector v = (VarCharVector) root.getVector(0);
            MemorySegment data = MemorySegment.ofAddress(v.getDataBuffer().memoryAddress()).reinterpret(6);
            HostBatch batch = new HostBatch();
            batch.after = () -> {
                offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 1 << 20);
                data.set(ValueLayout.JAVA_BYTE, 0, (byte) 'X');
            };
            try (ImportedArray device = asDevice(root, null, schema, ValidationLevel.DEFAULT, sizing)) {
                ImportedArray host = toHost(device.root(), device, sizing, batch);
                try (VectorSchemaRoot down = ArrowJava.importVectorSchemaRoot(allocator, host, null)) {
                    assertEquals(List.of("ab", "cde", "f"), values(down));
                }
            } finally {
                offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 6);
            }
        }
    }

    @Test
    void aViewBuiltHereIsMovedToItsCopiesWithoutAReread() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
                 ImportedArray source = ArrowC.importArray(schema, ea.segment(), ValidationLevel.DEFAULT)) {
                ArrayNode uploaded = source.root().relocated(Map.of()); // as an upload's view: not host-readable
                assertFalse(uploaded.isHostAccessible());
                HostBatch batch = new HostBatch();
                ImportedArray host = toHost(uploaded, null, sizing, batch);
                assertEquals(0, sizing.batches.size());
                assertEquals(1, batch.batches);
                try (VectorSchemaRoot down = ArrowJava.importVectorSchemaRoot(allocator, host, null)) {
                    assertEquals(List.of("ab", "cde", "f"), values(down));
                }
            }
        }
    }

    @Test
    void offsetsOfAViewBuiltHereCorruptedOnTheDeviceAreRefusedWhereArrowJavaWouldReadThem() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            MemorySegment offsets = offsets(root);
            try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
                 ImportedArray source = ArrowC.importArray(schema, ea.segment(), ValidationLevel.DEFAULT)) {
                ArrayNode uploaded = source.root().relocated(Map.of()); // as an upload's view
                HostBatch batch = new HostBatch();
                // the caller's own device work points the last value past the data buffer before the download
                batch.before = () -> offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 1 << 20);
                try {
                    ValidationException e = assertThrows(ValidationException.class,
                            () -> toHost(uploaded, null, sizing, batch));
                    assertEquals(Category.CONTENT, e.category());
                    assertEquals("children[0].buffers[2]", e.path());
                } finally {
                    offsets.setAtIndex(ValueLayout.JAVA_INT, 3, 6);
                }
            }
        }
        // tearDown: the downloaded block was freed
    }

    @Test
    void aViewBuiltHereWithoutLengthsIsRefusedBeforeAnyCopy() {
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier()) {
            SchemaNode schema = schemaOf(root, null);
            try (ExportedStruct ea = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null));
                 ImportedArray source = ArrowC.importArray(schema, ea.segment(), ValidationLevel.MINIMAL)) {
                ArrayNode unsized = source.root().relocated(Map.of());
                HostBatch batch = new HostBatch();
                assertThrows(UnsupportedFeatureException.class,
                        () -> toHost(unsized, null, sizing, batch));
                assertEquals(0, batch.batches);
            }
        }
    }

    // --- the accessor itself ---

    /** Host copies of every buffer under {@code root} (a device view, all sized), in {@code arena}. */
    private static HostCopies copyAll(ArrayNode root, Arena arena) {
        TreeMap<Long, MemorySegment> copies = new TreeMap<>();
        collect(root, n -> {
            for (int i = 0; i < n.bufferCount(); i++) {
                long len = n.bufferLength(i);
                if (!n.isBufferNull(i) && len > 0) {
                    MemorySegment copy = arena.allocate(len, 8);
                    MemorySegment.copy(n.bufferPointer(i).reinterpret(len), 0, copy, 0, len);
                    copies.put(n.bufferPointer(i).address(), copy);
                }
            }
        });
        return (address, size) -> {
            MemorySegment c = copies.get(address);
            return c == null || c.byteSize() < size ? null : c.asSlice(0, size);
        };
    }

    private static void collect(ArrayNode n, Consumer<ArrayNode> visit) {
        visit.accept(n);
        n.children().forEach(c -> collect(c, visit));
        if (n.dictionary() != null) {
            collect(n.dictionary(), visit);
        }
    }

    @Test
    void hostViewPointsEveryBufferAtItsCopyAndFreesTheCopiesOnceOnClose() {
        AtomicInteger freed = new AtomicInteger();
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier();
             Arena arena = Arena.ofConfined();
             ImportedArray device = asDevice(root, null, schemaOf(root, null), ValidationLevel.DEFAULT, sizing)) {
            HostCopies copies = copyAll(device.root(), arena);
            ImportedArray host = ImportedArray.ofHostCopies(device.root(), ValidationLevel.DEFAULT, copies, freed::incrementAndGet);
            ArrayNode column = host.root().children().get(0);
            ArrayNode onDevice = device.root().children().get(0);
            assertTrue(column.isHostAccessible());
            assertFalse(onDevice.isHostAccessible(), "the device view is left as it was");
            assertEquals(ValidationLevel.DEFAULT, host.validationLevel());
            assertEquals(DeviceKind.CPU, host.deviceType());
            for (int i = 0; i < 3; i++) {
                if (onDevice.isBufferNull(i)) {
                    assertTrue(column.isBufferNull(i), "a NULL buffer stays NULL");
                    continue;
                }
                long len = onDevice.bufferLength(i);
                assertEquals(len, column.bufferLength(i));
                assertEquals(copies.find(onDevice.bufferPointer(i).address(), len).address(), column.bufferPointer(i).address());
                assertEquals(-1, column.buffer(i).mismatch(onDevice.bufferPointer(i).reinterpret(len)), "same bytes");
            }
            MemorySegment held = column.buffer(2);
            host.close();
            host.close();
            assertEquals(1, freed.get(), "freed exactly once");
            assertEquals(NativeHandle.State.RELEASED, host.state());
            assertThrows(IllegalStateException.class, () -> held.get(ValueLayout.JAVA_BYTE, 0), "segments die with it");
            assertThrows(HandleClosedException.class, host::root);
        }
    }

    @Test
    void hostViewHandedToArrowJavaFreesTheCopiesWithTheLastBuffer() {
        AtomicInteger freed = new AtomicInteger();
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier();
             Arena arena = Arena.ofConfined();
             ImportedArray device = asDevice(root, null, schemaOf(root, null), ValidationLevel.DEFAULT, sizing)) {
            ImportedArray host = ImportedArray.ofHostCopies(device.root(), ValidationLevel.DEFAULT, copyAll(device.root(), arena),
                    freed::incrementAndGet);
            try (VectorSchemaRoot down = ArrowJava.importVectorSchemaRoot(allocator, host, null)) {
                assertEquals(NativeHandle.State.CONSUMED, host.state());
                assertEquals(List.of("ab", "cde", "f"), values(down));
                assertEquals(0, freed.get(), "held while Arrow Java holds the buffers");
            }
            assertEquals(1, freed.get(), "freed exactly once, with the last Arrow buffer");
        }
    }

    @Test
    void hostViewRefusesABufferNoCopyCoversInFullAndLeavesTheCopiesToTheCaller() {
        AtomicInteger freed = new AtomicInteger();
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier();
             Arena arena = Arena.ofConfined();
             ImportedArray device = asDevice(root, null, schemaOf(root, null), ValidationLevel.DEFAULT, sizing)) {
            HostCopies all = copyAll(device.root(), arena);
            long data = device.root().children().get(0).bufferPointer(2).address();
            HostCopies shortData = (address, size) -> address == data ? all.find(address, size - 1) : all.find(address, size);
            HostCopies noData = (address, size) -> address == data ? null : all.find(address, size);
            for (HostCopies copies : List.of(shortData, noData)) {
                ValidationException e = assertThrows(ValidationException.class,
                        () -> ImportedArray.ofHostCopies(device.root(), ValidationLevel.DEFAULT, copies, freed::incrementAndGet));
                assertEquals(Category.DEVICE, e.category());
                assertEquals("children[0].buffers[2]", e.path());
            }
            assertEquals(0, freed.get(), "the caller still owns the copies after a throw");
        }
    }

    @Test
    void hostViewRefusesUnknownLengthsAndNodesOtherThanTheRoot() {
        AtomicInteger freed = new AtomicInteger();
        try (VectorSchemaRoot root = strings("ab", "cde", "f"); HostMemoryCopier sizing = new HostMemoryCopier();
             Arena arena = Arena.ofConfined()) {
            SchemaNode schema = schemaOf(root, null);
            try (ImportedArray minimal = asDevice(root, null, schema, ValidationLevel.MINIMAL, sizing)) {
                HostCopies any = (address, size) -> arena.allocate(size + 1).asSlice(0, size);
                UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class,
                        () -> ImportedArray.ofHostCopies(minimal.root(), ValidationLevel.DEFAULT, any, freed::incrementAndGet));
                assertTrue(e.getMessage().startsWith("children[0].buffers[2]"), e.getMessage());
                ArrayNode sized = minimal.view(ValidationLevel.DEFAULT, sizing);
                assertThrows(InvalidArgumentException.class, () -> ImportedArray.ofHostCopies(sized.children().get(0),
                        ValidationLevel.DEFAULT, copyAll(sized, arena), freed::incrementAndGet));
            }
            assertEquals(0, freed.get());
        }
    }
}
