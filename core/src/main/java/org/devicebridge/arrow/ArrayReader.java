package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Bitmaps;

/**
 * The single validation entry point for {@code ArrowArray} trees: checks a struct against its schema at a
 * {@link ValidationLevel} and builds the {@link ArrayNode} tree with every buffer sized (the one place
 * where buffer pointers read from the struct get a size). Reads buffer contents only at DEFAULT and FULL
 * and only for host memory, always through unaligned layouts.
 */
final class ArrayReader {
    // Fields read by address (one home for the offsets and the by-address segment: ArrowArrayFields).
    private static final MemorySegment STRUCTS = ArrowArrayFields.BY_ADDRESS;
    private static final long LENGTH = ArrowArrayFields.LENGTH;
    private static final long NULL_COUNT = ArrowArrayFields.NULL_COUNT;
    private static final long OFFSET = ArrowArrayFields.OFFSET;
    private static final long N_BUFFERS = ArrowArrayFields.N_BUFFERS;
    private static final long N_CHILDREN = ArrowArrayFields.N_CHILDREN;
    private static final long BUFFERS = ArrowArrayFields.BUFFERS;
    private static final long CHILDREN = ArrowArrayFields.CHILDREN;
    private static final long DICTIONARY = ArrowArrayFields.DICTIONARY;
    private static final long RELEASE = ArrowArrayFields.RELEASE;

    // The two switches below as tables, read once per node.
    private static final int[] EXPECTED_BUFFERS = new int[Layout.values().length];
    private static final boolean[] HAS_VALIDITY = new boolean[Layout.values().length];

    static {
        for (Layout l : Layout.values()) {
            EXPECTED_BUFFERS[l.ordinal()] = expectedBuffers(l);
            HAS_VALIDITY[l.ordinal()] = hasValidity(l);
        }
    }

    private final ValidationLevel level;
    private final SchemaLayout layout;
    private final ArrayTable table;
    private final long[] ancestors; // producer addresses of the nodes on the current path, for cycles
    private int depth;
    // Buffer addresses and lengths of the node being checked at each depth, reused by its siblings: a
    // node's buffers are read before its children are checked, so each level needs its own pair.
    private final long[][] addressScratch;
    private final long[][] lengthScratch;
    private final Scratch scratch;
    private final ContentChecks contents;

    private ArrayReader(ValidationLevel level, ArrayTable table, HostCopies copies) {
        this.level = level;
        this.layout = table.layout;
        this.table = table;
        this.contents = new ContentChecks(level, table, copies);
        Scratch mine = Scratch.take(layout.depth() + 1);
        this.scratch = mine;
        this.ancestors = mine.ancestors;
        this.addressScratch = mine.addresses;
        this.lengthScratch = mine.lengths;
    }

    /**
     * The working arrays of a read, kept per thread between imports so that validating a batch allocates
     * only its table. A read that finds them in use (a read started inside another on the same thread)
     * makes its own.
     */
    private static final class Scratch {
        private static final ThreadLocal<Scratch> PER_THREAD = new ThreadLocal<>();
        final long[] ancestors;
        final long[][] addresses;
        final long[][] lengths;
        boolean inUse;

        private Scratch(int levels) {
            ancestors = new long[levels];
            addresses = new long[levels][];
            lengths = new long[levels][];
        }

        static Scratch take(int levels) {
            Scratch cached = PER_THREAD.get();
            if (cached != null && !cached.inUse && cached.ancestors.length >= levels) {
                cached.inUse = true;
                return cached;
            }
            Scratch s = new Scratch(Math.max(levels, 4));
            if (cached == null || !cached.inUse) {
                PER_THREAD.set(s); // the first, or a deeper schema: keep the larger one
            }
            s.inUse = true;
            return s;
        }
    }

    /** Gives the scratch arrays back to the thread; the reader is not used afterwards. */
    private void done() {
        scratch.inUse = false;
    }

    /** This depth's scratch array of at least {@code n} entries, its first {@code n} cleared if {@code clear}. */
    private static long[] scratch(long[][] levels, int level, int n, boolean clear) {
        long[] a = levels[level];
        if (a == null || a.length < n) {
            a = new long[Math.max(n, 4)];
            levels[level] = a;
        } else if (clear) {
            for (int i = 0; i < n; i++) { // two or three entries: a plain loop beats Arrays.fill's checks
                a[i] = 0L;
            }
        }
        return a;
    }

