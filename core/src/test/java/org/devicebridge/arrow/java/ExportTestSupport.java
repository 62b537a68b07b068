package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.UuidVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VariableWidthFieldVector;
import org.apache.arrow.vector.complex.DenseUnionVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.complex.LargeListViewVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.ListViewVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.RunEndEncodedVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.complex.impl.UnionMapWriter;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.holders.NullableBigIntHolder;
import org.apache.arrow.vector.holders.NullableIntHolder;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.IntervalUnit;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.Types.MinorType;
import org.apache.arrow.vector.types.UnionMode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.foreign.StreamExport;
import org.devicebridge.internal.HandleTracker;

/**
 * Builders of Arrow Java vectors for every type family, and the leak bookkeeping every export test checks
 * (public for the tests of {@code arrow.cuda}, which export through this package).
 */
public final class ExportTestSupport {
    private ExportTestSupport() {}

    /** Counters captured before a test; {@link #assertNothingLeaked} compares after it. */
    public static final class Baseline {
        final int liveNodes = ExportTree.liveNodes();
        final int streams = StreamExport.liveStreams();
        final long stale = staleReleases();
        final long handles = HandleTracker.liveHandles();

        public void assertNothingLeaked(BufferAllocator allocator) {
            assertEquals(liveNodes, ExportTree.liveNodes(), "every exported node released exactly once");
            assertEquals(streams, StreamExport.liveStreams(), "every exported stream released");
            assertEquals(stale, staleReleases(), "no release called twice");
            assertEquals(handles, HandleTracker.liveHandles(), "no live handle left");
            assertEquals(0, allocator.getAllocatedMemory(), "Arrow allocator back to 0");
        }
    }

    /** Release calls of exported structs and streams that found nothing to release. */
    private static long staleReleases() {
        return ExportTree.staleReleases() + StreamExport.staleReleases();
    }

    /** Exported {@code ArrowArray} nodes (Arrow Java and FFM-only exports alike) not released yet. */
    public static int exportedArrays() {
        return Math.toIntExact(ExportTree.ARRAY.liveNodes());
    }

    /** Exported {@code ArrowSchema} nodes not released yet. */
    static int exportedSchemas() {
        return Math.toIntExact(ExportTree.SCHEMA.liveNodes());
    }

    /** Exported {@code ArrowArray} nodes released (each once) since the JVM started. */
    public static long arrayReleases() {
        return ExportTree.ARRAY.releases();
    }

    /** Exported {@code ArrowSchema} nodes released (each once) since the JVM started. */
    static long schemaReleases() {
        return ExportTree.SCHEMA.releases();
    }

    public static BufferAllocator allocator() {
        return new RootAllocator();
    }

    static boolean isNull(boolean nulls, int i) {
        return nulls && i % 3 == 1;
    }

    static FieldType nullable(ArrowType t) {
        return FieldType.nullable(t);
    }

