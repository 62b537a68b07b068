package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.ArrowArrayFields;

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
    private final BufferSizer sizer;

    private ArrayReader(ValidationLevel level, ArrayTable table, HostCopies copies) {
        this.level = level;
        this.layout = table.layout;
        this.table = table;
        this.contents = new ContentChecks(level, table, copies);
        this.sizer = new BufferSizer(level, layout, table, contents);
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
     * Validates {@code array} (the moved root struct) at {@code level} against the layout of {@code into} and
     * fills {@code into} (a new table) with the whole tree.
     *
     * @param originalAddress the producer's address of the root, so a child pointing back at it is a cycle
     * @param into the table to fill; its layout is the schema's and it says whether buffers are host memory
     *     (contents are read only then, and only at DEFAULT/FULL)
     * @throws ValidationException with the category and field path of the first problem found
     */
    static void read(MemorySegment array, long originalAddress, ArrayTable into, ValidationLevel level) {
        read(array, originalAddress, into, level, null);
    }

    /**
     * As {@link #read(MemorySegment, long, ArrayTable, ValidationLevel)}; for device memory (a table not of
     * host memory) contents are read through {@code copies} at DEFAULT and FULL.
     */
    static void read(MemorySegment array, long originalAddress, ArrayTable into, ValidationLevel level,
                     HostCopies copies) {
        RecordBatchTemplate template = into.layout.template();
        if (template != null && (level == ValidationLevel.MINIMAL || level == ValidationLevel.DEFAULT)
                && template.read(array.address(), originalAddress, into)) {
            return;
        }
        // No template, or a problem: the general reader finds and names it. It writes every row of the table
        // again (a template's layout has fixed buffer places, so what the template left is overwritten).
        readGeneral(array, originalAddress, into, level, copies);
    }

    /** As {@link #read(MemorySegment, long, ArrayTable, ValidationLevel, HostCopies)}, never through a template. */
    static void readGeneral(MemorySegment array, long originalAddress, ArrayTable into, ValidationLevel level,
                            HostCopies copies) {
        ArrayReader r = new ArrayReader(level, into, into.host ? null : copies);
        try {
            r.ancestors[0] = originalAddress;
            r.depth = 1;
            r.check(array.address(), 0);
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
                r.sizer.sizeAndCheckContents(n, addr, len, count); // the header is in the table already
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
        NodeChecks.depth(layout, n, depth);
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
        if (field(a, RELEASE) == 0) {
            throw new ValidationException(Category.RELEASED, layout.path(n), "expected a live ArrowArray but found a released one");
        }
        long length = field(a, LENGTH);
        long offset = field(a, OFFSET);
        long nullCount = field(a, NULL_COUNT);
        NodeChecks.header(contents, n, length, offset, nullCount);
        // Buffers and children: counts first, so every later index is in range.
        long nBuffers = NodeChecks.bufferCount(layout, n, field(a, N_BUFFERS));
        long nChildren = field(a, N_CHILDREN);
        NodeChecks.childCount(layout, n, nChildren);
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
        int dictionary = NodeChecks.dictionary(layout, n, d != 0);
        if (dictionary >= 0) {
            node(d, dictionary);
        }

        table.setNode(n, length, nullCount, offset); // the sizer and the content checks read the header from the table
        sizer.sizeAndCheckContents(n, addr, len, (int) nBuffers);
        table.setBuffers(n, addr, len, (int) nBuffers);
    }

}