    /**
     * Validates {@code array} (the moved root struct) against {@code schema} at {@code level} and returns
     * the flat table of the whole tree.
     *
     * @param originalAddress the producer's address of the root, so a child pointing back at it is a cycle
     * @param host whether buffers are host memory (contents are read only then, and only at DEFAULT/FULL)
     * @throws ValidationException with the category and field path of the first problem found
     */
    static ArrayTable read(MemorySegment array, long originalAddress, SchemaNode schema, ValidationLevel level,
                           boolean host) {
        return read(array, originalAddress, schema, level, host, null);
    }

    /**
     * As {@link #read(MemorySegment, long, SchemaNode, ValidationLevel, boolean)}; for device memory
     * ({@code host} false) contents are read through {@code copies} at DEFAULT and FULL.
     */
    static ArrayTable read(MemorySegment array, long originalAddress, SchemaNode schema, ValidationLevel level,
                           boolean host, HostCopies copies) {
        ArrayTable table = new ArrayTable(schema.layout(), host);
        ArrayReader r = new ArrayReader(level, table, host ? null : copies);
        try {
            r.ancestors[0] = originalAddress;
            r.depth = 1;
            r.check(array.address(), 0);
            return table;
        } finally {
            r.done();
        }
    }

    /**
     * Checks again, at {@code level}, the contents of a view whose buffers now lie in host memory (device
     * buffers downloaded into host copies): the same checks an import makes, over the table instead of a
     * struct, and every size the contents imply must fit in the buffer the table knows. For data whose
     * producer could have changed it after it was first validated (a device batch downloaded later).
     *
     * @throws ValidationException with the category and field path of the first problem found
     */
    static void recheck(ArrayTable hostTable, ValidationLevel level) {
        if (!hostTable.host) {
            throw new IllegalArgumentException("expected a view of host memory");
        }
        // Every read goes through the table's known sizes: contents that imply more bytes than a buffer has
        // are refused before anything reads past it.
        java.util.Map<Long, Long> known = new java.util.HashMap<>();
        for (int n = 0; n < hostTable.size(); n++) {
            for (int i = 0; i < hostTable.bufferCount(n); i++) {
                if (hostTable.bufferAddress(n, i) != 0) {
                    known.merge(hostTable.bufferAddress(n, i), hostTable.bufferLength(n, i), Math::max);
                }
            }
        }
        HostCopies bounded = (address, bytes) -> {
            Long size = known.get(address);
            return size == null || bytes > size ? null : MemorySegment.ofAddress(address).reinterpret(bytes);
        };
        ArrayReader r = new ArrayReader(level, hostTable, bounded);
        try {
            for (int n = hostTable.size() - 1; n >= 0; n--) { // children come after their parent in pre-order
                int count = hostTable.bufferCount(n);
                long[] addr = new long[count];
                long[] len = new long[count];
                for (int i = 0; i < count; i++) {
                    addr[i] = hostTable.bufferAddress(n, i);
                }
                long length = hostTable.length(n);
                long offset = hostTable.offset(n);
                long end = r.contents.add(offset, length, n, "offset");
                r.sizeAndCheckContents(n, addr, len, count, length, offset, hostTable.nullCount(n), end);
                for (int i = 0; i < count; i++) {
                    long size = hostTable.bufferLength(n, i);
                    if (len[i] > 0 && (size < 0 || len[i] > size)) {
                        throw new ValidationException(Category.CONTENT, r.at(n, "buffers[" + i + "]"), "expected at most "
                                + size + " bytes (the buffer's size) as the contents imply, but they need " + len[i]);
                    }
                }
            }
        } finally {
            r.done();
        }
    }

    private boolean minimal() {
        return level != ValidationLevel.NONE;
    }

    /** The field path of {@code field} of node {@code n}, built only for a message. */
    private String at(int n, String field) {
        return layout.path(n, field);
    }

