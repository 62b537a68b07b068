package org.devicebridge.selfcheck;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ViewVarCharVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowSchema;

/**
 * Self-check section for the Arrow C interfaces on the CPU: a sample table with one column per type
 * family (nulls included) goes Arrow Java -> C -> Arrow Java through the C Data interface, the C Device
 * Data interface (CPU) and the C Stream interface, validated at FULL, and must come back equal. Prints
 * the types, rows, bytes and the time of one round trip.
 */
final class ArrowSelfCheck implements SelfCheckSection {
    private static final int ROWS = 4096;
    private static final int REPEATS = 200;

    @Override
    public String name() {
        return "Arrow C Data / Device / Stream (CPU)";
    }

    @Override
    public void run(Report report) {
        // devicebridge's FFM allocation manager, not Arrow Java's default one: with the README's
        // dependencies (arrow-vector, arrow-memory-core, no Netty) `new RootAllocator()` cannot initialise.
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             VectorSchemaRoot table = sampleTable(allocator)) {
            long bytes = 0;
            for (FieldVector v : table.getFieldVectors()) {
                bytes += v.getBufferSize();
            }
            List<String> types = new ArrayList<>();
            for (Field f : table.getSchema().getFields()) {
                types.add(f.getType().toString());
            }
            report.line("sample table", table.getFieldVectors().size() + " columns, " + ROWS + " rows, "
                    + bytes + " bytes");
            report.line("types", String.join(", ", types));
            check(report, "C Data round trip", allocator, table, this::viaCData);
            check(report, "C Device (CPU)", allocator, table, this::viaCDevice);
            check(report, "C Stream", allocator, table, this::viaCStream);
            report.check("allocator back to 0", true, "checked at close");
        }
    }

    private interface RoundTrip {
        VectorSchemaRoot apply(BufferAllocator allocator, VectorSchemaRoot table);
    }

    private void check(Report report, String name, BufferAllocator allocator, VectorSchemaRoot table, RoundTrip trip) {
        boolean equal;
        try (VectorSchemaRoot back = trip.apply(allocator, table)) {
            equal = back.equals(table);
        }
        long start = System.nanoTime();
        for (int i = 0; i < REPEATS; i++) {
            trip.apply(allocator, table).close();
        }
        double micros = (System.nanoTime() - start) / 1e3 / REPEATS;
        report.check(name, equal, String.format(Locale.ROOT,
                "values equal after export -> import (FULL) -> Arrow Java; %.1f us per round trip", micros));
    }

    private VectorSchemaRoot viaCData(BufferAllocator allocator, VectorSchemaRoot table) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment schema = ArrowSchema.allocate(arena);
            MemorySegment array = ArrowArray.allocate(arena);
            ArrowJava.exportRoot(table, null, array, schema);
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                ImportedArray a = ArrowC.importArray(s.root(), array, ValidationLevel.FULL);
                return ArrowJava.importVectorSchemaRoot(allocator, a, null);
            }
        }
    }

    private VectorSchemaRoot viaCDevice(BufferAllocator allocator, VectorSchemaRoot table) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment schema = ArrowSchema.allocate(arena);
            MemorySegment array = ArrowDeviceArray.allocate(arena);
            ArrowJava.exportSchema(table.getSchema(), null, schema);
            ArrowJava.exportDeviceArray(table, null, array);
            try (ImportedSchema s = ArrowC.importSchema(schema)) {
                ImportedArray a = ArrowC.importDeviceArray(s.root(), array, ValidationLevel.FULL);
                return ArrowJava.importVectorSchemaRoot(allocator, a, null);
            }
        }
    }

    private VectorSchemaRoot viaCStream(BufferAllocator allocator, VectorSchemaRoot table) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stream = ArrowArrayStream.allocate(arena);
            Iterator<VectorSchemaRoot> one = List.of(table).iterator();
            ArrowJava.exportStream(table.getSchema(), one, null, stream);
            try (ImportedArrayStream s = ArrowC.importStream(stream)) {
                ImportedArray a = s.next(ValidationLevel.FULL);
                VectorSchemaRoot back = ArrowJava.importVectorSchemaRoot(allocator, a, null);
                if (s.next(ValidationLevel.FULL) != null) {
                    back.close();
                    throw new IllegalStateException("the stream returned more than one batch");
                }
                return back;
            }
        }
    }

    /** One column per type family; every 7th value null. */
    static VectorSchemaRoot sampleTable(BufferAllocator a) {
        List<FieldVector> columns = new ArrayList<>();
        columns.add(fill(new SmallIntVector("int16", a), (v, i) -> v.set(i, (short) i)));
        columns.add(fill(new IntVector("int32", a), (v, i) -> v.set(i, i * 3)));
        columns.add(fill(new BigIntVector("int64", a), (v, i) -> v.set(i, (long) i << 33)));
        columns.add(fill(new Float4Vector("float32", a), (v, i) -> v.set(i, i / 4f)));
        columns.add(fill(new Float8Vector("float64", a), (v, i) -> v.set(i, i / 8d)));
        columns.add(fill(new BitVector("bool", a), (v, i) -> v.set(i, i % 3 == 0 ? 1 : 0)));
        columns.add(fill(new DecimalVector("decimal128", a, 20, 4), (v, i) -> v.set(i, BigDecimal.valueOf(i * 1000L + 7, 4))));
        columns.add(fill(new DateDayVector("date32", a), (v, i) -> v.set(i, 19000 + i)));
        columns.add(fill(new TimeStampMicroTZVector("timestamp_us_utc", a, "UTC"), (v, i) -> v.set(i, 1_700_000_000_000_000L + i)));
        columns.add(fill(new VarCharVector("utf8", a), (v, i) -> v.setSafe(i, text(i))));
        columns.add(fill(new LargeVarCharVector("large_utf8", a), (v, i) -> v.setSafe(i, text(i))));
        columns.add(fill(new ViewVarCharVector("utf8_view", a), (v, i) -> v.setSafe(i, text(i * 5))));
        columns.add(fill(new VarBinaryVector("binary", a), (v, i) -> v.setSafe(i, text(i))));
        columns.add(fill(new FixedSizeBinaryVector("fixed_binary", a, 4), (v, i) -> v.set(i, new byte[] {(byte) i, 1, 2, 3})));
        columns.add(list(a));
        columns.add(struct(a));
        VectorSchemaRoot root = new VectorSchemaRoot(columns);
        root.setRowCount(ROWS);
        return root;
    }

    private interface Setter<V extends FieldVector> {
        void set(V vector, int index);
    }

    private static <V extends FieldVector> V fill(V v, Setter<V> setter) {
        v.setInitialCapacity(ROWS);
        v.allocateNew();
        for (int i = 0; i < ROWS; i++) {
            if (i % 7 == 3) {
                v.setNull(i);
            } else {
                setter.set(v, i);
            }
        }
        v.setValueCount(ROWS);
        return v;
    }

    private static byte[] text(int i) {
        return ("value-" + i + (i % 11 == 0 ? " with a longer tail past twelve bytes" : "")).getBytes(StandardCharsets.UTF_8);
    }

    private static ListVector list(BufferAllocator a) {
        ListVector v = ListVector.empty("list_int32", a);
        UnionListWriter w = v.getWriter();
        for (int i = 0; i < ROWS; i++) {
            w.setPosition(i);
            if (i % 7 == 3) {
                continue;
            }
            w.startList();
            for (int j = 0; j < i % 4; j++) {
                w.integer().writeInt(i + j);
            }
            w.endList();
        }
        v.setValueCount(ROWS);
        for (int i = 3; i < ROWS; i += 7) {
            v.setNull(i);
        }
        return v;
    }

    private static StructVector struct(BufferAllocator a) {
        StructVector v = StructVector.empty("struct", a);
        IntVector x = v.addOrGet("x", FieldType.nullable(new ArrowType.Int(32, true)), IntVector.class);
        VarCharVector y = v.addOrGet("y", FieldType.nullable(ArrowType.Utf8.INSTANCE), VarCharVector.class);
        v.allocateNew();
        for (int i = 0; i < ROWS; i++) {
            if (i % 7 == 3) {
                v.setNull(i);
                x.setNull(i);
                y.setNull(i);
            } else {
                v.setIndexDefined(i);
                x.setSafe(i, -i);
                y.setSafe(i, text(i));
            }
        }
        x.setValueCount(ROWS);
        y.setValueCount(ROWS);
        v.setValueCount(ROWS);
        return v;
    }

}
