package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Bitmaps;

/**
 * The MINIMAL/DEFAULT checks of {@link ArrayReader} for the common record batch, precomputed once per
 * {@link SchemaLayout}: a struct root (no dictionary) whose children are leaves of a null, boolean,
 * fixed-width or fixed-size-binary type without dictionary. Each batch is then checked by one loop over a
 * table of what every child must have (buffer count, no children, no dictionary, bytes per value) instead of
 * the reader's per-node dispatch. For these layouts neither level reads buffer contents, so the same checks
 * serve host and device memory.
 *
 * <p>It makes every check the general reader makes for these layouts, and reads through a pointer only after
 * the checks the general reader makes before it (non-NULL, aligned, not the root). It does not name problems:
 * on the first one it gives up, and the caller runs the general reader, which finds and reports it with its
 * category and field path.
 */
final class RecordBatchTemplate {
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
    private static final long ALIGNMENT_MASK = ValueLayout.ADDRESS.byteAlignment() - 1;
    private static final long POINTER = ValueLayout.ADDRESS.byteSize();

    /** A child's bytes per value where its data is a bitmap (boolean). */
    private static final long BITS = -1;
    /** A child's bytes per value where it has no buffers (null type). */
    private static final long NONE = -2;

    private final int children;
    /** Per child: bytes per value, {@link #BITS} or {@link #NONE}. */
    private final long[] width;

    private RecordBatchTemplate(long[] width) {
        this.children = width.length;
        this.width = width;
    }

    /** The template of {@code layout}, or {@code null} where its type is not such a record batch. */
    static RecordBatchTemplate of(SchemaLayout layout) {
        SchemaNode root = layout.schema(0);
        if (root.type().layout() != Layout.STRUCT || layout.dictionary(0) >= 0
                || layout.size() != layout.childCount(0) + 1) {
            return null; // a child has children or a dictionary: more nodes than children
        }
        long[] width = new long[layout.childCount(0)];
        for (int i = 0; i < width.length; i++) {
            int node = layout.child(0, i);
            ArrowDataType type = layout.schema(node).type();
            if (layout.childCount(node) != 0 || layout.dictionary(node) >= 0) {
                return null;
            }
            switch (type.layout()) {
                case NULL -> width[i] = NONE;
                case BOOL -> width[i] = BITS;
                case FIXED_WIDTH, FIXED_SIZE_BINARY -> width[i] = type.elementByteWidth();
                default -> {
                    return null;
                }
            }
        }
        return new RecordBatchTemplate(width);
    }

    private static long field(long struct, long offset) {
        return STRUCTS.get(ValueLayout.JAVA_LONG, struct + offset);
    }

    private static long pointerAt(long array, long index) {
        return STRUCTS.get(ValueLayout.JAVA_LONG_UNALIGNED, array + index * POINTER);
    }

    /**
     * Checks the batch whose (moved) root struct is at {@code a} as {@link ArrayReader} does at MINIMAL or
     * DEFAULT, filling {@code table}; returns {@code false} at the first problem, leaving {@code table}
     * partly filled (to be filled again by the general reader).
     *
     * @param originalAddress the producer's address of the root, which no child may be
     */
    boolean read(long a, long originalAddress, ArrayTable table) {
        if (field(a, RELEASE) == 0) {
            return false;
        }
        long length = field(a, LENGTH);
        long offset = field(a, OFFSET);
        long nullCount = field(a, NULL_COUNT);
        long end = offset + length; // both non-negative below, so an overflow turns it negative
        if (length < 0 || offset < 0 || end < 0 || nullCount < -1 || nullCount > length
                || field(a, N_BUFFERS) != 1 || field(a, N_CHILDREN) != children) {
            return false;
        }
        long buffers = field(a, BUFFERS);
        if (buffers == 0) {
            return false;
        }
        long validity = pointerAt(buffers, 0);
        long kids = field(a, CHILDREN);
        if (children > 0 && kids == 0) {
            return false;
        }
        for (int i = 0; i < children; i++) {
            long c = pointerAt(kids, i);
            if (c == 0 || (c & ALIGNMENT_MASK) != 0 || c == originalAddress || !leaf(c, i, end, table)) {
                return false;
            }
        }
        if (field(a, DICTIONARY) != 0 || (validity == 0 && nullCount > 0)) {
            return false;
        }
        table.setNode(0, length, nullCount, offset);
        table.setBuffer(0, 0, validity, validity == 0 ? 0 : Bitmaps.bytes(end));
        return true;
    }

    /** Checks child {@code i} at {@code c} (a leaf spanning at least {@code parentEnd}) and records it as node {@code i + 1}. */
    private boolean leaf(long c, int i, long parentEnd, ArrayTable table) {
        if (field(c, RELEASE) == 0) {
            return false;
        }
        long length = field(c, LENGTH);
        long offset = field(c, OFFSET);
        long nullCount = field(c, NULL_COUNT);
        long end = offset + length;
        long w = width[i];
        if (length < 0 || offset < 0 || end < 0 || nullCount < -1 || nullCount > length
                || field(c, N_BUFFERS) != (w == NONE ? 0 : 2) || field(c, N_CHILDREN) != 0
                || field(c, DICTIONARY) != 0 || length < parentEnd) {
            return false;
        }
        if (w == NONE) {
            table.setNode(i + 1, length, nullCount, offset);
            return true;
        }
        long buffers = field(c, BUFFERS);
        if (buffers == 0) {
            return false;
        }
        long validity = pointerAt(buffers, 0);
        long data = pointerAt(buffers, 1);
        if (validity == 0 && nullCount > 0) {
            return false;
        }
        long dataBytes;
        if (w == BITS) {
            dataBytes = Bitmaps.bytes(end);
        } else {
            long hi = Math.multiplyHigh(end, w);
            dataBytes = end * w;
            if (hi != 0 || dataBytes < 0) {
                return false; // does not fit in 64 bits (both factors are non-negative)
            }
        }
        if (data == 0 && dataBytes > 0) {
            return false;
        }
        table.setNode(i + 1, length, nullCount, offset);
        table.setBuffers(i + 1, validity, validity == 0 ? 0 : Bitmaps.bytes(end), data, dataBytes);
        return true;
    }
}
