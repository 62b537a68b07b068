package org.devicebridge.bench;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;

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
        List<FieldVector> vectors = new ArrayList<>(columns);
        for (int c = 0; c < columns; c++) {
            BigIntVector v = new BigIntVector("c" + c, allocator);
            v.allocateNew(rows);
            ArrowBuf data = v.getDataBuffer();
            for (long i = 0; i < rows; i++) {
                data.setLong(i * 8, random.nextLong());
            }
            ArrowBuf validity = v.getValidityBuffer();
            validity.setOne(0, validity.capacity());
            v.setValueCount(rows);
            vectors.add(v);
        }
        VectorSchemaRoot root = new VectorSchemaRoot(vectors);
        root.setRowCount(rows);
        return root;
    }
}
