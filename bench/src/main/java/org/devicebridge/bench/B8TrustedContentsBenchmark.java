package org.devicebridge.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * B8: what the Arrow Java bridge's own content checks cost (issue 13 item 2). An array imported at DEFAULT
 * gets, before Arrow Java reads it, the FULL checks Arrow Java trusts (every offset, union id, run end,
 * dictionary index, view bound); one imported at FULL was checked at import. Rows, all from one batch of
 * {@code columns} x {@code rows} (schema reused, B2's setting):
 * <ul>
 *   <li>{@link #viewDefault} / {@link #viewFull}: export, import at that level into a confined arena, close
 *       (no Arrow Java): the import's own cost at each level.</li>
 *   <li>{@link #intoRootDefault}: export, import at DEFAULT, {@code importVectorSchemaRoot} (which runs the
 *       bridge's checks), close: B2's {@code intoRoot} for this batch.</li>
 *   <li>{@link #intoRootFull}: the same with the import at FULL (the bridge checks nothing again).</li>
 * </ul>
 * The bridge's extra cost at DEFAULT is {@code intoRootDefault} here against the same row of a build without
 * the checks; {@code intoRootFull} - {@code intoRootDefault} is what FULL adds beyond them (UTF-8 and the
 * rest). {@code kind=int64}: B2's non-null int64 columns (the checks are O(1) per column);
 * {@code kind=utf8}: non-null strings of 1 to 16 ASCII bytes (they read every offset).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B8TrustedContentsBenchmark {
    @Param({"int64", "utf8"})
    public String kind;
    @Param({"16"})
    public int columns;
    @Param({"1024", "65536"})
    public int rows;

    BufferAllocator allocator;
    VectorSchemaRoot root;
    Arena arena;
    MemorySegment array;
    MemorySegment schemaStruct;
    ImportedSchema importedSchema;

    @Setup(Level.Trial)
    public void setUp() {
        allocator = new RootAllocator();
        root = switch (kind) {
            case "int64" -> Batches.int64Root(allocator, columns, rows);
            case "utf8" -> utf8Root(allocator, columns, rows);
            default -> throw new IllegalArgumentException("kind must be int64 or utf8, not " + kind);
        };
        arena = Arena.ofShared();
        array = ArrowArray.allocate(arena);
        schemaStruct = ArrowSchema.allocate(arena);
        ArrowJava.exportSchema(root.getSchema(), null, schemaStruct);
        importedSchema = ArrowC.importSchema(schemaStruct);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        importedSchema.close();
        root.close();
        arena.close();
        Batches.closeCheckingLeaks(allocator);
    }

    /** {@code columns} non-null utf8 columns of {@code rows} seeded ASCII strings of 1 to 16 bytes. */
    static VectorSchemaRoot utf8Root(BufferAllocator allocator, int columns, int rows) {
        SplittableRandom random = new SplittableRandom(Batches.SEED);
        byte[] text = "abcdefghijklmnopqrstuvwxyz0123456789".getBytes(StandardCharsets.US_ASCII);
        return Batches.root(columns, rows, c -> {
            VarCharVector v = new VarCharVector("s" + c, allocator);
            v.allocateNew(rows * 9L, rows);
            for (int i = 0; i < rows; i++) {
                int from = random.nextInt(text.length - 16);
                v.setSafe(i, text, from, 1 + random.nextInt(16));
            }
            return v;
        });
    }

    private ImportedArray exportAndImport(ValidationLevel level, Arena scope) {
        ArrowJava.exportRoot(root, null, array, null);
        return ArrowC.importArray(importedSchema.root(), array, level, scope);
    }

    @Benchmark
    public long viewDefault() {
        try (Arena scope = Arena.ofConfined()) {
            return exportAndImport(ValidationLevel.DEFAULT, scope).root().length();
        }
    }

    @Benchmark
    public long viewFull() {
        try (Arena scope = Arena.ofConfined()) {
            return exportAndImport(ValidationLevel.FULL, scope).root().length();
        }
    }

    @Benchmark
    public int intoRootDefault() {
        try (VectorSchemaRoot r = ArrowJava.importVectorSchemaRoot(allocator,
                exportAndImport(ValidationLevel.DEFAULT, null), null)) {
            return r.getRowCount();
        }
    }

    @Benchmark
    public int intoRootFull() {
        try (VectorSchemaRoot r = ArrowJava.importVectorSchemaRoot(allocator,
                exportAndImport(ValidationLevel.FULL, null), null)) {
            return r.getRowCount();
        }
    }
}
