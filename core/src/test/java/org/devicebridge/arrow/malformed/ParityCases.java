package org.devicebridge.arrow.malformed;

import static org.devicebridge.ValidationException.Category.CONTENT;
import static org.devicebridge.ValidationException.Category.LENGTH;
import static org.devicebridge.ValidationException.Category.NULL_POINTER;
import static org.devicebridge.ValidationException.Category.SCHEMA;
import static org.devicebridge.ValidationException.Category.SIZE;
import static org.devicebridge.ValidationException.Category.STRUCTURE;
import static org.devicebridge.arrow.ValidationLevel.DEFAULT;
import static org.devicebridge.arrow.ValidationLevel.FULL;
import static org.devicebridge.arrow.ValidationLevel.MINIMAL;
import static org.devicebridge.arrow.ValidationLevel.NONE;
import static org.devicebridge.arrow.malformed.Fx.bufs;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.NULL;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.array;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.i32;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.mapEntries;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.meta;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.schema;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.devicebridge.arrow.SchemaNode;

/**
 * Rows of the malformed-input matrix for the checks of the Arrow C++ / nanoarrow parity table
 * ({@code validation-parity.md}) that the other groups do not cover: null counts against bitmaps, map
 * keys and entries without nulls, run-end encoded limits, values FULL range-checks (decimals, date64,
 * times), view padding, prefixes and UTF-8, dense union offsets per child. Each names the lowest level
 * that rejects it; the matrix runs it at every level.
 */
final class ParityCases {
    static final String GROUP = "strict validation parity";

    private ParityCases() {}

    static void add(List<Case> t) {
        nullCounts(t);
        maps(t);
        runEndEncoded(t);
        values(t);
        views(t);
        listViews(t);
        unions(t);
        schemas(t);
    }

