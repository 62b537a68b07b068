package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.Bitmaps;

/**
 * The checks that read buffer contents (offsets, UTF-8, views, list views, union type ids and offsets, run
 * ends, dictionary indices) for {@link ArrayReader}, at DEFAULT and FULL: over host memory directly, or
 * over host copies of device memory ({@link HostCopies}). Every read goes through {@link #host}, sized
 * from validated metadata with exact arithmetic.
 */
final class ContentChecks {
    private final ValidationLevel level;
    private final boolean host;
    private final HostCopies copies; // where device contents are read from; null for host memory
    private final SchemaLayout layout;
    private final ArrayTable table;

    ContentChecks(ValidationLevel level, ArrayTable table, HostCopies copies) {
        this.level = level;
        this.host = table.host;
        this.copies = copies;
        this.layout = table.layout;
        this.table = table;
    }

    boolean minimal() {
        return level != ValidationLevel.NONE;
    }

    /** The field path of {@code field} of node {@code n}, built only for a message. */
    String at(int n, String field) {
        return layout.path(n, field);
    }

    /** Whether buffer contents can be read: host memory, or device memory with host copies. */
    boolean readable() {
        return host || copies != null;
    }

    boolean reads() {
        return readable() && (level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL);
    }

    boolean full() {
        return readable() && level == ValidationLevel.FULL;
    }

    /** The first and last offsets of a node's elements. */
    record OffsetRange(long first, long last) {}

    /** Reads the first and last offsets (and at FULL every offset) of elements [offset, offset + length]. */
    OffsetRange checkOffsets(long address, long offset, long length, int width, int n) {
        String path = at(n, "buffers[1]");
        MemorySegment s = host(address, mul(add(add(offset, length, n, "buffers[1]"), 1, n, "buffers[1]"), width, n,
                "buffers[1]"), path);
        long first = offsetAt(s, offset, width);
        long last = offsetAt(s, offset + length, width);
        if (first < 0) {
            throw new ValidationException(Category.CONTENT, path, "expected a non-negative first offset but found " + first);
        }
        if (last < first) {
            throw new ValidationException(Category.CONTENT, path,
                    "expected the last offset to be at least the first (" + first + ") but found " + last);
        }
        if (full()) {
            long i = OffsetScan.firstDecrease(s, offset, offset + length, width);
            if (i >= 0) {
                throw new ValidationException(Category.CONTENT, path, "offsets not monotonic at index " + (i - offset)
                        + ": expected at least " + offsetAt(s, i - 1, width) + " but found " + offsetAt(s, i, width));
            }
        }
        return new OffsetRange(first, last);
    }

    /** FULL: every non-null string of (utf8 or large utf8) node {@code n}, its buffers sized in {@code len}, is UTF-8. */
    void checkUtf8(int n, long[] addr, long[] len) {
        long offset = table.offset(n);
        long length = table.length(n);
        int w = layout.schema(n).type().layout().offsetWidth();
        String path = layout.path(n);
        MemorySegment offs = host(addr[1], len[1], at(path, "buffers[1]"));
        MemorySegment data = host(addr[2], len[2], at(path, "buffers[2]"));
        MemorySegment validity = addr[0] == 0 ? null : host(addr[0], len[0], at(path, "buffers[0]"));
        java.nio.charset.CharsetDecoder decoder = Utf8.decoder();
        String dp = at(path, "buffers[2]");
        for (long i = offset; i < offset + length; i++) {
            if (validity != null && !Bitmaps.bit(validity, i)) {
                continue;
            }
            long from = offsetAt(offs, i, w);
            long to = offsetAt(offs, i + 1, w);
            Utf8.check(decoder, data.asSlice(from, to - from), dp, i - offset);
        }
    }

