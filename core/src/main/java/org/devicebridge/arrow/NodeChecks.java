package org.devicebridge.arrow;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowDataType.Layout;

/**
 * The structural checks of one array node against its schema, before any buffer is sized: shared by the two
 * front ends of validation, {@link ArrayReader} (fields read from an {@code ArrowArray}) and
 * {@link ArrayDataReader} (fields of an {@link ArrayData} described in Java), so that both refuse the same
 * things with the same messages.
 */
final class NodeChecks {
    private NodeChecks() {}

    /** Node {@code n}, {@code depth} levels below the root (0 for the root), nests within the cap. */
    static void depth(SchemaLayout layout, int n, int depth) {
        if (depth > SchemaReader.MAX_DEPTH) {
            throw new ValidationException(Category.DEPTH, layout.path(n), "expected nesting of at most "
                    + SchemaReader.MAX_DEPTH + " levels but found more");
        }
    }

    /**
     * A non-negative length and offset whose sum fits in 64 bits, and (above NONE) a null count in
     * {@code [-1, length]}; {@code contents} knows the level and the layout.
     */
    static void header(ContentChecks contents, int n, long length, long offset, long nullCount) {
        if (length < 0) {
            throw new ValidationException(Category.SIZE, contents.at(n, "length"),
                    "expected a non-negative length but found " + length);
        }
        if (offset < 0) {
            throw new ValidationException(Category.SIZE, contents.at(n, "offset"),
                    "expected a non-negative offset but found " + offset);
        }
        contents.add(offset, length, n, "offset"); // offset + length must fit: every size is derived from it
        if (contents.minimal() && (nullCount < -1 || nullCount > length)) {
            throw new ValidationException(Category.SIZE, contents.at(n, "null_count"),
                    "expected a null count in [-1, " + length + "] but found " + nullCount);
        }
    }

    /**
     * {@code nBuffers} is the number of buffers node {@code n}'s layout has (for the view types: the three fixed
     * ones and any number of variadic buffers); returns it as an {@code int}.
     */
    static int bufferCount(SchemaLayout layout, int n, long nBuffers) {
        ArrowDataType type = layout.schema(n).type();
        Layout layoutKind = type.layout();
        int expected = BufferSizer.EXPECTED_BUFFERS[layoutKind.ordinal()];
        if (layoutKind == Layout.VIEW ? nBuffers < 3 || nBuffers > Integer.MAX_VALUE / 8 : nBuffers != expected) {
            throw new ValidationException(Category.STRUCTURE, layout.path(n, "n_buffers"), "expected "
                    + (layoutKind == Layout.VIEW ? "at least 3" : String.valueOf(expected)) + " buffers for format '"
                    + type.format() + "' but found " + nBuffers);
        }
        return (int) nBuffers;
    }

    /** {@code nChildren} is the schema's child count of node {@code n}. */
    static void childCount(SchemaLayout layout, int n, long nChildren) {
        int expected = layout.childCount(n);
        if (nChildren != expected) {
            throw new ValidationException(Category.STRUCTURE, layout.path(n, "n_children"), "expected "
                    + expected + " children as in the schema but found " + nChildren);
        }
    }

    /**
     * Node {@code n} has a dictionary exactly where its schema has one; returns the dictionary's node index, or
     * -1 for none.
     */
    static int dictionary(SchemaLayout layout, int n, boolean present) {
        int dictionary = layout.dictionary(n);
        if (dictionary < 0 && present) {
            throw new ValidationException(Category.STRUCTURE, layout.path(n, "dictionary"),
                    "expected NULL (the schema has no dictionary) but found a dictionary");
        }
        if (dictionary >= 0 && !present) {
            throw new ValidationException(Category.NULL_POINTER, layout.path(n, "dictionary"),
                    "expected a dictionary ArrowArray but found NULL");
        }
        return dictionary;
    }
}