    private static void nullCounts(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "null_count 0 with a null bit is CONTENT from FULL", CONTENT, "null_count", FULL, 1, fx -> fx.type("i"),
                fx -> fx.array(2, 0, 0, bufs(fx.bytes(0b01), fx.ints(1, 2)))));
        t.add(array(g, "null_count 2 with one null bit is CONTENT from FULL", CONTENT, "null_count", FULL, 1,
                fx -> fx.type("i"), fx -> fx.array(2, 2, 0, bufs(fx.bytes(0b01), fx.ints(1, 2)))));
        t.add(array(g, "child null_count disagreeing with its bitmap is CONTENT from FULL", CONTENT, "children[0].null_count",
                FULL, 1, fx -> fx.type(fx.schema("+s", fx.schema("i"))),
                fx -> fx.array(2, 0, 0, bufs(NULL), fx.array(2, 1, 0, bufs(fx.bytes(0b11), fx.ints(1, 2))))));
        t.add(array(g, "null_count counted only inside the slice is accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(2, 0, 1, bufs(fx.bytes(0b110), fx.ints(0, 1, 2)))));
        t.add(array(g, "null_count -1 with null bits is accepted", null, null, NONE, 1, fx -> fx.type("i"),
                fx -> fx.array(2, -1, 0, bufs(fx.bytes(0b00), fx.ints(1, 2)))));
        t.add(array(g, "null type with null_count 0 is accepted", null, null, NONE, 1, fx -> fx.type("n"),
                fx -> fx.array(3, 0, 0, bufs())));
    }

    private static Function<Fx, SchemaNode> mapType() {
        return fx -> fx.type(fx.schemaF("+m", SchemaNode.FLAG_NULLABLE, mapEntries(fx)));
    }

    /** A map of one entry whose entries struct has {@code entriesNulls} / {@code entriesBits} and keys {@code keys}. */
    private static MemorySegment map(Fx fx, long entriesNulls, MemorySegment entriesBits, MemorySegment keys) {
        return fx.array(1, 0, 0, bufs(NULL, fx.ints(0, 1)),
                fx.array(1, entriesNulls, 0, bufs(entriesBits), keys, i32(fx, 1)));
    }

    private static MemorySegment key(Fx fx, long nulls, MemorySegment bits) {
        return fx.array(1, nulls, 0, bufs(bits, fx.ints(0, 1), fx.bytes(107)));
    }

    private static void maps(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "map entries with null_count 1 is CONTENT from MINIMAL", CONTENT, "children[0].null_count", MINIMAL, 1,
                mapType(), fx -> map(fx, 1, fx.bytes(0), key(fx, 0, NULL))));
        t.add(array(g, "map entries with unknown null count and a null bit is CONTENT from DEFAULT", CONTENT,
                "children[0].buffers[0]", DEFAULT, 1, mapType(), fx -> map(fx, -1, fx.bytes(0), key(fx, 0, NULL))));
        t.add(array(g, "map keys with null_count 1 is CONTENT from MINIMAL", CONTENT, "children[0].children[0].null_count",
                MINIMAL, 1, mapType(), fx -> map(fx, 0, NULL, key(fx, 1, fx.bytes(0)))));
        t.add(array(g, "map keys with unknown null count and a null bit is CONTENT from DEFAULT", CONTENT,
                "children[0].children[0].buffers[0]", DEFAULT, 1, mapType(), fx -> map(fx, 0, NULL, key(fx, -1, fx.bytes(0)))));
        t.add(array(g, "map keys with unknown null count and no null bit is accepted", null, null, NONE, 1, mapType(),
                fx -> map(fx, -1, fx.bytes(1), key(fx, -1, fx.bytes(1)))));
    }

    private static void runEndEncoded(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "int16 run-end offset + length 32768 is SIZE from MINIMAL", SIZE, "length", MINIMAL, 1,
                fx -> fx.type(fx.schema("+r", fx.schemaF("s", 0), fx.schema("i"))),
                fx -> fx.array(8, 0, 32760, bufs(), fx.array(1, 0, 0, bufs(NULL, fx.shorts((short) 32767))), i32(fx, 1))));
        t.add(array(g, "int16 run-end offset + length 32767 is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+r", fx.schemaF("s", 0), fx.schema("i"))),
                fx -> fx.array(7, 0, 32760, bufs(), fx.array(1, 0, 0, bufs(NULL, fx.shorts((short) 32767))), i32(fx, 1))));
        t.add(array(g, "run-end encoded with null_count 1 is STRUCTURE from MINIMAL", STRUCTURE, "null_count", MINIMAL, 1,
                MalformedInputMatrixTest::reeType, fx -> fx.array(2, 1, 0, bufs(), i32(fx, 2), i32(fx, 2))));
        t.add(array(g, "run-end encoded with no runs but 2 values is LENGTH from MINIMAL", LENGTH, "children[1].length", MINIMAL,
                1, MalformedInputMatrixTest::reeType, fx -> fx.array(0, 0, 0, bufs(), i32(fx, 0), i32(fx, 2))));
        t.add(array(g, "run-end values longer than run ends are accepted", null, null, NONE, 1, MalformedInputMatrixTest::reeType,
                fx -> fx.array(3, 0, 0, bufs(), fx.array(2, 0, 0, bufs(NULL, fx.ints(1, 3))), i32(fx, 3))));
        t.add(array(g, "run ends with unknown null count and a null bit is CONTENT from DEFAULT", CONTENT, "children[0].buffers[0]",
                DEFAULT, 1, MalformedInputMatrixTest::reeType,
                fx -> fx.array(2, 0, 0, bufs(), fx.array(1, -1, 0, bufs(fx.bytes(0), fx.ints(2))), i32(fx, 1))));
        t.add(array(g, "run-end first run end 0 is CONTENT from DEFAULT", CONTENT, "children[0].buffers[1]", DEFAULT, 1,
                MalformedInputMatrixTest::reeType,
                fx -> fx.array(3, 0, 0, bufs(), fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 3))), i32(fx, 2))));
    }

    /** {@code v} as {@code count} little-endian 64-bit limbs, two's complement. */
    static long[] limbs(BigInteger v, int count) {
        long[] out = new long[count];
        for (int k = 0; k < count; k++) {
            out[k] = v.shiftRight(64 * k).longValue();
        }
        return out;
    }

    private static void values(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "date64 not a whole day is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("tdm"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.longs(86_400_000L, 86_400_001L)))));
        t.add(array(g, "time32[s] 86400 is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("tts"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(86_399, 86_400)))));
        t.add(array(g, "negative time32[ms] is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("ttm"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(-1)))));
        t.add(array(g, "time64[us] of a whole day is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("ttu"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(86_400_000_000L)))));
        t.add(array(g, "negative time64[ns] is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("ttn"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(-5)))));
        t.add(array(g, "times and dates at their limits are accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+s", fx.schema("tts"), fx.schema("ttn"), fx.schema("tdm"))),
                fx -> fx.array(2, 0, 0, bufs(NULL), fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 86_399))),
                        fx.array(2, 0, 0, bufs(NULL, fx.longs(0, 86_400_000_000_000L - 1))),
                        fx.array(2, 0, 0, bufs(NULL, fx.longs(-86_400_000L, 0))))));
        t.add(array(g, "decimal32 value beyond precision is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("d:3,0,32"), fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(-999, 1000)))));
        t.add(array(g, "decimal64 negative value beyond precision is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("d:10,2,64"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(-10_000_000_000L)))));
        t.add(array(g, "decimal128 value beyond precision is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("d:5,1"), fx -> fx.array(2, 0, 0, bufs(NULL, fx.longs(99_999, 0, 100_000, 0)))));
        t.add(array(g, "decimal128 -10^38 is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1, fx -> fx.type("d:38,0"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(limbs(BigInteger.TEN.pow(38).negate(), 2))))));
        t.add(array(g, "decimal128 most negative value is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("d:38,0"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(0, Long.MIN_VALUE)))));
        t.add(array(g, "decimal256 value beyond precision is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("d:40,0,256"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(limbs(BigInteger.TEN.pow(40), 4))))));
        t.add(array(g, "decimal128 at the largest precision-9 value is accepted", null, null, NONE, 1, fx -> fx.type("d:9,0"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.longs(999_999_999L, 0, -999_999_999L, -1)))));
        t.add(array(g, "decimal256 at 10^76 - 1 and its negation is accepted", null, null, NONE, 1, fx -> fx.type("d:76,0,256"),
                fx -> {
                    BigInteger max = BigInteger.TEN.pow(76).subtract(BigInteger.ONE);
                    long[] a = limbs(max, 4);
                    long[] b = limbs(max.negate(), 4);
                    return fx.array(2, 0, 0, bufs(NULL, fx.longs(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])));
                }));
        t.add(array(g, "decimal beyond precision in a null slot is accepted", null, null, NONE, 1, fx -> fx.type("d:3,0,32"),
                fx -> fx.array(2, 1, 0, bufs(fx.bytes(0b01), fx.ints(5, 100_000)))));
    }

    private static void views(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "NULL variadic buffer of 4 bytes is NULL_POINTER from DEFAULT", NULL_POINTER, "buffers[2]", DEFAULT, 1,
                fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{3, 0x636261, 0, 0}}), NULL,
                        fx.longs(4)))));
        t.add(array(g, "NULL variadic buffer of 0 bytes is accepted", null, null, NONE, 1, fx -> fx.type("vu"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{3, 0x636261, 0, 0}}), NULL, fx.longs(0)))));
        t.add(array(g, "invalid UTF-8 in utf8 is CONTENT from FULL", CONTENT, "buffers[2]", FULL, 1, fx -> fx.type("u"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 1, 3), fx.bytes(65, 0xC3, 0x28)))));
        t.add(array(g, "invalid UTF-8 in large utf8 is CONTENT from FULL", CONTENT, "buffers[2]", FULL, 1, fx -> fx.type("U"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.longs(0, 1), fx.bytes(0xFF)))));
        t.add(array(g, "invalid UTF-8 inline in utf8 view is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{2, 0x28C3, 0, 0}}), fx.longs()))));
        t.add(array(g, "invalid UTF-8 out of line in utf8 view is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vu"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{13, 0x64636261, 0, 0}}),
                        fx.bytes(97, 98, 99, 100, 0xFF, 65, 65, 65, 65, 65, 65, 65, 65), fx.longs(13)))));
        t.add(array(g, "invalid UTF-8 in binary view is accepted", null, null, NONE, 1, fx -> fx.type("vz"),
                fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{2, 0x28C3, 0, 0}}), fx.longs()))));
        t.add(array(g, "valid UTF-8 views inline and out of line are accepted", null, null, NONE, 1, fx -> fx.type("vu"),
                fx -> fx.array(2, 0, 0, bufs(NULL, fx.views(new int[][] {{2, 0xA9C3, 0, 0}, {13, 0x64636261, 0, 3}}),
                        fx.bytes(0, 0, 0, 97, 98, 99, 100, 0xC3, 0xA9, 65, 65, 65, 65, 65, 65, 65), fx.longs(16)))));
        t.add(array(g, "inline view with non-zero padding is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vz"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{2, 0x00FF4141, 0, 0}}), fx.longs()))));
        t.add(array(g, "view prefix differing from its data is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type("vz"), fx -> fx.array(1, 0, 0, bufs(NULL, fx.views(new int[][] {{13, 0x64636261, 0, 0}}),
                        fx.bytes(97, 98, 99, 101, 0, 0, 0, 0, 0, 0, 0, 0, 0), fx.longs(13)))));
    }

    private static void listViews(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "NULL list view sizes with length 1 is NULL_POINTER", NULL_POINTER, "buffers[2]", NONE, 1,
                fx -> fx.type(fx.schema("+vl", fx.schema("i"))), fx -> fx.array(1, 0, 0, bufs(NULL, fx.ints(0), NULL), i32(fx, 1))));
        t.add(array(g, "empty list view with NULL offsets and sizes is accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+vl", fx.schema("i"))), fx -> fx.array(0, 0, 0, bufs(NULL, NULL, NULL), i32(fx, 0))));
    }

    private static void unions(List<Case> t) {
        String g = GROUP;
        t.add(array(g, "dense union offsets decreasing within a child is CONTENT from FULL", CONTENT, "buffers[1]", FULL, 1,
                fx -> fx.type(fx.schema("+ud:0,1", fx.schema("i"), fx.schema("i"))),
                fx -> fx.array(3, 0, 0, bufs(fx.bytes(0, 1, 0), fx.ints(1, 0, 0)), i32(fx, 3), i32(fx, 3))));
        t.add(array(g, "dense union offsets increasing per child but interleaved are accepted", null, null, NONE, 1,
                fx -> fx.type(fx.schema("+ud:0,1", fx.schema("i"), fx.schema("i"))),
                fx -> fx.array(4, 0, 0, bufs(fx.bytes(0, 1, 0, 1), fx.ints(0, 0, 1, 2)), i32(fx, 2), i32(fx, 3))));
    }

    private static void schemas(List<Case> t) {
        String g = GROUP;
        long nullable = SchemaNode.FLAG_NULLABLE;
        t.add(schema(g, "nullable map key field is SCHEMA", SCHEMA, "children[0].children[0].flags", 1,
                fx -> fx.schemaF("+m", nullable, fx.schemaF("+s", 0, fx.schemaF("u", nullable), fx.schema("i")))));
        t.add(schema(g, "extension type metadata is accepted and kept", null, null, 1,
                fx -> meta(fx, fx.metadata(2, 20, "ARROW:extension:name", 7, "my.uuid", 24, "ARROW:extension:metadata", 0)),
                n -> assertEquals(Map.of("ARROW:extension:name", "my.uuid", "ARROW:extension:metadata", ""),
                        ((SchemaNode) n).metadata())));
    }
}
