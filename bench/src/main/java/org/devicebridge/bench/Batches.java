package org.devicebridge.bench;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntFunction;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;

/** Shared benchmark helpers: seeded int64 batches and the bare-downcall baseline (same call as B1's). */
final class Batches {
    static final long SEED = 0x5EEDL;
    private static final Linker LINKER = Linker.nativeLinker();
    static final MemorySegment FREE = LINKER.defaultLookup().find("free").orElseThrow();
    static final MethodHandle BARE = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    private Batches() {}

    /** {@code columns} non-null int64 columns c0..cN of {@code rows} seeded values; the caller closes the root. */
    static VectorSchemaRoot int64Root(BufferAllocator allocator, int columns, int rows) {
        SplittableRandom random = new SplittableRandom(SEED);
        return root(columns, rows, c -> {
            BigIntVector v = new BigIntVector("c" + c, allocator);
            v.allocateNew(rows);
            ArrowBuf data = v.getDataBuffer();
            for (long i = 0; i < rows; i++) {
                data.setLong(i * 8, random.nextLong());
            }
            ArrowBuf validity = v.getValidityBuffer();
            validity.setOne(0, validity.capacity());
            return v;
        });
    }

    /**
     * A root of the {@code columns} vectors {@code column} makes (given 0, 1, ... in order, each filled with
     * {@code rows} values), their value counts and the root's row count set to {@code rows}; the caller
     * closes the root.
     */
    static VectorSchemaRoot root(int columns, int rows, IntFunction<FieldVector> column) {
        List<FieldVector> vectors = new ArrayList<>(columns);
        for (int c = 0; c < columns; c++) {
            FieldVector v = column.apply(c);
            v.setValueCount(rows);
            vectors.add(v);
        }
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }

    /** Closes {@code allocator}, then fails if the benchmark left Arrow memory allocated in it. */
    static void closeCheckingLeaks(BufferAllocator allocator) {
        long leaked = allocator.getAllocatedMemory();
        allocator.close();
        if (leaked != 0) {
            throw new IllegalStateException("benchmark leaked " + leaked + " bytes of Arrow memory");
        }
    }

    /**
     * The self-check's Arrow-on-CUDA sample ({@code selfcheck.CudaArrowSelfCheck.sample}): integers with nulls,
     * doubles, booleans, strings with nulls, lists of integers, {@code rows} rows (1 << 20: about 36 MB); the
     * caller closes the root.
     *
     * <p>A copy, kept in step by hand: core has no home both can reach. The self-check package may have one
     * public class, its main ({@code PackageLayoutTest}), and that class cannot carry an Arrow Java type (the
     * launcher resolves every method signature of the main class, and the self-check must start without
     * Arrow Java); {@code internal} may not import Arrow Java; and test data is no public API.
     */
    static VectorSchemaRoot selfCheckSample(BufferAllocator allocator, int rows) {
        IntVector ints = new IntVector("ints", allocator);
        Float8Vector doubles = new Float8Vector("doubles", allocator);
        BitVector bools = new BitVector("bools", allocator);
        VarCharVector text = new VarCharVector("text", allocator);
        ListVector lists = ListVector.empty("lists", allocator);
        List<FieldVector> vectors = List.of(ints, doubles, bools, text, lists);
        try {
            ints.allocateNew(rows);
            doubles.allocateNew(rows);
            bools.allocateNew(rows);
            text.allocateNew(rows * 8L, rows);
            UnionListWriter w = lists.getWriter();
            for (int i = 0; i < rows; i++) {
                if (i % 7 == 0) {
                    ints.setNull(i);
                    text.setNull(i);
                } else {
                    ints.set(i, i * 31);
                    text.setSafe(i, ("row" + i).getBytes(StandardCharsets.UTF_8));
                }
                doubles.set(i, i * 0.5);
                bools.set(i, i % 3 == 0 ? 1 : 0);
                w.setPosition(i);
                w.startList();
                for (int k = 0; k < i % 4; k++) {
                    w.integer().writeInt(i + k);
                }
                w.endList();
            }
            for (FieldVector v : vectors) {
                v.setValueCount(rows);
            }
            VectorSchemaRoot root = new VectorSchemaRoot(vectors);
            root.setRowCount(rows);
            return root;
        } catch (RuntimeException | Error e) {
            vectors.forEach(FieldVector::close);
            throw e;
        }
    }
}