    private void node(long a, int n) {
        if (depth > SchemaReader.MAX_DEPTH) {
            throw new ValidationException(Category.DEPTH, layout.path(n), "expected nesting of at most " + SchemaReader.MAX_DEPTH
                    + " levels but found more");
        }
        if ((a & (ValueLayout.ADDRESS.byteAlignment() - 1)) != 0) {
            // Children and dictionaries are read in place through aligned accessors (only the root is moved).
            throw new ValidationException(Category.ALIGNMENT, layout.path(n), String.format(Locale.ROOT,
                    "expected an ArrowArray aligned to %d bytes but found address 0x%x",
                    ValueLayout.ADDRESS.byteAlignment(), a));
        }
        for (int i = 0; i < depth; i++) {
            if (ancestors[i] == a) {
                throw new ValidationException(Category.DEPTH, layout.path(n),
                        "expected a tree but found a cycle (this ArrowArray is its own ancestor)");
            }
        }
        ancestors[depth++] = a;
        try {
            check(a, n);
        } finally {
            depth--;
        }
    }

    private static long field(long struct, long offset) {
        return STRUCTS.get(ValueLayout.JAVA_LONG, struct + offset);
    }

    private static long pointerAt(long array, long index) {
        return STRUCTS.get(ValueLayout.JAVA_LONG_UNALIGNED, array + index * ValueLayout.ADDRESS.byteSize());
    }

    private void check(long a, int n) {
        SchemaNode schema = layout.schema(n);
        if (field(a, RELEASE) == 0) {
            throw new ValidationException(Category.RELEASED, layout.path(n), "expected a live ArrowArray but found a released one");
        }
        ArrowDataType type = schema.type();
        long length = field(a, LENGTH);
        long offset = field(a, OFFSET);
        long nullCount = field(a, NULL_COUNT);
        if (length < 0) {
            throw new ValidationException(Category.SIZE, at(n, "length"), "expected a non-negative length but found " + length);
        }
        if (offset < 0) {
            throw new ValidationException(Category.SIZE, at(n, "offset"), "expected a non-negative offset but found " + offset);
        }
        long end = contents.add(offset, length, n, "offset");
        if (minimal() && (nullCount < -1 || nullCount > length)) {
            throw new ValidationException(Category.SIZE, at(n, "null_count"),
                    "expected a null count in [-1, " + length + "] but found " + nullCount);
        }
        // Buffers and children: counts first, so every later index is in range.
        Layout layoutKind = type.layout();
        long nBuffers = field(a, N_BUFFERS);
        int expectedBuffers = EXPECTED_BUFFERS[layoutKind.ordinal()];
        if (layoutKind == Layout.VIEW ? nBuffers < 3 || nBuffers > Integer.MAX_VALUE / 8 : nBuffers != expectedBuffers) {
            throw new ValidationException(Category.STRUCTURE, at(n, "n_buffers"), "expected "
                    + (layoutKind == Layout.VIEW ? "at least 3" : String.valueOf(expectedBuffers)) + " buffers for format '"
                    + type.format() + "' but found " + nBuffers);
        }
        int childCount = layout.childCount(n);
        long nChildren = field(a, N_CHILDREN);
        if (nChildren != childCount) {
            throw new ValidationException(Category.STRUCTURE, at(n, "n_children"), "expected "
                    + childCount + " children as in the schema but found " + nChildren);
        }
        long[] addr = scratch(addressScratch, depth - 1, (int) nBuffers, false); // every entry is written below
        long[] len = scratch(lengthScratch, depth - 1, (int) nBuffers, true);
        if (nBuffers > 0) {
            long ptrs = field(a, BUFFERS);
            if (ptrs == 0) {
                throw new ValidationException(Category.NULL_POINTER, at(n, "buffers"),
                        "expected " + nBuffers + " buffer pointers but found NULL");
            }
            for (int i = 0; i < nBuffers; i++) {
                addr[i] = pointerAt(ptrs, i);
            }
        }
        // Children are checked first: several rules compare against child lengths.
        if (nChildren > 0) {
            long ptrs = field(a, CHILDREN);
            if (ptrs == 0) {
                throw new ValidationException(Category.NULL_POINTER, at(n, "children"),
                        "expected " + nChildren + " child pointers but found NULL");
            }
            for (int i = 0; i < nChildren; i++) {
                int child = layout.child(n, i);
                long c = pointerAt(ptrs, i);
                if (c == 0) {
                    throw new ValidationException(Category.NULL_POINTER, layout.path(child), "expected an ArrowArray but found NULL");
                }
                node(c, child);
            }
        }
        long d = field(a, DICTIONARY);
        int dictionary = layout.dictionary(n);
        if (dictionary < 0) {
            if (d != 0) {
                throw new ValidationException(Category.STRUCTURE, at(n, "dictionary"),
                        "expected NULL (the schema has no dictionary) but found a dictionary");
            }
        } else {
            if (d == 0) {
                throw new ValidationException(Category.NULL_POINTER, at(n, "dictionary"),
                        "expected a dictionary ArrowArray but found NULL");
            }
            node(d, dictionary);
        }

        sizeAndCheckContents(n, addr, len, (int) nBuffers, length, offset, nullCount, end);
        table.setNode(n, length, nullCount, offset, addr, len, (int) nBuffers);
    }

