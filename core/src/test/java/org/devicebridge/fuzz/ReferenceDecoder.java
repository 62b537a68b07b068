package org.devicebridge.fuzz;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.devicebridge.arrow.ArrowDataType;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.generated.arrow.ArrowArray;

/**
 * The fuzz oracle's independent decoder: the logical values of an ArrowArray, read straight from the C
 * structs by the columnar specification (never through the library's array view), each row as a canonical
 * string that {@link ArrowJavaValues} also produces from Arrow Java vectors. Types come from the imported
 * {@link SchemaNode} (format parsing is not what this checks); everything else - counts, offsets, buffers,
 * children, dictionaries - from the raw {@code ArrowArray} structs in the generator's memory, every read
 * bounded by the generator's own buffers ({@link Fuzz.Mem#insideBuffer}).
 *
 * <p>Canonical values: {@code N} null; {@code T}/{@code F} boolean; lower-case hex of the little-endian bytes
 * of a fixed-width value; {@code D} + the unscaled integer of a decimal; {@code B} + hex of binary and
 * string bytes; {@code [a,b]} lists (every list layout and maps); <code>{a,b}</code> structs; {@code Uk:v} the
 * value {@code v} of child {@code k} of a union. Dictionary-encoded and run-end encoded values decode to
 * the value they stand for.
 *
 * <p>Where the contents break the specification in a way that leaves no defined value (an offset outside
 * its child, a type id not declared, a dictionary index out of range, a view outside its buffer, run ends
 * not increasing, a buffer count that does not match the layout...) {@link #decode} throws
 * {@link Undecodable}: a consumer must then reject the input, since there is no right value to return.
 * Not thread-safe; one per input.
 */
final class ReferenceDecoder {
    private static final HexFormat HEX = HexFormat.of();
    private static final int MAX_DEPTH = 70;

