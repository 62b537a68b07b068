package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.memory.netty.NettyAllocationManager;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrayData;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B2: CPU export + import + release of a record batch of int64 columns, beside the same work in C
 * ({@code b2_export_import_release} in {@code b2_baseline.c}, {@link #cBaseline}), arrow-c-data's
 * {@code Data.exportVectorSchemaRoot} + {@code Data.importVectorSchemaRoot} of the same batch, and a bare
 * downcall (B1's), so that every ratio comes from one run. Every state is per thread, so {@code -t 16}
 * measures 16 independent producer/consumer pairs.
 *
 * <ul>
 *   <li>{@link #newBatch}: the batch built anew (allocated, filled) and freed: the allocation manager alone.</li>
 *   <li>{@link #view}: {@code ArrowJava.exportRoot} into caller-allocated structs, then
 *       {@code ArrowC.importArray(schema, ptr, DEFAULT, arena)} into a confined arena per batch (the
 *       flat view), whose close releases the struct: the fastest way a user writes it.</li>
 *   <li>{@link #exportRelease}: the export alone, into a library-allocated struct released by its handle's
 *       close (a diagnostic for the export's share of the view).</li>
 *   <li>{@link #viewRead} and {@link #viewDefaultRead}: what a user writes, with one value read (value 0 of
 *       column 0, through {@code buffer(1)}): the view in a caller's confined arena per batch
 *       ({@code importArray(schema, ptr, DEFAULT, arena)}), and the default path
 *       ({@code try (ImportedArray a = importArray(schema, ptr, DEFAULT))}, no arena argument: a confined scope
 *       made by the first segment, closed by the handle's {@code close()}).</li>
 *   <li>{@link #streamBatchDefault}: a batch of an {@code ArrowArrayStream} produced by the C baseline's code
 *       ({@code b2_stream_open}) whose schema was read once at import: {@code next(DEFAULT)}, one value read,
 *       close; beside {@link #cStreamBaseline}, the C consumer of the same stream ({@code b2_stream_loop}).</li>
 *   <li>{@link #intoRoot}: the same export, import at DEFAULT without an arena (a hand-over to Arrow Java
 *       needs a handle-owned scope: an import bound to the caller's arena cannot change owner), then
 *       {@code ArrowJava.importVectorSchemaRoot} (no copy), then close the root (which releases the
 *       struct).</li>
 *   <li>{@link #arrowCData}: arrow-c-data's JNI-free Java implementation: export into
 *       {@code org.apache.arrow.c.ArrowArray}/{@code ArrowSchema} (allocated per batch: its import frees them),
 *       import into a new root, close it. With the schema reused it exports the array alone and imports into
 *       a root kept across batches ({@code Data.importIntoVectorSchemaRoot}), the cheapest path arrow-c-data
 *       offers.</li>
 *   <li>{@link #cBaseline}: the C producer and consumer of the same batch (shallow export, move, the DEFAULT
 *       checks for this layout, release), {@value #C_OPS} batches per downcall.</li>
 * </ul>
 * {@code memory=netty|ffm}: the batch's allocator allocates through Netty's allocation manager or through
 * devicebridge's FFM one ({@code ArrowMemory.newRootAllocator()}); it matters where Arrow Java allocates per
 * batch ({@link #arrowCData}'s structs and {@link #newBatch}); target: FFM within 10% of Netty.
 * {@code schema=included}: the schema is exported and imported with every batch; {@code schema=reused}: it is
 * exported and imported once in setup and every batch is imported against it (the C consumer knows it).
 * Targets (16 columns x 1024 rows): view / cBaseline <= 3 and <= 2 KB allocated per batch (-prof gc), schema
 * reused; viewDefaultRead / cBaseline <= 3 and <= 1.5x viewRead; streamBatchDefault / cStreamBaseline <= 3; arrowCData / intoRoot >= 10 with the schema reused, >= 5 with it included; bytes allocated per
 * batch of intoRoot <= 0.25 of arrowCData's; with 16 threads, time per batch <= 1.5x one thread's.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B2ExportImportBenchmark {

    /** C loop iterations per {@link #cBaseline} invocation: one downcall, many operations. */
    static final int C_OPS = 100;

    /**
     * One seeded batch and the structs it travels through (allocated once, reused every operation); one per
     * thread, so that {@code -t 16} measures 16 independent producer/consumer pairs.
     */
    @State(Scope.Thread)
    public static class Batch {
        @Param({"1", "16", "256"})
        public int columns;
        @Param({"1024", "1048576"})
        public int rows;
        @Param({"included", "reused"})
        public String schema;
        /** The allocation manager of the batch's allocator: Netty's ({@code arrow-memory-netty}) or FFM. */
        @Param({"netty", "ffm"})
        public String memory;

        BufferAllocator allocator;
        VectorSchemaRoot root;
        Arena arena;
        MemorySegment array;
        MemorySegment schemaStruct;
        ImportedSchema importedSchema;
        boolean includeSchema;
        VectorSchemaRoot cTarget;

        @Setup(Level.Trial)
        public void setUp() {
            includeSchema = switch (schema) {
                case "included" -> true;
                case "reused" -> false;
                default -> throw new IllegalArgumentException("schema must be included or reused, not " + schema);
            };
            allocator = switch (memory) {
                case "netty" -> new RootAllocator(RootAllocator.configBuilder()
                        .allocationManagerFactory(NettyAllocationManager.FACTORY).build());
                case "ffm" -> ArrowMemory.newRootAllocator();
                default -> throw new IllegalArgumentException("memory must be netty or ffm, not " + memory);
            };
            root = Batches.int64Root(allocator, columns, rows);
            arena = Arena.ofShared();
            array = ArrowArray.allocate(arena);
            schemaStruct = ArrowSchema.allocate(arena);
            if (!includeSchema) {
                ArrowJava.exportSchema(root.getSchema(), null, schemaStruct);
                importedSchema = ArrowC.importSchema(schemaStruct);
                cTarget = VectorSchemaRoot.create(root.getSchema(), allocator);
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            if (importedSchema != null) {
                importedSchema.close();
            }
            if (cTarget != null) {
                cTarget.close();
            }
            root.close();
            arena.close();
            Batches.closeCheckingLeaks(allocator);
        }

        /**
         * Exports the batch into the reused structs and imports it at DEFAULT, bound to {@code scope} (the
         * caller's arena, whose close releases it), or handle-owned when {@code scope} is null.
         */
        ImportedArray exportAndImport(Arena scope) {
            if (includeSchema) {
                ArrowJava.exportRoot(root, null, array, schemaStruct);
                try (ImportedSchema s = ArrowC.importSchema(schemaStruct)) {
                    return ArrowC.importArray(s.root(), array, ValidationLevel.DEFAULT, scope);
                }
            }
            ArrowJava.exportRoot(root, null, array, null);
            return ArrowC.importArray(importedSchema.root(), array, ValidationLevel.DEFAULT, scope);
        }
    }

    /**
     * The same batch as {@link Batch} (16 int64 columns, all valid) in segments of a shared arena, no Arrow Java:
     * what {@link #viewFfmDefaultRead} exports with the FFM-only export, as the C baseline exports from its own
     * buffers. The schema is made once ({@code SchemaNode.of}), as the other rows reuse theirs.
     */
    @State(Scope.Thread)
    public static class FfmBatch {
        @Param({"1", "16", "256"})
        public int columns;
        @Param({"1024", "1048576"})
        public int rows;

        Arena arena;
        SchemaNode schema;
        MemorySegment[] validity;
        MemorySegment[] values;
        MemorySegment array;

        @Setup(Level.Trial)
        public void setUp() {
            arena = Arena.ofShared();
            java.util.List<SchemaNode> fields = new java.util.ArrayList<>();
            validity = new MemorySegment[columns];
            values = new MemorySegment[columns];
            java.util.SplittableRandom random = new java.util.SplittableRandom(1);
            for (int c = 0; c < columns; c++) {
                fields.add(SchemaNode.of("c" + c, "l", java.util.List.of()).withFlags(SchemaNode.FLAG_NULLABLE));
                validity[c] = arena.allocate((rows + 7) / 8, 64);
                validity[c].fill((byte) 0xff);
                values[c] = arena.allocate(8L * rows, 64);
                for (long i = 0; i < rows; i++) {
                    values[c].setAtIndex(ValueLayout.JAVA_LONG, i, random.nextLong());
                }
            }
            schema = SchemaNode.of("", "+s", fields);
            array = ArrowArray.allocate(arena);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            arena.close();
        }

        /** The batch described anew (as a producer describes each batch) and exported into the reused struct. */
        void export() {
            ArrayData[] children = new ArrayData[columns];
            for (int c = 0; c < columns; c++) {
                children[c] = ArrayData.of(rows, 0, java.util.List.of(validity[c], values[c]));
            }
            ArrayData batch = ArrayData.of(rows, 0, java.util.List.of(MemorySegment.NULL))
                    .withChildren(java.util.Arrays.asList(children));
            ArrowC.exportArray(schema, batch, array, null);
        }
    }

    /** The same batch built in C, per thread, for {@link #cBaseline}. */
    @State(Scope.Thread)
    public static class CBatch {
        @Param({"1", "16", "256"})
        public int columns;
        @Param({"1024", "1048576"})
        public int rows;

        @Setup(Level.Trial)
        public void setUp() {
            CBaseline.prepareB2(columns, rows);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            CBaseline.freeB2();
        }
    }

    /**
     * A C stream of the thread's C batch ({@code b2_stream_open}), imported once (its schema read once), per
     * thread, for {@link #streamBatchDefault}.
     */
    @State(Scope.Thread)
    public static class CStream {
        @Param({"1", "16", "256"})
        public int columns;
        @Param({"1024", "1048576"})
        public int rows;

        Arena arena;
        ImportedArrayStream stream;

        @Setup(Level.Trial)
        public void setUp() {
            CBaseline.prepareB2(columns, rows);
            arena = Arena.ofConfined();
            MemorySegment struct = ArrowC.allocateArrayStream(arena);
            CBaseline.openB2Stream(columns, struct);
            stream = ArrowC.importStream(struct);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            stream.close();
            arena.close();
            CBaseline.freeB2();
        }
    }

    @Benchmark
    public void bareDowncall() throws Throwable {
        Batches.BARE.invokeExact(Batches.FREE, MemorySegment.NULL);
    }

    /**
     * The same work in C ({@code b2_export_import_release}): shallow export, move, DEFAULT-level checks and
     * release, {@value #C_OPS} times per downcall; the schema is known to the C consumer, as when reused.
     */
    @Benchmark
    @OperationsPerInvocation(C_OPS)
    public long cBaseline(CBatch c) throws Throwable {
        return CBaseline.checked("b2_export_import_release", (long) CBaseline.B2_LOOP.invokeExact(c.columns, (long) C_OPS));
    }

    /** Builds the batch anew in the batch's allocator (every column allocated and filled), then frees it. */
    @Benchmark
    public int newBatch(Batch b) {
        try (VectorSchemaRoot r = Batches.int64Root(b.allocator, b.columns, b.rows)) {
            return r.getRowCount();
        }
    }

    @Benchmark
    public long view(Batch b) {
        try (Arena scope = Arena.ofConfined()) {
            return b.exportAndImport(scope).root().length();
        }
    }

    /**
     * The C consumer of the C stream ({@code b2_stream_loop}): schema read once, then get_next, move, DEFAULT
     * checks, one value read and release, {@value #C_OPS} batches per downcall.
     */
    @Benchmark
    @OperationsPerInvocation(C_OPS)
    public long cStreamBaseline(CBatch c) throws Throwable {
        return CBaseline.checked("b2_stream_loop", (long) CBaseline.B2_STREAM_LOOP.invokeExact(c.columns, (long) C_OPS));
    }

    /** Value 0 of column 0: the one value every benchmark that reads reads. */
    private static long firstValue(ImportedArray a) {
        return a.root().children().get(0).buffer(1).get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
    }

    /**
     * The export alone (a diagnostic for the export's share of {@link #viewRead}): the batch exported into a
     * struct this library allocates ({@code ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(root, null, out, null))}),
     * then released by the handle's close.
     */
    @Benchmark
    public long exportRelease(Batch b) {
        try (ExportedStruct e = ExportedStruct.allocateArray(out -> ArrowJava.exportRoot(b.root, null, out, null))) {
            return e.segment().get(ValueLayout.JAVA_LONG, 0);
        }
    }

    @Benchmark
    public long viewRead(Batch b) {
        try (Arena scope = Arena.ofConfined()) {
            return firstValue(b.exportAndImport(scope));
        }
    }

    @Benchmark
    public long viewDefaultRead(Batch b) {
        try (ImportedArray a = b.exportAndImport(null)) {
            return firstValue(a);
        }
    }

    /**
     * {@link #viewDefaultRead} with the FFM-only export of segments ({@code ArrowC.exportArray}) instead of Arrow
     * Java's: what the import costs beside C when the export, like C's, starts from plain buffers.
     */
    @Benchmark
    public long viewFfmDefaultRead(FfmBatch f) {
        f.export();
        try (ImportedArray a = ArrowC.importArray(f.schema, f.array, ValidationLevel.DEFAULT)) {
            return firstValue(a);
        }
    }

    @Benchmark
    public long streamBatchDefault(CStream s) {
        try (ImportedArray a = s.stream.next(ValidationLevel.DEFAULT)) {
            return firstValue(a);
        }
    }

    @Benchmark
    public int intoRoot(Batch b) {
        try (VectorSchemaRoot r = ArrowJava.importVectorSchemaRoot(b.allocator, b.exportAndImport(null), null)) {
            return r.getRowCount();
        }
    }

    @Benchmark
    public int arrowCData(Batch b) {
        // arrow-c-data's import frees the C structs it imported from (ArrowArray/ArrowSchema.close()), so they
        // cannot be reused: new ones per batch, as its documentation does.
        try (org.apache.arrow.c.ArrowArray cArray = org.apache.arrow.c.ArrowArray.allocateNew(b.allocator)) {
            if (b.includeSchema) {
                try (org.apache.arrow.c.ArrowSchema cSchema = org.apache.arrow.c.ArrowSchema.allocateNew(b.allocator)) {
                    Data.exportVectorSchemaRoot(b.allocator, b.root, null, cArray, cSchema);
                    try (VectorSchemaRoot r = Data.importVectorSchemaRoot(b.allocator, cArray, cSchema, null)) {
                        return r.getRowCount();
                    }
                }
            }
            Data.exportVectorSchemaRoot(b.allocator, b.root, null, cArray);
            Data.importIntoVectorSchemaRoot(b.allocator, cArray, b.cTarget, null);
            int n = b.cTarget.getRowCount();
            b.cTarget.clear();
            return n;
        }
    }
}
