package org.devicebridge.arrow;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.*;
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
import org.apache.arrow.vector.holders.NullableBigIntHolder;
import org.apache.arrow.vector.holders.NullableIntHolder;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;

/**
 * Arrow Java vectors of every type family Arrow Java supports, each of {@link #N} values with nulls at
 * indices 2 and 5 (where the type has nulls), built with Arrow Java's own API: the independent producer.
 */
public final class TestVectors {
    public static final int N = 9;

    private TestVectors() {}

    public static boolean isNull(int i) {
        return i == 2 || i == 5;
    }

    public static Map<String, Function<BufferAllocator, FieldVector>> all() {
        Map<String, Function<BufferAllocator, FieldVector>> m = new LinkedHashMap<>();
        m.put("int8", a -> fixed(new TinyIntVector("v", a), (v, i) -> ((TinyIntVector) v).setSafe(i, (byte) (i * 7 - 20))));
        m.put("uint8", a -> fixed(new UInt1Vector("v", a), (v, i) -> ((UInt1Vector) v).setSafe(i, (byte) (200 + i))));
        m.put("int16", a -> fixed(new SmallIntVector("v", a), (v, i) -> ((SmallIntVector) v).setSafe(i, (short) (i * 1000 - 3000))));
        m.put("uint16", a -> fixed(new UInt2Vector("v", a), (v, i) -> ((UInt2Vector) v).setSafe(i, (char) (60000 + i))));
        m.put("int32", a -> fixed(new IntVector("v", a), (v, i) -> ((IntVector) v).setSafe(i, i * 100_000 - 7)));
        m.put("uint32", a -> fixed(new UInt4Vector("v", a), (v, i) -> ((UInt4Vector) v).setSafe(i, -1 - i)));
        m.put("int64", a -> fixed(new BigIntVector("v", a), (v, i) -> ((BigIntVector) v).setSafe(i, (long) i << 40)));
        m.put("uint64", a -> fixed(new UInt8Vector("v", a), (v, i) -> ((UInt8Vector) v).setSafe(i, -5L - i)));
        m.put("float16", a -> fixed(new Float2Vector("v", a), (v, i) -> ((Float2Vector) v).setSafe(i, (short) (0x3C00 + i))));
        m.put("float32", a -> fixed(new Float4Vector("v", a), (v, i) -> ((Float4Vector) v).setSafe(i, i * 1.5f)));
        m.put("float64", a -> fixed(new Float8Vector("v", a), (v, i) -> ((Float8Vector) v).setSafe(i, i * -2.25)));
        m.put("bool", a -> fixed(new BitVector("v", a), (v, i) -> ((BitVector) v).setSafe(i, i % 3 == 0 ? 1 : 0)));
        m.put("decimal128", a -> fixed(new DecimalVector("v", a, 10, 2),
                (v, i) -> ((DecimalVector) v).setSafe(i, new BigDecimal(i * 12345 - 500).movePointLeft(2))));
        m.put("decimal256", a -> fixed(new Decimal256Vector("v", a, 40, 3),
                (v, i) -> ((Decimal256Vector) v).setSafe(i, new BigDecimal("123456789012345678901234567890").add(BigDecimal.valueOf(i)).movePointLeft(3))));
        m.put("date32", a -> fixed(new DateDayVector("v", a), (v, i) -> ((DateDayVector) v).setSafe(i, 19000 + i)));
        m.put("date64", a -> fixed(new DateMilliVector("v", a), (v, i) -> ((DateMilliVector) v).setSafe(i, 86_400_000L * (19000 + i))));
        m.put("time32s", a -> fixed(new TimeSecVector("v", a), (v, i) -> ((TimeSecVector) v).setSafe(i, 3600 + i)));
        m.put("time32ms", a -> fixed(new TimeMilliVector("v", a), (v, i) -> ((TimeMilliVector) v).setSafe(i, 3_600_000 + i)));
        m.put("time64us", a -> fixed(new TimeMicroVector("v", a), (v, i) -> ((TimeMicroVector) v).setSafe(i, 3_600_000_000L + i)));
        m.put("time64ns", a -> fixed(new TimeNanoVector("v", a), (v, i) -> ((TimeNanoVector) v).setSafe(i, 3_600_000_000_000L + i)));
        m.put("timestamp_s", a -> fixed(new TimeStampSecVector("v", a), (v, i) -> ((TimeStampSecVector) v).setSafe(i, 1_700_000_000L + i)));
        m.put("timestamp_us_utc", a -> fixed(new TimeStampMicroTZVector("v", a, "UTC"),
                (v, i) -> ((TimeStampMicroTZVector) v).setSafe(i, 1_700_000_000_000_000L + i)));
        m.put("timestamp_ns_paris", a -> fixed(new TimeStampNanoTZVector("v", a, "Europe/Paris"),
                (v, i) -> ((TimeStampNanoTZVector) v).setSafe(i, 1_700_000_000_000_000_000L + i)));
        m.put("duration_us", a -> fixed(new DurationVector(Field.nullable("v", new ArrowType.Duration(TimeUnit.MICROSECOND)), a),
                (v, i) -> ((DurationVector) v).setSafe(i, 1000L * i)));
        m.put("interval_months", a -> fixed(new IntervalYearVector("v", a), (v, i) -> ((IntervalYearVector) v).setSafe(i, i * 13)));
        m.put("interval_day_time", a -> fixed(new IntervalDayVector("v", a), (v, i) -> ((IntervalDayVector) v).setSafe(i, i, i * 1000)));
        m.put("interval_mdn", a -> fixed(new IntervalMonthDayNanoVector("v", a),
                (v, i) -> ((IntervalMonthDayNanoVector) v).setSafe(i, i, i + 1, 1_000_000L * i)));
        m.put("utf8", a -> fixed(new VarCharVector("v", a), (v, i) -> ((VarCharVector) v).setSafe(i, text(i))));
        m.put("large_utf8", a -> fixed(new LargeVarCharVector("v", a), (v, i) -> ((LargeVarCharVector) v).setSafe(i, text(i))));
        m.put("binary", a -> fixed(new VarBinaryVector("v", a), (v, i) -> ((VarBinaryVector) v).setSafe(i, text(i))));
        m.put("large_binary", a -> fixed(new LargeVarBinaryVector("v", a), (v, i) -> ((LargeVarBinaryVector) v).setSafe(i, text(i))));
        m.put("utf8_view", a -> fixed(new ViewVarCharVector("v", a), (v, i) -> ((ViewVarCharVector) v).setSafe(i, text(i))));
        m.put("binary_view", a -> fixed(new ViewVarBinaryVector("v", a), (v, i) -> ((ViewVarBinaryVector) v).setSafe(i, text(i))));
        m.put("fixed_size_binary", a -> fixed(new FixedSizeBinaryVector("v", a, 3),
                (v, i) -> ((FixedSizeBinaryVector) v).setSafe(i, new byte[] {(byte) i, 2, (byte) -i})));
        m.put("null", a -> {
            NullVector v = new NullVector("v");
            v.setValueCount(N);
            return v;
        });
        m.put("list_int32", TestVectors::list);
        m.put("large_list_int32", TestVectors::largeList);
        m.put("list_view_int32", TestVectors::listView);
        m.put("large_list_view_int32", TestVectors::largeListView);
        m.put("fixed_size_list_int32", TestVectors::fixedSizeList);
        m.put("struct", TestVectors::struct);
        m.put("map_utf8_int32", TestVectors::map);
        m.put("dense_union", TestVectors::denseUnion);
        m.put("sparse_union", TestVectors::sparseUnion);
        m.put("run_end_encoded", TestVectors::runEndEncoded);
        m.put("extension_metadata", a -> {
            Field f = new Field("v", new FieldType(true, new ArrowType.FixedSizeBinary(2), null,
                    Map.of("ARROW:extension:name", "test.pair", "ARROW:extension:metadata", "{}")), List.of());
            FixedSizeBinaryVector v = (FixedSizeBinaryVector) f.createVector(a);
            return fixed(v, (x, i) -> v.setSafe(i, new byte[] {(byte) i, (byte) (i + 1)}));
        });
        return m;
    }