    /**
     * Sizes node {@code n}'s buffers into {@code len} from its metadata (and, at DEFAULT/FULL, from the
     * offsets it reads) and checks the contents the level reads. Children and the dictionary are in the
     * table already.
     */
    private void sizeAndCheckContents(int n, long[] addr, long[] len, int nBuffers, long length, long offset,
                                      long nullCount, long end) {
        ArrowDataType type = layout.schema(n).type();
        Layout layoutKind = type.layout();
        int dictionary = layout.dictionary(n);
        boolean hasValidity = HAS_VALIDITY[layoutKind.ordinal()];
        if (hasValidity) {
            if (addr[0] == 0) {
                if (minimal() && nullCount > 0) {
                    throw new ValidationException(Category.NULL_POINTER, at(n, "buffers[0]"),
                            "expected a validity buffer for null count " + nullCount + " but found NULL");
                }
                len[0] = 0;
            } else {
                len[0] = Bitmaps.bytes(end);
            }
        } else if (minimal() && layoutKind != Layout.NULL && nullCount > 0) {
            throw new ValidationException(Category.STRUCTURE, at(n, "null_count"),
                    "expected a null count of 0 for format '" + type.format() + "' (it has no validity buffer) but found "
                            + nullCount);
        }
        switch (layoutKind) {
            case NULL -> { }
            case BOOL -> len[1] = Bitmaps.bytes(end);
            case FIXED_WIDTH, FIXED_SIZE_BINARY -> len[1] = contents.mul(end, type.elementByteWidth(), n, "length");
            case VARIABLE, LARGE_VARIABLE -> {
                int w = layoutKind.offsetWidth();
                len[1] = offsetsBytes(addr[1], length, end, w, n);
                long data = -1;
                if (len[1] == 0) {
                    data = 0;
                } else if (contents.reads()) {
                    data = contents.checkOffsets(addr[1], offset, length, w, n).last();
                }
                len[2] = data;
                if (contents.full() && len[1] != 0 && (type.id() == TypeId.UTF8 || type.id() == TypeId.LARGE_UTF8)) {
                    contents.checkUtf8(addr, len, offset, length, w, n);
                }
            }
            case VIEW -> {
                int variadic = nBuffers - 3;
                len[1] = contents.mul(end, 16, n, "length");
                len[nBuffers - 1] = contents.mul(variadic, 8, n, "n_buffers");
                for (int i = 2; i < nBuffers - 1; i++) {
                    len[i] = -1;
                }
                if (contents.reads() && variadic > 0) {
                    String sp = at(n, "buffers[" + (nBuffers - 1) + "]");
                    MemorySegment sizes = contents.host(addr[nBuffers - 1], len[nBuffers - 1], sp);
                    for (int i = 0; i < variadic; i++) {
                        long size = sizes.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                        if (size < 0) {
                            throw new ValidationException(Category.SIZE, sp,
                                    "expected a non-negative size of variadic buffer " + i + " but found " + size);
                        }
                        len[2 + i] = size;
                    }
                }
                if (contents.full()) {
                    contents.checkViews(addr, len, offset, length, variadic, n, true, type.id() == TypeId.UTF8_VIEW);
                }
            }
            case LIST, LARGE_LIST -> {
                int w = layoutKind.offsetWidth();
                len[1] = offsetsBytes(addr[1], length, end, w, n);
                if (len[1] != 0 && contents.reads()) {
                    long last = contents.checkOffsets(addr[1], offset, length, w, n).last();
                    long childLength = table.length(layout.child(n, 0));
                    if (last > childLength) {
                        throw new ValidationException(Category.LENGTH, at(n, "children[0].length"),
                                "expected at least " + last + " (the last offset) but found " + childLength);
                    }
                }
                if (type.id() == TypeId.MAP) {
                    int entries = layout.child(n, 0);
                    contents.requireNoNulls(entries, "map entries");
                    contents.requireNoNulls(layout.child(entries, 0), "map keys");
                }
            }
            case LIST_VIEW, LARGE_LIST_VIEW -> {
                int w = layoutKind.offsetWidth();
                len[1] = contents.mul(end, w, n, "length");
                len[2] = len[1];
                if (contents.full()) {
                    contents.checkListViews(addr, offset, length, w, table.length(layout.child(n, 0)), n);
                }
            }
            case FIXED_SIZE_LIST -> {
                long need = contents.mul(end, type.fixedSize(), n, "length");
                long childLength = table.length(layout.child(n, 0));
                if (minimal() && childLength < need) {
                    throw new ValidationException(Category.LENGTH, at(n, "children[0].length"),
                            "expected at least " + need + " (list size " + type.fixedSize() + " x " + end
                                    + " elements) but found " + childLength);
                }
            }
            case STRUCT -> checkChildLengths(n, end);
            case SPARSE_UNION, DENSE_UNION -> {
                len[0] = end;
                if (layoutKind == Layout.SPARSE_UNION) {
                    checkChildLengths(n, end);
                } else {
                    len[1] = contents.mul(end, 4, n, "length");
                }
                if (contents.full()) {
                    contents.checkUnion(addr, layoutKind == Layout.DENSE_UNION, type, offset, length, n);
                }
            }
            case RUN_END_ENCODED -> contents.checkRunEnds(n, end, length);
        }
        for (int i = 0; i < nBuffers; i++) {
            if (addr[i] == 0 && len[i] > 0) {
                throw new ValidationException(Category.NULL_POINTER, at(n, "buffers[" + i + "]"),
                        "expected a buffer of " + len[i] + " bytes but found NULL");
            }
        }
        if (contents.full()) {
            if (hasValidity) {
                contents.checkNullCount(addr, len, offset, length, nullCount, n);
            }
            if (layoutKind == Layout.FIXED_WIDTH && ValueChecks.applies(type)) {
                ValueChecks.check(type, contents.host(addr[1], len[1], at(n, "buffers[1]")),
                        addr[0] == 0 ? null : contents.host(addr[0], len[0], at(n, "buffers[0]")), offset, length,
                        at(n, "buffers[1]"));
            }
            if (dictionary >= 0) {
                contents.checkDictionaryIndices(addr, type, offset, length, table.length(dictionary), n);
            }
        }
    }