    /** The contents have no defined value (see the class comment); no stack trace (cheap). */
    static final class Undecodable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Undecodable(String message) {
            super(message, null, false, false);
        }
    }

    private final Fuzz.Mem mem;
    /**
     * How a node with {@code null_count == 0} and a validity bitmap is read: by the bitmap (the bitmap is the
     * truth) or as all valid (as Arrow C++'s importer does: it drops such a bitmap). The oracle accepts
     * either for inputs whose null count disagrees with the bitmap.
     */
    private final boolean zeroNullCountMeansValid;

    ReferenceDecoder(Fuzz.Mem mem, boolean zeroNullCountMeansValid) {
        this.mem = mem;
        this.zeroNullCountMeansValid = zeroNullCountMeansValid;
    }

    /** The values of rows [0, length) of {@code array} (a raw ArrowArray) typed by {@code schema}. */
    List<String> decode(SchemaNode schema, MemorySegment array) {
        Node root = node(schema, array, 0);
        if (root.length > ArrowFuzz.MAX_COUNT * 4L) {
            throw new Undecodable("root length " + root.length);
        }
        List<String> rows = new ArrayList<>((int) root.length);
        StringBuilder sb = new StringBuilder();
        for (long i = 0; i < root.length; i++) {
            sb.setLength(0);
            value(root, i, sb, 0);
            rows.add(sb.toString());
        }
        return rows;
    }

    /** One node's struct fields, read once. */
    private final class Node {
        final SchemaNode schema;
        final ArrowDataType type;
        final MemorySegment array;
        final long length;
        final long offset;
        final long nullCount;
        final long nBuffers;
        final long nChildren;
        final int depth;
        private Node[] children;
        private Node dictionary;

        Node(SchemaNode schema, MemorySegment array, int depth) {
            this.schema = schema;
            this.array = array;
            this.depth = depth;
            this.type = schema.type();
            length = ArrowArray.length(array);
            offset = ArrowArray.offset(array);
            nullCount = ArrowArray.null_count(array);
            nBuffers = ArrowArray.n_buffers(array);
            nChildren = ArrowArray.n_children(array);
            if (length < 0 || offset < 0 || length > 1 << 20 || offset > 1 << 20) {
                throw new Undecodable(schema.path() + ": length " + length + ", offset " + offset);
            }
            if (nChildren != schema.children().size()) {
                throw new Undecodable(schema.path() + ": n_children " + nChildren);
            }
            long expected = switch (type.layout()) {
                case NULL, RUN_END_ENCODED -> 0;
                case FIXED_SIZE_LIST, STRUCT, SPARSE_UNION -> 1;
                case BOOL, FIXED_WIDTH, FIXED_SIZE_BINARY, LIST, LARGE_LIST, DENSE_UNION -> 2;
                case VARIABLE, LARGE_VARIABLE, LIST_VIEW, LARGE_LIST_VIEW -> 3;
                case VIEW -> nBuffers < 3 || nBuffers > 8 ? -1 : nBuffers;
            };
            if (schema.dictionary() != null) {
                expected = 2; // the index type's layout
            }
            if (nBuffers != expected) {
                throw new Undecodable(schema.path() + ": n_buffers " + nBuffers);
            }
            if (depth > MAX_DEPTH) {
                throw new Undecodable(schema.path() + ": deeper than " + MAX_DEPTH);
            }
        }

        Node child(int i) {
            if (children == null) {
                children = new Node[(int) nChildren];
            }
            if (children[i] == null) {
                MemorySegment ptrs = pointer(ArrowArray.children(array), 8 * nChildren, "children");
                MemorySegment c = ptrs.getAtIndex(ADDRESS, i);
                if (c.address() == 0) {
                    throw new Undecodable(schema.path() + ": children[" + i + "] NULL");
                }
                children[i] = node(schema.children().get(i), pointer(c, ArrowArray.sizeof(), "child"), depth + 1);
            }
            return children[i];
        }

        Node dictionary() {
            if (dictionary == null) {
                MemorySegment d = ArrowArray.dictionary(array);
                if (d.address() == 0) {
                    throw new Undecodable(schema.path() + ": dictionary NULL");
                }
                dictionary = node(schema.dictionary(), pointer(d, ArrowArray.sizeof(), "dictionary"), depth + 1);
            }
            return dictionary;
        }

        /** Buffer {@code i}, checked to hold {@code bytes} bytes inside one generated buffer. */
        MemorySegment buffer(int i, long bytes) {
            MemorySegment ptrs = pointer(ArrowArray.buffers(array), 8 * nBuffers, "buffers");
            MemorySegment b = ptrs.getAtIndex(ADDRESS, i);
            if (bytes == 0) {
                return MemorySegment.NULL;
            }
            MemorySegment view = b.address() == 0 || !mem.insideBuffer(b.address(), bytes) ? null : mem.view(b.address(), bytes);
            if (view == null) {
                throw new Undecodable(schema.path() + ".buffers[" + i + "]: " + bytes + " bytes not there");
            }
            return view;
        }

        boolean hasValidity() {
            return switch (type.layout()) {
                case NULL, SPARSE_UNION, DENSE_UNION, RUN_END_ENCODED -> false;
                default -> true;
            };
        }

        /** Whether physical element {@code p} is null by the validity bitmap. */
        boolean isNull(long p) {
            if (type.layout() == ArrowDataType.Layout.NULL) {
                return true;
            }
            if (!hasValidity() || (nullCount == 0 && zeroNullCountMeansValid)) {
                return false;
            }
            MemorySegment ptrs = pointer(ArrowArray.buffers(array), 8 * nBuffers, "buffers");
            if (ptrs.getAtIndex(ADDRESS, 0).address() == 0) {
                return false;
            }
            MemorySegment v = buffer(0, p / 8 + 1);
            return (v.get(JAVA_BYTE, p / 8) & (1 << (p & 7))) == 0;
        }
    }

    private Node node(SchemaNode schema, MemorySegment array, int depth) {
        return new Node(schema, array, depth);
    }

    /** The {@code bytes} of generator memory {@code p} points at. */
    private MemorySegment pointer(MemorySegment p, long bytes, String what) {
        MemorySegment view = p.address() == 0 ? null : mem.view(p.address(), bytes);
        if (view == null) {
            throw new Undecodable(what + " NULL or outside the input");
        }
        return view;
    }

    /** Appends the value of logical element {@code k} of {@code n}. */
    private void value(Node n, long k, StringBuilder out, int depth) {
        if (depth > MAX_DEPTH) {
            throw new Undecodable(n.schema.path() + ": values nest deeper than " + MAX_DEPTH);
        }
        if (k < 0 || k >= n.length) {
            throw new Undecodable(n.schema.path() + ": element " + k + " of " + n.length);
        }
        long p = n.offset + k;
        if (n.isNull(p)) {
            out.append('N');
            return;
        }
        ArrowDataType t = n.type;
        if (n.schema.dictionary() != null) {
            long index = integer(n.buffer(1, (p + 1) * t.elementByteWidth()), p, t);
            Node d = n.dictionary();
            if (index < 0 || index >= d.length) {
                throw new Undecodable(n.schema.path() + ": dictionary index " + index + " of " + d.length);
            }
            value(d, index, out, depth + 1);
            return;
        }
        switch (t.layout()) {
            case NULL -> out.append('N');
            case BOOL -> out.append((n.buffer(1, p / 8 + 1).get(JAVA_BYTE, p / 8) & (1 << (p & 7))) != 0 ? 'T' : 'F');
            case FIXED_WIDTH, FIXED_SIZE_BINARY -> {
                int w = t.elementByteWidth();
                MemorySegment b = n.buffer(1, (p + 1) * w);
                byte[] bytes = b.asSlice(p * w, w).toArray(JAVA_BYTE);
                if (isDecimal(t.id())) {
                    out.append('D').append(littleEndian(bytes));
                } else {
                    out.append(HEX.formatHex(bytes));
                }
            }
            case VARIABLE, LARGE_VARIABLE -> {
                int w = t.layout().offsetWidth();
                MemorySegment offs = n.buffer(1, (p + 2) * w);
                long from = offset(offs, p, w);
                long to = offset(offs, p + 1, w);
                if (from < 0 || to < from) {
                    throw new Undecodable(n.schema.path() + ": value " + k + " at [" + from + ", " + to + ")");
                }
                MemorySegment data = n.buffer(2, to);
                out.append('B').append(HEX.formatHex(data.asSlice(from, to - from).toArray(JAVA_BYTE)));
            }
            case VIEW -> view(n, k, p, out);
            case LIST, LARGE_LIST -> {
                int w = t.layout().offsetWidth();
                MemorySegment offs = n.buffer(1, (p + 2) * w);
                list(n, k, offset(offs, p, w), offset(offs, p + 1, w), out, depth);
            }
            case LIST_VIEW, LARGE_LIST_VIEW -> {
                int w = t.layout().offsetWidth();
                long o = offset(n.buffer(1, (p + 1) * w), p, w);
                long s = offset(n.buffer(2, (p + 1) * w), p, w);
                if (s < 0) {
                    throw new Undecodable(n.schema.path() + ": list view " + k + " of size " + s);
                }
                list(n, k, o, o + s, out, depth);
            }
            case FIXED_SIZE_LIST -> {
                long size = t.fixedSize();
                list(n, k, p * size, p * size + size, out, depth);
            }
            case STRUCT -> {
                out.append('{');
                for (int i = 0; i < n.nChildren; i++) {
                    if (i > 0) {
                        out.append(',');
                    }
                    value(n.child(i), p, out, depth + 1);
                }
                out.append('}');
            }
            case SPARSE_UNION, DENSE_UNION -> {
                int id = n.buffer(0, p + 1).get(JAVA_BYTE, p);
                int child = t.unionTypeIds().indexOf(id);
                if (child < 0) {
                    throw new Undecodable(n.schema.path() + ": type id " + id + " at " + k);
                }
                long at = p;
                if (t.layout() == ArrowDataType.Layout.DENSE_UNION) {
                    at = n.buffer(1, (p + 1) * 4).getAtIndex(JAVA_INT_UNALIGNED, p);
                }
                out.append('U').append(child).append(':');
                value(n.child(child), at, out, depth + 1);
            }
            case RUN_END_ENCODED -> {
                Node ends = n.child(0);
                Node values = n.child(1);
                int w = ends.type.elementByteWidth();
                if (!ends.type.id().isInteger() || w < 2 || ends.nullCount != 0) {
                    throw new Undecodable(n.schema.path() + ": run ends " + ends.type + " with " + ends.nullCount + " nulls");
                }
                MemorySegment b = ends.buffer(1, (ends.offset + ends.length) * w);
                long prev = 0;
                long run = -1;
                for (long j = 0; j < ends.length; j++) {
                    long e = integer(b, ends.offset + j, ends.type);
                    if (e <= prev) {
                        throw new Undecodable(n.schema.path() + ": run ends not increasing at " + j);
                    }
                    prev = e;
                    if (run < 0 && e > p) {
                        run = j;
                    }
                }
                if (run < 0 || prev < n.offset + n.length) {
                    throw new Undecodable(n.schema.path() + ": run ends end at " + prev);
                }
                value(values, run, out, depth + 1);
            }
            default -> throw new IllegalStateException("layout " + t.layout());
        }
    }

    private void list(Node n, long k, long from, long to, StringBuilder out, int depth) {
        if (from < 0 || to < from) {
            throw new Undecodable(n.schema.path() + ": list " + k + " at [" + from + ", " + to + ")");
        }
        Node child = n.child(0);
        out.append('[');
        for (long i = from; i < to; i++) {
            if (i > from) {
                out.append(',');
            }
            value(child, i, out, depth + 1);
        }
        out.append(']');
    }

    private void view(Node n, long k, long p, StringBuilder out) {
        MemorySegment views = n.buffer(1, (p + 1) * 16);
        long at = p * 16;
        int size = views.get(JAVA_INT_UNALIGNED, at);
        if (size < 0) {
            throw new Undecodable(n.schema.path() + ": view " + k + " of size " + size);
        }
        byte[] bytes;
        if (size <= 12) {
            bytes = views.asSlice(at + 4, size).toArray(JAVA_BYTE);
        } else {
            int buffer = views.get(JAVA_INT_UNALIGNED, at + 8);
            int off = views.get(JAVA_INT_UNALIGNED, at + 12);
            long variadic = n.nBuffers - 3;
            if (buffer < 0 || buffer >= variadic || off < 0) {
                throw new Undecodable(n.schema.path() + ": view " + k + " in buffer " + buffer + " at " + off);
            }
            long declared = n.buffer((int) n.nBuffers - 1, variadic * 8).getAtIndex(JAVA_LONG_UNALIGNED, buffer);
            if ((long) off + size > declared) {
                throw new Undecodable(n.schema.path() + ": view " + k + " beyond its buffer's " + declared + " bytes");
            }
            // the value is the data; a prefix that differs from it is invalid (FULL rejects it) but leaves the value defined
            bytes = n.buffer(2 + buffer, (long) off + size).asSlice(off, size).toArray(JAVA_BYTE);
        }
        out.append('B').append(HEX.formatHex(bytes));
    }

    static boolean isDecimal(TypeId id) {
        return id == TypeId.DECIMAL32 || id == TypeId.DECIMAL64 || id == TypeId.DECIMAL128 || id == TypeId.DECIMAL256;
    }

    /** The signed integer of little-endian two's complement {@code bytes}. */
    static BigInteger littleEndian(byte[] bytes) {
        byte[] be = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            be[i] = bytes[bytes.length - 1 - i];
        }
        return new BigInteger(be);
    }

    private static long offset(MemorySegment s, long i, int w) {
        return w == 4 ? s.getAtIndex(JAVA_INT_UNALIGNED, i) : s.getAtIndex(JAVA_LONG_UNALIGNED, i);
    }

    /** Element {@code i} of an integer buffer of type {@code t} (unsigned types zero-extended). */
    private static long integer(MemorySegment s, long i, ArrowDataType t) {
        return switch (t.id()) {
            case INT8 -> s.get(JAVA_BYTE, i);
            case UINT8 -> Byte.toUnsignedLong(s.get(JAVA_BYTE, i));
            case INT16 -> s.getAtIndex(JAVA_SHORT_UNALIGNED, i);
            case UINT16 -> Short.toUnsignedLong(s.getAtIndex(JAVA_SHORT_UNALIGNED, i));
            case INT32 -> s.getAtIndex(JAVA_INT_UNALIGNED, i);
            case UINT32 -> Integer.toUnsignedLong(s.getAtIndex(JAVA_INT_UNALIGNED, i));
            case INT64 -> s.getAtIndex(JAVA_LONG_UNALIGNED, i);
            case UINT64 -> {
                long v = s.getAtIndex(JAVA_LONG_UNALIGNED, i);
                if (v < 0) {
                    throw new Undecodable("uint64 index beyond a long");
                }
                yield v;
            }
            default -> throw new Undecodable("index type " + t);
        };
    }
}