    /** Values of up to 20 bytes so that view types use both inline and variadic storage. */
    public static byte[] text(int i) {
        return ("v" + i + "-" + "x".repeat(i * 2)).getBytes(StandardCharsets.UTF_8);
    }

    interface Setter {
        void set(FieldVector v, int i);
    }

    private static FieldVector fixed(FieldVector v, Setter setter) {
        v.allocateNew();
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                if (v instanceof BaseFixedWidthVector f) {
                    f.setNull(i);
                } else if (v instanceof BaseVariableWidthVector f) {
                    f.setNull(i);
                } else if (v instanceof BaseLargeVariableWidthVector f) {
                    f.setNull(i);
                } else if (v instanceof BaseVariableWidthViewVector f) {
                    f.setNull(i);
                }
            } else {
                setter.set(v, i);
            }
        }
        v.setValueCount(N);
        return v;
    }

    private static FieldVector list(BufferAllocator a) {
        ListVector v = ListVector.empty("v", a);
        IntVector data = (IntVector) v.addOrGetVector(FieldType.nullable(new ArrowType.Int(32, true))).getVector();
        v.allocateNew();
        int total = 0;
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
                continue;
            }
            int start = v.startNewValue(i);
            for (int k = 0; k < i % 4; k++) {
                if (k == 1) {
                    data.setNull(start + k);
                } else {
                    data.setSafe(start + k, i * 10 + k);
                }
            }
            v.endValue(i, i % 4);
            total = start + i % 4;
        }
        data.setValueCount(total);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector largeList(BufferAllocator a) {
        LargeListVector v = LargeListVector.empty("v", a);
        VarCharVector data = (VarCharVector) v.addOrGetVector(FieldType.nullable(ArrowType.Utf8.INSTANCE)).getVector();
        v.allocateNew();
        long total = 0;
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
                continue;
            }
            long start = v.startNewValue(i);
            for (int k = 0; k < (i % 3) + 1; k++) {
                data.setSafe((int) start + k, text(i + k));
            }
            v.endValue(i, (i % 3) + 1);
            total = start + (i % 3) + 1;
        }
        data.setValueCount((int) total);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector listView(BufferAllocator a) {
        ListViewVector v = ListViewVector.empty("v", a);
        IntVector data = (IntVector) v.addOrGetVector(FieldType.nullable(new ArrowType.Int(32, true))).getVector();
        v.allocateNew();
        int total = 0;
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
                continue;
            }
            int start = v.startNewValue(i);
            for (int k = 0; k < i % 3 + 1; k++) {
                data.setSafe(start + k, i * 10 + k);
            }
            v.endValue(i, i % 3 + 1);
            total = start + i % 3 + 1;
        }
        data.setValueCount(total);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector largeListView(BufferAllocator a) {
        LargeListViewVector v = LargeListViewVector.empty("v", a);
        IntVector data = (IntVector) v.addOrGetVector(FieldType.nullable(new ArrowType.Int(32, true))).getVector();
        v.allocateNew();
        int total = 0;
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
                continue;
            }
            int start = v.startNewValue(i);
            for (int k = 0; k < i % 3 + 1; k++) {
                data.setSafe(start + k, i * 10 + k);
            }
            v.endValue(i, i % 3 + 1);
            total = start + i % 3 + 1;
        }
        data.setValueCount(total);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector fixedSizeList(BufferAllocator a) {
        FixedSizeListVector v = FixedSizeListVector.empty("v", 2, a);
        IntVector data = (IntVector) v.addOrGetVector(FieldType.nullable(new ArrowType.Int(32, true))).getVector();
        v.allocateNew();
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
            } else {
                v.setNotNull(i);
            }
            data.setSafe(2 * i, i);
            data.setSafe(2 * i + 1, -i);
        }
        data.setValueCount(2 * N);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector struct(BufferAllocator a) {
        StructVector v = StructVector.empty("v", a);
        IntVector x = v.addOrGet("x", FieldType.nullable(new ArrowType.Int(32, true)), IntVector.class);
        VarCharVector y = v.addOrGet("y", FieldType.nullable(ArrowType.Utf8.INSTANCE), VarCharVector.class);
        v.allocateNew();
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
                x.setNull(i);
                y.setNull(i);
            } else {
                v.setIndexDefined(i);
                x.setSafe(i, i * 3);
                if (i == 4) {
                    y.setNull(i);
                } else {
                    y.setSafe(i, text(i));
                }
            }
        }
        x.setValueCount(N);
        y.setValueCount(N);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector map(BufferAllocator a) {
        Field entries = new Field("entries", FieldType.notNullable(ArrowType.Struct.INSTANCE), List.of(
                Field.notNullable("key", ArrowType.Utf8.INSTANCE), Field.nullable("value", new ArrowType.Int(32, true))));
        Field f = new Field("v", FieldType.nullable(new ArrowType.Map(false)), List.of(entries));
        MapVector v = (MapVector) f.createVector(a);
        v.allocateNew();
        StructVector e = (StructVector) v.getDataVector();
        VarCharVector keys = (VarCharVector) e.getChild("key");
        IntVector values = (IntVector) e.getChild("value");
        int total = 0;
        for (int i = 0; i < N; i++) {
            if (isNull(i)) {
                v.setNull(i);
                continue;
            }
            int start = v.startNewValue(i);
            for (int k = 0; k < i % 3; k++) {
                e.setIndexDefined(start + k);
                keys.setSafe(start + k, ("k" + k).getBytes(StandardCharsets.UTF_8));
                values.setSafe(start + k, i * 100 + k);
            }
            v.endValue(i, i % 3);
            total = start + i % 3;
        }
        keys.setValueCount(total);
        values.setValueCount(total);
        e.setValueCount(total);
        v.setValueCount(N);
        return v;
    }

    private static FieldVector denseUnion(BufferAllocator a) {
        DenseUnionVector v = DenseUnionVector.empty("v", a);
        v.allocateNew();
        byte intId = v.registerNewTypeId(Field.nullable("i", new ArrowType.Int(32, true)));
        byte longId = v.registerNewTypeId(Field.nullable("l", new ArrowType.Int(64, true)));
        v.addVector(intId, new IntVector("i", a));
        v.addVector(longId, new BigIntVector("l", a));
        for (int i = 0; i < N; i++) {
            if (i % 2 == 0) {
                NullableIntHolder h = new NullableIntHolder();
                h.isSet = isNull(i) ? 0 : 1;
                h.value = i;
                v.setTypeId(i, intId);
                v.setSafe(i, h);
            } else {
                NullableBigIntHolder h = new NullableBigIntHolder();
                h.isSet = isNull(i) ? 0 : 1;
                h.value = 1L << (i + 32);
                v.setTypeId(i, longId);
                v.setSafe(i, h);
            }
        }
        v.setValueCount(N);
        return v;
    }

    private static FieldVector sparseUnion(BufferAllocator a) {
        UnionVector v = UnionVector.empty("v", a);
        v.allocateNew();
        for (int i = 0; i < N; i++) {
            if (i % 2 == 0) {
                NullableIntHolder h = new NullableIntHolder();
                h.isSet = isNull(i) ? 0 : 1;
                h.value = i;
                v.setSafe(i, h);
            } else {
                NullableBigIntHolder h = new NullableBigIntHolder();
                h.isSet = isNull(i) ? 0 : 1;
                h.value = 1L << (i + 32);
                v.setSafe(i, h);
            }
        }
        v.setValueCount(N);
        return v;
    }

    private static FieldVector runEndEncoded(BufferAllocator a) {
        Field f = new Field("v", FieldType.nullable(ArrowType.RunEndEncoded.INSTANCE), List.of(
                Field.notNullable("run_ends", new ArrowType.Int(32, true)),
                Field.nullable("values", new ArrowType.Int(64, true))));
        RunEndEncodedVector v = (RunEndEncodedVector) f.createVector(a);
        v.allocateNew();
        IntVector ends = (IntVector) v.getRunEndsVector();
        BigIntVector values = (BigIntVector) v.getValuesVector();
        int[] runEnds = {2, 3, 7, N};
        for (int r = 0; r < runEnds.length; r++) {
            ends.setSafe(r, runEnds[r]);
            if (r == 1) {
                values.setNull(r);
            } else {
                values.setSafe(r, 1000L * r);
            }
        }
        ends.setValueCount(runEnds.length);
        values.setValueCount(runEnds.length);
        v.setValueCount(N);
        return v;
    }
}