    /** Every child of a struct or sparse union spans at least the parent's offset + length. */
    private void checkChildLengths(int n, long end) {
        for (int i = 0; minimal() && i < layout.childCount(n); i++) {
            long childLength = table.length(layout.child(n, i));
            if (childLength < end) {
                throw new ValidationException(Category.LENGTH, at(n, "children[" + i + "].length"),
                        "expected at least " + end + " (parent offset + length) but found " + childLength);
            }
        }
    }

    /** Whether a layout has a validity bitmap as buffer 0. */
    static boolean hasValidity(Layout layout) {
        return switch (layout) {
            case NULL, SPARSE_UNION, DENSE_UNION, RUN_END_ENCODED -> false;
            default -> true;
        };
    }

    static int expectedBuffers(Layout layout) {
        return switch (layout) {
            case NULL, RUN_END_ENCODED -> 0;
            case FIXED_SIZE_LIST, STRUCT, SPARSE_UNION -> 1;
            case BOOL, FIXED_WIDTH, FIXED_SIZE_BINARY, LIST, LARGE_LIST, DENSE_UNION -> 2;
            case VARIABLE, LARGE_VARIABLE, LIST_VIEW, LARGE_LIST_VIEW, VIEW -> 3;
        };
    }

    /** Bytes of an offsets buffer: none for an empty array with a NULL pointer, else (offset + length + 1) entries. */
    private long offsetsBytes(long address, long length, long end, int width, int n) {
        if (length == 0 && address == 0) {
            return 0;
        }
        return contents.mul(contents.add(end, 1, n, "length"), width, n, "length");
    }

}
