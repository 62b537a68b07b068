package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType;
import org.devicebridge.arrow.ArrowDataType.TypeId;

/**
 * Reads the values of an imported array view (the {@code arrow} package only: no Arrow Java) into the
 * canonical text that {@code peers.py}'s {@code canon} makes from pyarrow scalars, so that the two sides of
 * a round trip can be compared row by row by independent code. The text: {@code null}, {@code true}/{@code
 * false}, integers in decimal, {@code f:<IEEE bits of the double>}, {@code d:<unscaled decimal>}, temporal
 * types as their integer, {@code x:<hex>} for strings and binaries, {@code [..]} for lists and maps,
 * {@code {..}} for structs (and map entries), {@code u<type id>:<value>} for unions; run-end encoded and
 * dictionary-encoded values as the value they stand for.
 */
final class ViewValues {
    private static final HexFormat HEX = HexFormat.of();

    private ViewValues() {}

    /** The canonical text of every row of {@code column} (a child of a record batch's struct). */
    static List<String> column(ArrayNode column, long parentOffset, long rows) {
        List<String> out = new ArrayList<>();
        for (long r = 0; r < rows; r++) {
            out.add(canon(column, parentOffset + r));
        }
        return out;
    }

    /** The canonical text of logical row {@code row} of {@code n} (its own offset is applied here). */
    static String canon(ArrayNode n, long row) {
        ArrowDataType t = n.type();
        long i = n.offset() + row;
        TypeId id = t.id();
        switch (t.layout()) {
            case NULL:
                return "null";
            case SPARSE_UNION, DENSE_UNION: {
                int typeId = n.buffer(0).get(JAVA_BYTE, i);
                int child = t.unionTypeIds().indexOf(typeId);
                long childRow = t.layout() == ArrowDataType.Layout.SPARSE_UNION ? i
                        : n.buffer(1).get(JAVA_INT_UNALIGNED, 4 * i);
                return "u" + typeId + ":" + canon(n.children().get(child), childRow);
            }
            case RUN_END_ENCODED: {
                ArrayNode runEnds = n.children().get(0);
                long lo = 0;
                long hi = runEnds.length() - 1;
                while (lo < hi) { // the first run whose end is past i
                    long mid = (lo + hi) >>> 1;
                    if (integer(runEnds, mid) > i) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                return canon(n.children().get(1), lo);
            }
            default:
                break;
        }
        if (!valid(n, i)) {
            return "null";
        }
        if (n.dictionary() != null) {
            return canon(n.dictionary(), integer(n, row));
        }
        switch (t.layout()) {
            case BOOL:
                return bit(n.buffer(1), i) ? "true" : "false";
            case FIXED_WIDTH:
                return fixed(n, id, i);
            case VARIABLE, LARGE_VARIABLE: {
                int w = t.layout().offsetWidth();
                long start = offsetAt(n.buffer(1), w, i);
                long end = offsetAt(n.buffer(1), w, i + 1);
                return "x:" + hex(n.buffer(2), start, end - start);
            }
            case FIXED_SIZE_BINARY:
                return "x:" + hex(n.buffer(1), i * t.fixedSize(), t.fixedSize());
            case VIEW: {
                MemorySegment views = n.buffer(1);
                int length = views.get(JAVA_INT_UNALIGNED, 16 * i);
                if (length <= 12) {
                    return "x:" + hex(views, 16 * i + 4, length);
                }
                int buffer = views.get(JAVA_INT_UNALIGNED, 16 * i + 8);
                int offset = views.get(JAVA_INT_UNALIGNED, 16 * i + 12);
                return "x:" + hex(n.buffer(2 + buffer), offset, length);
            }
            case LIST, LARGE_LIST: {
                int w = t.layout().offsetWidth();
                return list(n.children().get(0), offsetAt(n.buffer(1), w, i), offsetAt(n.buffer(1), w, i + 1));
            }
            case LIST_VIEW, LARGE_LIST_VIEW: {
                int w = t.layout().offsetWidth();
                long start = offsetAt(n.buffer(1), w, i);
                return list(n.children().get(0), start, start + offsetAt(n.buffer(2), w, i));
            }
            case FIXED_SIZE_LIST:
                return list(n.children().get(0), i * t.fixedSize(), (i + 1) * t.fixedSize());
            case STRUCT: {
                StringBuilder b = new StringBuilder("{");
                for (int c = 0; c < n.children().size(); c++) {
                    b.append(c == 0 ? "" : ",").append(canon(n.children().get(c), i));
                }
                return b.append('}').toString();
            }
            default:
                throw new IllegalStateException("no canonical text for " + t);
        }
    }

    private static String list(ArrayNode child, long start, long end) {
        StringBuilder b = new StringBuilder("[");
        for (long j = start; j < end; j++) {
            b.append(j == start ? "" : ",").append(canon(child, j));
        }
        return b.append(']').toString();
    }

    private static boolean valid(ArrayNode n, long i) {
        return n.isBufferNull(0) || bit(n.buffer(0), i);
    }

    private static boolean bit(MemorySegment bitmap, long i) {
        return (bitmap.get(JAVA_BYTE, i >>> 3) >> (i & 7) & 1) == 1;
    }

    private static long offsetAt(MemorySegment offsets, int width, long i) {
        return width == 4 ? offsets.get(JAVA_INT_UNALIGNED, 4 * i) : offsets.get(JAVA_LONG_UNALIGNED, 8 * i);
    }

    /** The integer value of logical row {@code row} of an integer node (run ends, dictionary indices). */
    private static long integer(ArrayNode n, long row) {
        return Long.parseLong(fixed(n, n.type().id(), n.offset() + row));
    }

    private static String fixed(ArrayNode n, TypeId id, long i) {
        MemorySegment data = n.buffer(1);
        int w = id.byteWidth();
        long at = i * w;
        return switch (id) {
            case INT8 -> Byte.toString(data.get(JAVA_BYTE, at));
            case UINT8 -> Integer.toString(Byte.toUnsignedInt(data.get(JAVA_BYTE, at)));
            case INT16 -> Short.toString(data.get(JAVA_SHORT_UNALIGNED, at));
            case UINT16 -> Integer.toString(Short.toUnsignedInt(data.get(JAVA_SHORT_UNALIGNED, at)));
            case INT32, DATE32, TIME32 -> Integer.toString(data.get(JAVA_INT_UNALIGNED, at));
            case UINT32 -> Integer.toUnsignedString(data.get(JAVA_INT_UNALIGNED, at));
            case INT64, DATE64, TIME64, TIMESTAMP, DURATION -> Long.toString(data.get(JAVA_LONG_UNALIGNED, at));
            case UINT64 -> Long.toUnsignedString(data.get(JAVA_LONG_UNALIGNED, at));
            case FLOAT32 -> "f:" + Double.doubleToRawLongBits(Float.intBitsToFloat(data.get(JAVA_INT_UNALIGNED, at)));
            case FLOAT64 -> "f:" + Double.doubleToRawLongBits(Double.longBitsToDouble(data.get(JAVA_LONG_UNALIGNED, at)));
            case DECIMAL32, DECIMAL64, DECIMAL128, DECIMAL256 -> "d:" + littleEndian(data, at, w);
            default -> throw new IllegalStateException("no canonical text for " + id);
        };
    }

    /** A two's complement little-endian integer of {@code width} bytes. */
    private static BigInteger littleEndian(MemorySegment data, long at, int width) {
        byte[] bigEndian = new byte[width];
        for (int k = 0; k < width; k++) {
            bigEndian[width - 1 - k] = data.get(JAVA_BYTE, at + k);
        }
        return new BigInteger(bigEndian);
    }

    private static String hex(MemorySegment data, long start, long length) {
        return HEX.formatHex(data.asSlice(start, length).toArray(JAVA_BYTE));
    }
}
