package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.internal.Bitmaps;

/**
 * The sizing step of {@link ArrayReader}: gives each buffer of a node its size from the node's metadata (and, at
 * DEFAULT/FULL, from the offsets it reads), per layout, and runs the content checks the level reads. Its
 * tables say how many buffers each layout has and whether buffer 0 is a validity bitmap.
 */
final class BufferSizer {
    // The two switches below as tables, read once per node.
    static final int[] EXPECTED_BUFFERS = new int[Layout.values().length];
    static final boolean[] HAS_VALIDITY = new boolean[Layout.values().length];

    static {
        for (Layout l : Layout.values()) {
            EXPECTED_BUFFERS[l.ordinal()] = expectedBuffers(l);
            HAS_VALIDITY[l.ordinal()] = hasValidity(l);
        }
    }

    private final ValidationLevel level;
    private final SchemaLayout layout;
    private final ArrayTable table;
    private final ContentChecks contents;

    BufferSizer(ValidationLevel level, SchemaLayout layout, ArrayTable table, ContentChecks contents) {
        this.level = level;
        this.layout = layout;
        this.table = table;
        this.contents = contents;
    }

    private boolean minimal() {
        return level != ValidationLevel.NONE;
    }

    /** The field path of {@code field} of node {@code n}, built only for a message. */
    private String at(int n, String field) {
        return layout.path(n, field);
    }


    /**
     * Sizes node {@code n}'s buffers ({@code addr}, the first {@code nBuffers}) into {@code len} from its
     * metadata (and, at DEFAULT/FULL, from the offsets it reads) and checks the contents the level reads. The
     * node's header (length, null count, offset), its children and its dictionary are in the table already.
     */
    void sizeAndCheckContents(int n, long[] addr, long[] len, int nBuffers) {
        long length = table.length(n);
        long offset = table.offset(n);
        long nullCount = table.nullCount(n);
        long end = contents.add(offset, length, n, "offset");
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
                    contents.checkUtf8(n, addr, len);
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
                    contents.checkViews(n, addr, len, variadic, true);
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
                    contents.checkListViews(n, addr);
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
                    contents.checkUnion(n, addr);
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
                contents.checkNullCount(n, addr, len);
            }
            if (layoutKind == Layout.FIXED_WIDTH && ValueChecks.applies(type)) {
                String problem = ValueChecks.firstProblem(type, contents.host(addr[1], len[1], at(n, "buffers[1]")),
                        addr[0] == 0 ? null : contents.host(addr[0], len[0], at(n, "buffers[0]")), offset, length);
                if (problem != null) {
                    throw new ValidationException(Category.CONTENT, at(n, "buffers[1]"), problem);
                }
            }
            if (dictionary >= 0) {
                contents.checkDictionaryIndices(n, addr);
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