    /** A fixed-width vector with small deterministic values (so every logical type reads them back sanely). */
    static FieldVector fixed(BufferAllocator a, String name, ArrowType type, int rows, boolean nulls) {
        FieldVector v = nullable(type).createNewSingleVector(name, a, null);
        if (v instanceof BitVector bits) {
            bits.allocateNew(rows);
            for (int i = 0; i < rows; i++) {
                if (isNull(nulls, i)) {
                    bits.setNull(i);
                } else {
                    bits.set(i, i % 2);
                }
            }
            bits.setValueCount(rows);
            return bits;
        }
        BaseFixedWidthVector f = (BaseFixedWidthVector) v;
        f.allocateNew(Math.max(rows, 1));
        int width = f.getTypeWidth();
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                f.setNull(i);
                continue;
            }
            long value = i * 1000L + 7;
            if (type instanceof ArrowType.Date d && d.getUnit() == DateUnit.MILLISECOND) {
                value *= 86_400_000L; // date64 holds whole days (FULL validation checks it)
            }
            for (int b = 0; b < width; b++) {
                f.getDataBuffer().setByte((long) i * width + b, b < 8 ? (byte) (value >>> (8 * b)) : 0);
            }
            BitVectorHelper.setBit(f.getValidityBuffer(), i);
        }
        f.setValueCount(rows);
        return f;
    }

    static String text(int i) {
        // mixes short strings (inlined in views) and long ones (in variadic buffers)
        return i % 2 == 0 ? "s" + i : "a rather long string number " + i + " that is not inlined";
    }

    static FieldVector variable(BufferAllocator a, String name, ArrowType type, int rows, boolean nulls) {
        VariableWidthFieldVector v = (VariableWidthFieldVector) nullable(type).createNewSingleVector(name, a, null);
        v.allocateNew();
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                v.setNull(i);
            } else {
                v.setSafe(i, text(i).getBytes(StandardCharsets.UTF_8));
            }
        }
        v.setValueCount(rows);
        return v;
    }

    public static List<FieldVector> family(String family, BufferAllocator a, int rows, boolean nulls, DictionaryProvider.MapDictionaryProvider dictionaries) {
        List<FieldVector> out = new ArrayList<>();
        switch (family) {
            case "integers" -> {
                for (int bw : new int[] {8, 16, 32, 64}) {
                    out.add(fixed(a, "i" + bw, new ArrowType.Int(bw, true), rows, nulls));
                    out.add(fixed(a, "u" + bw, new ArrowType.Int(bw, false), rows, nulls));
                }
            }
            case "floats" -> {
                out.add(fixed(a, "f16", new ArrowType.FloatingPoint(FloatingPointPrecision.HALF), rows, nulls));
                out.add(fixed(a, "f32", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), rows, nulls));
                out.add(fixed(a, "f64", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), rows, nulls));
            }
            case "bool" -> out.add(fixed(a, "b", ArrowType.Bool.INSTANCE, rows, nulls));
            case "decimals" -> {
                out.add(fixed(a, "d128", new ArrowType.Decimal(38, 5, 128), rows, nulls));
                out.add(fixed(a, "d256", new ArrowType.Decimal(60, 7, 256), rows, nulls));
            }
            case "temporal" -> {
                out.add(fixed(a, "dateDay", new ArrowType.Date(DateUnit.DAY), rows, nulls));
                out.add(fixed(a, "dateMs", new ArrowType.Date(DateUnit.MILLISECOND), rows, nulls));
                out.add(fixed(a, "timeS", new ArrowType.Time(TimeUnit.SECOND, 32), rows, nulls));
                out.add(fixed(a, "timeMs", new ArrowType.Time(TimeUnit.MILLISECOND, 32), rows, nulls));
                out.add(fixed(a, "timeUs", new ArrowType.Time(TimeUnit.MICROSECOND, 64), rows, nulls));
                out.add(fixed(a, "timeNs", new ArrowType.Time(TimeUnit.NANOSECOND, 64), rows, nulls));
                out.add(fixed(a, "tsS", new ArrowType.Timestamp(TimeUnit.SECOND, null), rows, nulls));
                out.add(fixed(a, "tsMsUtc", new ArrowType.Timestamp(TimeUnit.MILLISECOND, "UTC"), rows, nulls));
                out.add(fixed(a, "tsUsParis", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "Europe/Paris"), rows, nulls));
                out.add(fixed(a, "tsNs", new ArrowType.Timestamp(TimeUnit.NANOSECOND, null), rows, nulls));
                out.add(fixed(a, "durS", new ArrowType.Duration(TimeUnit.SECOND), rows, nulls));
                out.add(fixed(a, "durNs", new ArrowType.Duration(TimeUnit.NANOSECOND), rows, nulls));
                out.add(fixed(a, "ivYm", new ArrowType.Interval(IntervalUnit.YEAR_MONTH), rows, nulls));
                out.add(fixed(a, "ivDt", new ArrowType.Interval(IntervalUnit.DAY_TIME), rows, nulls));
                out.add(fixed(a, "ivMdn", new ArrowType.Interval(IntervalUnit.MONTH_DAY_NANO), rows, nulls));
            }
            case "fixedSizeBinary" -> out.add(fixed(a, "fsb", new ArrowType.FixedSizeBinary(5), rows, nulls));
            case "null" -> {
                NullVector n = new NullVector("n");
                n.setValueCount(rows);
                out.add(n);
            }
            case "strings" -> {
                out.add(variable(a, "utf8", ArrowType.Utf8.INSTANCE, rows, nulls));
                out.add(variable(a, "largeUtf8", ArrowType.LargeUtf8.INSTANCE, rows, nulls));
                out.add(variable(a, "binary", ArrowType.Binary.INSTANCE, rows, nulls));
                out.add(variable(a, "largeBinary", ArrowType.LargeBinary.INSTANCE, rows, nulls));
            }
            case "views" -> {
                out.add(variable(a, "utf8View", ArrowType.Utf8View.INSTANCE, rows, nulls));
                out.add(variable(a, "binaryView", ArrowType.BinaryView.INSTANCE, rows, nulls));
            }
            case "lists" -> {
                out.add(list(ListVector.empty("list", a), rows, nulls));
                out.add(largeList(LargeListVector.empty("largeList", a), rows, nulls));
                out.add(fixedSizeList(a, rows, nulls));
            }
            case "listViews" -> {
                out.add(listView(ListViewVector.empty("listView", a), rows, nulls));
                out.add(largeListView(LargeListViewVector.empty("largeListView", a), rows, nulls));
            }
            case "struct" -> out.add(struct(a, "struct", rows, nulls));
            case "map" -> out.add(map(a, rows, nulls));
            case "sparseUnion" -> out.add(sparseUnion(a, rows, nulls));
            case "denseUnion" -> out.add(denseUnion(a, rows, nulls));
            case "runEndEncoded" -> out.add(runEndEncoded(a, rows, nulls));
            case "dictionary" -> out.add(dictionaryEncoded(a, rows, nulls, dictionaries));
            case "extension" -> {
                UuidVector u = new UuidVector("uuid", a);
                u.allocateNew(Math.max(rows, 1));
                for (int i = 0; i < rows; i++) {
                    if (isNull(nulls, i)) {
                        u.setNull(i);
                    } else {
                        u.setSafe(i, new UUID(i, 31L * i + 1));
                    }
                }
                u.setValueCount(rows);
                out.add(u);
            }
            case "nested" -> {
                // list<struct<list<int>, utf8>>
                ListVector outer = ListVector.empty("listOfStruct", a);
                StructVector s = (StructVector) outer.addOrGetVector(nullable(ArrowType.Struct.INSTANCE)).getVector();
                fillStruct(s, 0);
                outer.allocateNew();
                int child = 0;
                for (int i = 0; i < rows; i++) {
                    if (isNull(nulls, i)) {
                        outer.setNull(i);
                        continue;
                    }
                    outer.startNewValue(i);
                    int n = i % 3;
                    child += n;
                    outer.endValue(i, n);
                }
                fillStructValues(s, child, nulls);
                outer.setValueCount(rows);
                out.add(outer);
            }
            default -> throw new IllegalArgumentException(family);
        }
        return out;
    }

    public static final List<String> FAMILIES = List.of("integers", "floats", "bool", "decimals", "temporal",
            "fixedSizeBinary", "null", "strings", "views", "lists", "listViews", "struct", "map", "sparseUnion",
            "denseUnion", "runEndEncoded", "dictionary", "extension", "nested");

    private static IntVector intChild(FieldVector parent) {
        return (IntVector) ((org.apache.arrow.vector.complex.PromotableVector) parent)
                .addOrGetVector(nullable(new ArrowType.Int(32, true))).getVector();
    }

    private static void setInts(IntVector v, int from, int count, boolean nulls) {
        for (int k = 0; k < count; k++) {
            if (isNull(nulls, from + k + 1)) {
                v.setNull(from + k);
            } else {
                v.setSafe(from + k, (from + k) * 3 - 5);
            }
        }
    }

    static FieldVector list(ListVector l, int rows, boolean nulls) {
        IntVector child = intChild(l);
        l.allocateNew();
        int total = 0;
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                l.setNull(i);
                continue;
            }
            l.startNewValue(i);
            int n = i % 4;
            setInts(child, total, n, nulls);
            total += n;
            l.endValue(i, n);
        }
        child.setValueCount(total);
        l.setValueCount(rows);
        return l;
    }

    static FieldVector largeList(LargeListVector l, int rows, boolean nulls) {
        IntVector child = intChild(l);
        l.allocateNew();
        int total = 0;
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                l.setNull(i);
                continue;
            }
            l.startNewValue(i);
            int n = i % 4;
            setInts(child, total, n, nulls);
            total += n;
            l.endValue(i, n);
        }
        child.setValueCount(total);
        l.setValueCount(rows);
        return l;
    }

    static FieldVector listView(ListViewVector l, int rows, boolean nulls) {
        IntVector child = intChild(l);
        l.allocateNew();
        int total = 0;
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                l.setNull(i);
                continue;
            }
            l.startNewValue(i);
            int n = i % 4;
            setInts(child, total, n, nulls);
            total += n;
            l.endValue(i, n);
        }
        child.setValueCount(total);
        l.setValueCount(rows);
        return l;
    }

    static FieldVector largeListView(LargeListViewVector l, int rows, boolean nulls) {
        IntVector child = intChild(l);
        l.allocateNew();
        int total = 0;
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                l.setNull(i);
                continue;
            }
            l.startNewValue(i);
            int n = i % 4;
            setInts(child, total, n, nulls);
            total += n;
            l.endValue(i, n);
        }
        child.setValueCount(total);
        l.setValueCount(rows);
        return l;
    }

    static FieldVector fixedSizeList(BufferAllocator a, int rows, boolean nulls) {
        FixedSizeListVector l = FixedSizeListVector.empty("fixedSizeList", 3, a);
        IntVector child = intChild(l);
        l.allocateNew();
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                l.setNull(i);
            } else {
                l.setNotNull(i);
            }
        }
        setInts(child, 0, rows * 3, nulls);
        child.setValueCount(rows * 3);
        l.setValueCount(rows);
        return l;
    }

    private static void fillStruct(StructVector s, int unused) {
        s.addOrGet("ints", nullable(new ArrowType.Int(32, true)), IntVector.class);
        s.addOrGet("text", nullable(ArrowType.Utf8.INSTANCE), VarCharVector.class);
    }

    private static void fillStructValues(StructVector s, int rows, boolean nulls) {
        IntVector ints = s.getChild("ints", IntVector.class);
        VarCharVector text = s.getChild("text", VarCharVector.class);
        s.allocateNew();
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                s.setNull(i);
            } else {
                s.setIndexDefined(i);
            }
            if (isNull(nulls, i + 1)) {
                ints.setNull(i);
            } else {
                ints.setSafe(i, i * 11);
            }
            text.setSafe(i, text(i).getBytes(StandardCharsets.UTF_8));
        }
        ints.setValueCount(rows);
        text.setValueCount(rows);
        s.setValueCount(rows);
    }

    static FieldVector struct(BufferAllocator a, String name, int rows, boolean nulls) {
        StructVector s = StructVector.empty(name, a);
        fillStruct(s, 0);
        fillStructValues(s, rows, nulls);
        return s;
    }

    static FieldVector map(BufferAllocator a, int rows, boolean nulls) {
        // entries spelled out non-nullable (the writer would otherwise add a nullable one, which the
        // Arrow format and arrow-c-data reject)
        Field field = new Field("map", nullable(new ArrowType.Map(true)), List.of(new Field("entries",
                FieldType.notNullable(ArrowType.Struct.INSTANCE), List.of(
                        Field.notNullable("key", new ArrowType.Int(32, true)),
                        Field.nullable("value", new ArrowType.Int(64, true))))));
        MapVector m = (MapVector) field.createVector(a);
        UnionMapWriter w = m.getWriter();
        for (int i = 0; i < rows; i++) {
            w.setPosition(i);
            if (isNull(nulls, i)) {
                w.writeNull();
                continue;
            }
            w.startMap();
            for (int k = 0; k < i % 3; k++) {
                w.startEntry();
                w.key().integer().writeInt(k);
                w.value().bigInt().writeBigInt(i * 100L + k);
                w.endEntry();
            }
            w.endMap();
        }
        w.setValueCount(rows);
        m.setValueCount(rows);
        return m;
    }

    static FieldVector sparseUnion(BufferAllocator a, int rows, boolean nulls) {
        UnionVector u = UnionVector.empty("sparseUnion", a);
        // both children exist even when empty, so the type ids are the same for every case
        u.getIntVector();
        u.getBigIntVector();
        u.allocateNew();
        NullableIntHolder ih = new NullableIntHolder();
        NullableBigIntHolder lh = new NullableBigIntHolder();
        for (int i = 0; i < rows; i++) {
            if (i % 2 == 0) {
                ih.isSet = isNull(nulls, i) ? 0 : 1;
                ih.value = i;
                u.setType(i, MinorType.INT);
                u.setSafe(i, ih);
            } else {
                lh.isSet = isNull(nulls, i) ? 0 : 1;
                lh.value = -i * 1000L;
                u.setType(i, MinorType.BIGINT);
                u.setSafe(i, lh);
            }
        }
        u.setValueCount(rows);
        return u;
    }

    /** A sparse union of 6 rows: 0 (int 5), 2 (bigint -20), 4 (null int) set; 1, 3, 5 never set (type id 0, read as null). */
    static UnionVector sparseUnionWithUnsetRows(BufferAllocator a) {
        UnionVector u = UnionVector.empty("u", a);
        u.getIntVector();
        u.getBigIntVector();
        u.allocateNew();
        NullableIntHolder ih = new NullableIntHolder();
        ih.isSet = 1;
        ih.value = 5;
        u.setType(0, MinorType.INT);
        u.setSafe(0, ih);
        NullableBigIntHolder lh = new NullableBigIntHolder();
        lh.isSet = 1;
        lh.value = -20;
        u.setType(2, MinorType.BIGINT);
        u.setSafe(2, lh);
        ih.isSet = 0;
        u.setType(4, MinorType.INT);
        u.setSafe(4, ih);
        u.setValueCount(6);
        return u;
    }

    static FieldVector denseUnion(BufferAllocator a, int rows, boolean nulls) {
        DenseUnionVector u = DenseUnionVector.empty("denseUnion", a);
        u.allocateNew();
        byte intId = u.registerNewTypeId(Field.nullable("i", new ArrowType.Int(32, true)));
        byte longId = u.registerNewTypeId(Field.nullable("l", new ArrowType.Int(64, true)));
        u.getIntVector(intId);
        u.getBigIntVector(longId);
        NullableIntHolder ih = new NullableIntHolder();
        NullableBigIntHolder lh = new NullableBigIntHolder();
        for (int i = 0; i < rows; i++) {
            if (i % 3 != 2) {
                u.setTypeId(i, intId);
                ih.isSet = isNull(nulls, i) ? 0 : 1;
                ih.value = i;
                u.setSafe(i, ih);
            } else {
                u.setTypeId(i, longId);
                lh.isSet = isNull(nulls, i) ? 0 : 1;
                lh.value = -i * 7L;
                u.setSafe(i, lh);
            }
        }
        u.setValueCount(rows);
        return u;
    }

    static FieldVector runEndEncoded(BufferAllocator a, int rows, boolean nulls) {
        Field field = new Field("ree", nullable(ArrowType.RunEndEncoded.INSTANCE), List.of(
                Field.notNullable("run_ends", new ArrowType.Int(32, true)),
                Field.nullable("values", ArrowType.Utf8.INSTANCE)));
        RunEndEncodedVector r = (RunEndEncodedVector) field.createVector(a);
        IntVector ends = (IntVector) r.getRunEndsVector();
        VarCharVector values = (VarCharVector) r.getValuesVector();
        ends.allocateNew();
        values.allocateNew();
        int runs = 0;
        int end = 0;
        while (end < rows) {
            end = Math.min(rows, end + 1 + runs % 4);
            ends.setSafe(runs, end);
            if (isNull(nulls, runs)) {
                values.setNull(runs);
            } else {
                values.setSafe(runs, text(runs).getBytes(StandardCharsets.UTF_8));
            }
            runs++;
        }
        ends.setValueCount(runs);
        values.setValueCount(runs);
        r.setValueCount(rows);
        return r;
    }

    static FieldVector dictionaryEncoded(BufferAllocator a, int rows, boolean nulls,
                                         DictionaryProvider.MapDictionaryProvider dictionaries) {
        DictionaryEncoding enc = new DictionaryEncoding(42L, true, new ArrowType.Int(32, true));
        VarCharVector dict = new VarCharVector("dict", a);
        dict.allocateNew();
        for (int k = 0; k < 4; k++) {
            dict.setSafe(k, ("word" + k).getBytes(StandardCharsets.UTF_8));
        }
        dict.setValueCount(4);
        dictionaries.put(new Dictionary(dict, enc));
        IntVector idx = new IntVector("encoded", new FieldType(true, new ArrowType.Int(32, true), enc), a);
        idx.allocateNew(Math.max(1, rows));
        for (int i = 0; i < rows; i++) {
            if (isNull(nulls, i)) {
                idx.setNull(i);
            } else {
                idx.set(i, i % 4);
            }
        }
        idx.setValueCount(rows);
        return idx;
    }

    static BigDecimal unused() {
        return BigDecimal.ZERO;
    }

    static Field uuidField() {
        return new Field("uuid", nullable(org.apache.arrow.vector.extension.UuidType.INSTANCE), null);
    }

    static ArrowType sparse(int[] ids) {
        return new ArrowType.Union(UnionMode.Sparse, ids);
    }

    /** Releases exported structs a failed consumer left live (so one failure does not hide the next). */
    static void releaseIfLive(java.lang.foreign.MemorySegment array, java.lang.foreign.MemorySegment schema) {
        if (array != null && org.devicebridge.generated.arrow.ArrowArray.release(array).address() != 0) {
            ExportTree.release(ExportTree.ARRAY, array);
        }
        if (schema != null && org.devicebridge.generated.arrow.ArrowSchema.release(schema).address() != 0) {
            ExportTree.release(ExportTree.SCHEMA, schema);
        }
    }

    /** Field equality, except for the dictionary id, which arrow-c-data renumbers on import. */
    public static void assertSameField(Field want, Field got) {
        assertEquals(want.getName(), got.getName());
        assertEquals(want.getType(), got.getType());
        assertEquals(want.isNullable(), got.isNullable());
        assertEquals(want.getMetadata(), got.getMetadata());
        assertEquals(want.getDictionary() == null, got.getDictionary() == null);
        if (want.getDictionary() != null) {
            assertEquals(want.getDictionary().isOrdered(), got.getDictionary().isOrdered());
            assertEquals(want.getDictionary().getIndexType(), got.getDictionary().getIndexType());
        }
        assertEquals(want.getChildren().size(), got.getChildren().size());
        for (int i = 0; i < want.getChildren().size(); i++) {
            assertSameField(want.getChildren().get(i), got.getChildren().get(i));
        }
    }

    public static void closeDictionaries(DictionaryProvider.MapDictionaryProvider dictionaries) {
        for (long id : dictionaries.getDictionaryIds()) {
            dictionaries.lookup(id).getVector().close();
        }
    }
}