    private static long offsetAt(MemorySegment s, long index, int width) {
        return width == 4 ? s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, index)
                : s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index);
    }

    /**
     * Views of node {@code n}'s non-null elements: a non-negative size, and for a view out of line a buffer
     * index and a byte range within the {@code variadic} buffers (what every reader relies on). With
     * {@code strict} also what Arrow C++'s {@code ValidateFull} requires beyond bounds: zero padding after
     * inline bytes, a prefix equal to the first 4 bytes of the data, and for a utf8 view valid UTF-8.
     */
    void checkViews(int n, long[] addr, long[] len, int variadic, boolean strict) {
        long offset = table.offset(n);
        long length = table.length(n);
        boolean utf8 = strict && layout.schema(n).type().id() == ArrowDataType.TypeId.UTF8_VIEW;
        String path = layout.path(n);
        String vp = at(path, "buffers[1]");
        MemorySegment views = host(addr[1], len[1], vp);
        MemorySegment validity = addr[0] == 0 ? null : host(addr[0], len[0], at(path, "buffers[0]"));
        java.nio.charset.CharsetDecoder decoder = utf8 ? Utf8.decoder() : null;
        int cachedIndex = -1; // the variadic buffer read last, as most views point into one or a few
        MemorySegment cached = null;
        for (long i = offset; i < offset + length; i++) {
            if (validity != null && !Bitmaps.bit(validity, i)) {
                continue; // the view of a null slot is unspecified (producers leave garbage there)
            }
            long base = i * 16;
            int size = views.get(ValueLayout.JAVA_INT_UNALIGNED, base);
            if (size < 0) {
                throw new ValidationException(Category.CONTENT, vp, "view " + (i - offset)
                        + ": expected a non-negative length but found " + size);
            }
            if (size <= 12) {
                if (strict) {
                    for (long b = base + 4 + size; b < base + 16; b++) {
                        if (views.get(ValueLayout.JAVA_BYTE, b) != 0) {
                            throw new ValidationException(Category.CONTENT, vp, "view " + (i - offset) + ": expected zero"
                                    + " padding after its " + size + " inline bytes but found a non-zero byte at "
                                    + (b - base));
                        }
                    }
                }
                if (decoder != null) {
                    Utf8.check(decoder, views.asSlice(base + 4, size), vp, i - offset);
                }
                continue;
            }
            int buffer = views.get(ValueLayout.JAVA_INT_UNALIGNED, base + 8);
            int off = views.get(ValueLayout.JAVA_INT_UNALIGNED, base + 12);
            if (buffer < 0 || buffer >= variadic) {
                throw new ValidationException(Category.CONTENT, vp, "view " + (i - offset)
                        + ": expected a buffer index in [0, " + variadic + ") but found " + buffer);
            }
            if (off < 0 || (long) off + size > len[2 + buffer]) {
                throw new ValidationException(Category.CONTENT, vp, "view " + (i - offset) + ": expected bytes ["
                        + off + ", " + ((long) off + size) + ") within variadic buffer " + buffer + " of "
                        + len[2 + buffer] + " bytes");
            }
            if (!strict && decoder == null) {
                continue;
            }
            if (buffer != cachedIndex) {
                cached = host(addr[2 + buffer], len[2 + buffer], at(path, "buffers[" + (2 + buffer) + "]"));
                cachedIndex = buffer;
            }
            if (strict && views.get(ValueLayout.JAVA_INT_UNALIGNED, base + 4) != cached.get(ValueLayout.JAVA_INT_UNALIGNED, off)) {
                throw new ValidationException(Category.CONTENT, vp, String.format(Locale.ROOT, "view %d: expected the "
                        + "prefix to equal the first 4 bytes of its data (0x%08x) but found 0x%08x", i - offset,
                        Integer.reverseBytes(cached.get(ValueLayout.JAVA_INT_UNALIGNED, off)),
                        Integer.reverseBytes(views.get(ValueLayout.JAVA_INT_UNALIGNED, base + 4))));
            }
            if (decoder != null) {
                Utf8.check(decoder, cached.asSlice(off, size), vp, i - offset);
            }
        }
    }

    /** FULL: every non-null list view of node {@code n} lies within its child. */
    void checkListViews(int n, long[] addr) {
        long offset = table.offset(n);
        long length = table.length(n);
        int width = layout.schema(n).type().layout().offsetWidth();
        long childLength = table.length(layout.child(n, 0));
        String path = layout.path(n);
        long bytes = mul(add(offset, length, n, ""), width, n, "");
        MemorySegment offs = host(addr[1], bytes, at(path, "buffers[1]"));
        MemorySegment sizes = host(addr[2], bytes, at(path, "buffers[2]"));
        for (long i = offset; i < offset + length; i++) {
            long o = offsetAt(offs, i, width);
            long s = offsetAt(sizes, i, width);
            if (o < 0 || s < 0 || o > childLength - s) {
                throw new ValidationException(Category.CONTENT, at(path, "buffers[1]"), "list view " + (i - offset)
                        + ": expected offset and size within the child's " + childLength + " elements but found offset "
                        + o + " and size " + s);
            }
        }
    }

    /** FULL: every type id of union node {@code n} is declared and, if dense, every offset lies within its child. */
    void checkUnion(int n, long[] addr) {
        long offset = table.offset(n);
        long length = table.length(n);
        ArrowDataType type = layout.schema(n).type();
        boolean dense = type.layout() == ArrowDataType.Layout.DENSE_UNION;
        String path = layout.path(n);
        String tp = at(path, "buffers[0]");
        MemorySegment ids = host(addr[0], offset + length, tp);
        MemorySegment offs = dense ? host(addr[1], mul(offset + length, 4, n, ""), at(path, "buffers[1]")) : null;
        List<Integer> declared = type.unionTypeIds();
        long[] lastOffset = dense ? new long[declared.size()] : null; // per child: offsets must not decrease
        for (long i = offset; i < offset + length; i++) {
            int id = ids.get(ValueLayout.JAVA_BYTE, i);
            int child = declared.indexOf(id);
            if (child < 0) {
                throw new ValidationException(Category.CONTENT, tp, "type id at index " + (i - offset)
                        + ": expected one of " + declared + " but found " + id);
            }
            if (dense) {
                int o = offs.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
                long childLength = table.length(layout.child(n, child));
                if (o < 0 || o >= childLength) {
                    throw new ValidationException(Category.CONTENT, at(path, "buffers[1]"), "offset at index "
                            + (i - offset) + ": expected a value in [0, " + childLength + ") but found " + o);
                }
                if (o < lastOffset[child]) {
                    throw new ValidationException(Category.CONTENT, at(path, "buffers[1]"), "offset at index "
                            + (i - offset) + ": expected offsets into child " + child + " not to decrease, at least "
                            + lastOffset[child] + ", but found " + o);
                }
                lastOffset[child] = o;
            }
        }
    }

    /**
     * Run-end encoded node {@code n}: at MINIMAL the children's lengths (run ends not longer than values,
     * none only for no values and length 0), a run-end type wide enough for offset + length, run ends
     * without nulls; from DEFAULT a first run end of at least 1 and a last one of at least offset + length;
     * at FULL run ends strictly increasing.
     */
    void checkRunEnds(int n, long end, long length) {
        String path = layout.path(n);
        int runEnds = layout.child(n, 0);
        int values = layout.child(n, 1);
        if (!minimal()) {
            return;
        }
        int w = layout.schema(runEnds).type().elementByteWidth();
        long max = w == 2 ? Short.MAX_VALUE : w == 4 ? Integer.MAX_VALUE : Long.MAX_VALUE;
        if (end > max) {
            throw new ValidationException(Category.SIZE, at(path, "length"), "expected offset + length to fit in the "
                    + layout.schema(runEnds).type() + " run ends (at most " + max + ") but found " + end);
        }
        long runs = table.length(runEnds);
        long valueCount = table.length(values);
        if (runs > valueCount || (runs == 0 && valueCount != 0)) {
            throw new ValidationException(Category.LENGTH, at(path, "children[1].length"), "expected "
                    + (runs == 0 ? "0 values for 0 runs" : "at least " + runs + " values (one per run)") + " but found "
                    + valueCount);
        }
        requireNoNulls(runEnds, "run ends");
        if (length > 0 && runs == 0) {
            throw new ValidationException(Category.LENGTH, at(path, "children[0].length"),
                    "expected at least 1 run for length " + length + " but found 0");
        }
        if (!reads() || runs == 0) {
            return;
        }
        String rp = at(path, "children[0].buffers[1]");
        long first = table.offset(runEnds);
        MemorySegment s = host(table.bufferAddress(runEnds, 1), mul(first + runs, w, runEnds, "buffers[1]"), rp);
        long firstEnd = RunEnds.at(s, first, w);
        if (firstEnd < 1) {
            throw new ValidationException(Category.CONTENT, rp, "expected the first run end to be at least 1 but found "
                    + firstEnd);
        }
        long last = RunEnds.at(s, first + runs - 1, w);
        if (last < end) {
            throw new ValidationException(Category.CONTENT, rp, "expected the last run end to be at least " + end
                    + " (offset + length) but found " + last);
        }
        if (full()) {
            RunEnds.checkRunEndsIncrease(s, first, runs, w, rp);
        }
    }

    /**
     * Node {@code child} (map entries or keys, run ends) holds no null: at MINIMAL its null count is not
     * positive; from DEFAULT an unknown null count (-1) is resolved by counting its validity bitmap.
     */
    void requireNoNulls(int child, String what) {
        long nulls = table.nullCount(child);
        if (minimal() && nulls > 0) {
            throw new ValidationException(Category.CONTENT, at(child, "null_count"), "expected no nulls in the "
                    + what + " but found a null count of " + nulls);
        }
        long bitmap = table.bufferAddress(child, 0);
        if (nulls == -1 && bitmap != 0 && reads()) {
            long length = table.length(child);
            MemorySegment v = host(bitmap, table.bufferLength(child, 0), at(child, "buffers[0]"));
            long counted = length - Bitmaps.countSet(v, table.offset(child), length);
            if (counted != 0) {
                throw new ValidationException(Category.CONTENT, at(child, "buffers[0]"), "expected no nulls in the "
                        + what + " but found " + counted + " null bits (null count -1)");
            }
        }
    }

    /**
     * FULL: the declared null count of node {@code n} (unless -1) equals the null bits of its validity
     * bitmap over [offset, offset + length). Nodes without a bitmap have no nulls, which MINIMAL checked.
     */
    void checkNullCount(int n, long[] addr, long[] len) {
        long offset = table.offset(n);
        long length = table.length(n);
        long nullCount = table.nullCount(n);
        if (nullCount < 0 || addr[0] == 0) {
            return;
        }
        MemorySegment v = host(addr[0], len[0], at(n, "buffers[0]"));
        long counted = length - Bitmaps.countSet(v, offset, length);
        if (counted != nullCount) {
            throw new ValidationException(Category.CONTENT, at(n, "null_count"), "expected the null count to be "
                    + counted + " (the null bits of the validity bitmap) but found " + nullCount);
        }
    }

    /** FULL: every non-null index of dictionary-encoded node {@code n} lies within its dictionary. */
    void checkDictionaryIndices(int n, long[] addr) {
        long offset = table.offset(n);
        long length = table.length(n);
        ArrowDataType type = layout.schema(n).type();
        long dictLength = table.length(layout.dictionary(n));
        String path = layout.path(n);
        String ip = at(path, "buffers[1]");
        MemorySegment values = host(addr[1], mul(offset + length, type.elementByteWidth(), n, "buffers[1]"), ip);
        MemorySegment validity = addr[0] == 0 ? null : host(addr[0], Bitmaps.bytes(offset + length), at(path, "buffers[0]"));
        for (long i = offset; i < offset + length; i++) {
            if (validity != null && !Bitmaps.bit(validity, i)) {
                continue;
            }
            long v = ValueChecks.integerAt(values, i, type);
            if (v < 0 || v >= dictLength) {
                throw new ValidationException(Category.CONTENT, ip, "dictionary index at " + (i - offset)
                        + ": expected a value in [0, " + dictLength + ") but found "
                        + (type.id() == ArrowDataType.TypeId.UINT64 ? Long.toUnsignedString(v) : String.valueOf(v)));
            }
        }
    }

    /**
     * A host segment of {@code bytes} validated bytes at {@code address} (for device memory: its host copy),
     * for reading contents; internal only (never handed out).
     */
    MemorySegment host(long address, long bytes, String path) {
        if (address == 0) {
            if (bytes == 0) {
                return MemorySegment.NULL;
            }
            throw new ValidationException(Category.NULL_POINTER, path, "expected a buffer of " + bytes + " bytes but found NULL");
        }
        if (copies == null) {
            return MemorySegment.ofAddress(address).reinterpret(bytes);
        }
        MemorySegment copy = copies.find(address, bytes);
        if (copy == null || copy.byteSize() < bytes) {
            throw host
                    ? new ValidationException(Category.CONTENT, path, "expected contents within the buffer's "
                            + "known size but they imply " + bytes + " bytes")
                    : new ValidationException(Category.DEVICE, path, "expected a host copy of " + bytes
                            + " bytes of device memory to validate but found none");
        }
        return copy;
    }

    /** {@code a + b}, exactly; on overflow a SIZE error at {@code field} of node {@code n}. */
    long add(long a, long b, int n, String field) {
        try {
            return Math.addExact(a, b);
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, at(n, field), String.format(Locale.ROOT,
                    "expected %d + %d to fit in 64 bits but it overflows", a, b));
        }
    }

    /** {@code a * b}, exactly; on overflow a SIZE error at {@code field} of node {@code n}. */
    long mul(long a, long b, int n, String field) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, at(n, field), String.format(Locale.ROOT,
                    "expected %d x %d bytes to fit in 64 bits but it overflows", a, b));
        }
    }

    private static String at(String path, String field) {
        return SchemaReader.join(path, field);
    }
}
