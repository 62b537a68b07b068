package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * One node of an Arrow array described in Java, for code that holds its buffers as {@link MemorySegment}s
 * and no Arrow Java vectors: the fields of an {@code ArrowArray} (length, null count, offset, buffers,
 * children, dictionary), with each buffer a segment that says how many bytes may be read. Buffers are listed
 * as the C Data interface lists them, {@link MemorySegment#NULL} where a buffer is absent (for the view types,
 * the variadic data buffers and then the buffer of their sizes).
 *
 * <p>A description is not checked when it is made: {@link ArrowC#viewArray} and {@link ArrowC#exportArray}
 * check it against a schema, as an import checks a foreign struct, and every size they derive must fit in
 * the segment given for it.
 *
 * <p>Immutable and thread-safe; it owns nothing: the memory belongs to the segments' arenas.
 */
public final class ArrayData {
    private final long length;
    private final long nullCount;
    private final long offset;
    private final List<MemorySegment> buffers;
    private final List<ArrayData> children;
    private final ArrayData dictionary;

    private ArrayData(long length, long nullCount, List<MemorySegment> buffers) {
        this.length = length;
        this.nullCount = nullCount;
        this.offset = 0;
        this.buffers = buffers;
        this.children = List.of();
        this.dictionary = null;
    }

    /** {@code base} with another offset, children and dictionary. */
    private ArrayData(ArrayData base, long offset, List<ArrayData> children, ArrayData dictionary) {
        this.length = base.length;
        this.nullCount = base.nullCount;
        this.offset = offset;
        this.buffers = base.buffers;
        this.children = children;
        this.dictionary = dictionary;
    }

    /**
     * A node of {@code length} elements, {@code nullCount} of them null ({@code -1} if not known), offset 0,
     * no children and no dictionary.
     *
     * @param buffers the node's buffers in C Data order, {@link MemorySegment#NULL} for an absent one
     */
    public static ArrayData of(long length, long nullCount, List<MemorySegment> buffers) {
        return new ArrayData(length, nullCount, List.copyOf(buffers));
    }

    /** {@return this node with the offset {@code offset} (in elements) into every buffer} */
    public ArrayData withOffset(long offset) {
        return new ArrayData(this, offset, children, dictionary);
    }

    /** {@return this node with the children {@code children}, in the schema's order} */
    public ArrayData withChildren(List<ArrayData> children) {
        return new ArrayData(this, offset, List.copyOf(children), dictionary);
    }

    /** {@return this node with the dictionary {@code dictionary} (for a dictionary-encoded field)} */
    public ArrayData withDictionary(ArrayData dictionary) {
        return new ArrayData(this, offset, children, Objects.requireNonNull(dictionary));
    }

    /** {@return the logical length, in elements} */
    public long length() {
        return length;
    }

    /** {@return the null count; {@code -1} where it is not known} */
    public long nullCount() {
        return nullCount;
    }

    /** {@return the offset into every buffer, in elements} */
    public long offset() {
        return offset;
    }

    /** {@return the buffers in C Data order, {@link MemorySegment#NULL} where one is absent} */
    public List<MemorySegment> buffers() {
        return buffers;
    }

    /** {@return the children, in the schema's order} */
    public List<ArrayData> children() {
        return children;
    }

    /** {@return the dictionary, or {@code null} if the node has none} */
    public ArrayData dictionary() {
        return dictionary;
    }

    @Override
    public String toString() {
        return "ArrayData[length=" + length + ", nullCount=" + nullCount + ", offset=" + offset + ", buffers="
                + buffers.size() + ", children=" + children.size() + (dictionary == null ? "" : ", dictionary") + "]";
    }
}
