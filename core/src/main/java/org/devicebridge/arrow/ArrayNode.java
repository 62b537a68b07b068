package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.AbstractList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;

/**
 * One node of an imported array (or of a checked {@link ArrayData}, {@link ArrowC#viewArray}), read-only: lengths,
 * the offset, and the buffers sized exactly from validated metadata. A light view of one row of the array's
 * flat table, made on demand. Buffer sizes <em>include</em> the offset: buffer {@code i} spans the whole
 * region the producer's pointer covers for elements {@code [0, offset + length)}, so element {@code j} of
 * this node is element {@code offset + j} of its buffers. Buffers are readable only while the handle the
 * node came from is live (for a view of an {@code ArrayData}: while the arenas of its segments are open).
 *
 * <p>Thread safety and ownership: an immutable view that owns nothing (the imported array's handle, or the
 * owner of the described segments, owns the memory); it may be read from any thread while that memory lives.
 */
public final class ArrayNode {
    private final ArrayTable table;
    private final int index;

    ArrayNode(ArrayTable table, int index) {
        this.table = table;
        this.index = index;
    }

    /** {@return the field this node holds} */
    public SchemaNode schema() {
        return table.layout.schema(index);
    }

    /** {@return the type of this node (for a dictionary-encoded node: the index type)} */
    public ArrowDataType type() {
        return schema().type();
    }

    /** {@return the field path, e.g. {@code children[2]}; empty for the root} */
    public String path() {
        return table.layout.path(index);
    }

    /** {@return the logical length, in elements} */
    public long length() {
        return table.length(index);
    }

    /** {@return the producer's null count; {@code -1} where it is not known} */
    public long nullCount() {
        return table.nullCount(index);
    }

    /** {@return the producer's offset into every buffer of this node (in elements)} */
    public long offset() {
        return table.offset(index);
    }

    /** {@return number of buffers, as the producer gave them (view types: including the variadic buffers and sizes)} */
    public int bufferCount() {
        return table.bufferCount(index);
    }

    /**
     * Byte length of buffer {@code i} as validated metadata implies (including the offset), or {@code -1}
     * where the validation level did not establish it (the data buffer of a variable-size layout below
     * {@link ValidationLevel#DEFAULT}, and every such buffer of device memory).
     *
     * @param i the buffer index, from 0 to {@link #bufferCount()} - 1
     * @return the length in bytes, or {@code -1}
     */
    public long bufferLength(int i) {
        Objects.checkIndex(i, bufferCount());
        return table.bufferLength(index, i);
    }

    /**
     * {@return {@code true} if buffer {@code i} is NULL (allowed where it would have no bytes, or for validity
     * with no nulls)}
     *
     * @param i the buffer index, from 0 to {@link #bufferCount()} - 1
     */
    public boolean isBufferNull(int i) {
        Objects.checkIndex(i, bufferCount());
        return table.bufferAddress(index, i) == 0;
    }

    /**
     * The address of buffer {@code i} as a zero-length segment: for handing device pointers to native code
     * (it cannot be dereferenced). The memory behind it stays valid only while whoever owns the array (its
     * handle, or the consumer it was handed to) holds it. Use {@link #buffer(int)} for host memory.
     *
     * @param i the buffer index, from 0 to {@link #bufferCount()} - 1
     * @return the buffer's address (borrowed), {@link MemorySegment#NULL} for a NULL buffer
     */
    public MemorySegment bufferPointer(int i) {
        Objects.checkIndex(i, bufferCount());
        return MemorySegment.ofAddress(table.bufferAddress(index, i));
    }

    /**
     * Buffer {@code i}: a read-only segment of exactly {@link #bufferLength(int)} bytes in the owning handle's arena
     * (unusable once the handle is released; holding it in a native call keeps the release from running), or
     * a slice of the described segment; {@link MemorySegment#NULL} for a NULL buffer. Reads use unaligned layouts unless
     * the caller checked the alignment (the C Data Interface only recommends 8-byte alignment).
     *
     * @param i the buffer index, from 0 to {@link #bufferCount()} - 1
     * @return the buffer's bytes, read-only and borrowed from the owning handle
     * @throws UnsupportedFeatureException if the buffer is in device memory or its length is unknown
     * @throws org.devicebridge.HandleClosedException if the array was closed
     * @throws org.devicebridge.HandleBusyException (its cause a {@link WrongThreadException}) if the array was
     *         imported without an arena and another thread took one of its segments first
     */
    public MemorySegment buffer(int i) {
        Objects.checkIndex(i, bufferCount());
        if (!table.host) {
            throw new UnsupportedFeatureException(bufferPath(i),
                    "expected host memory but found device memory: use bufferPointer(i) and bufferLength(i)");
        }
        long address = table.bufferAddress(index, i);
        if (address == 0) {
            return MemorySegment.NULL;
        }
        long length = table.bufferLength(index, i);
        if (length < 0) {
            throw new UnsupportedFeatureException(bufferPath(i),
                    "expected a known buffer length but found none: import with ValidationLevel.DEFAULT or FULL");
        }
        return table.source().segment(address, length).asReadOnly();
    }

    /** {@return the child nodes, in schema order} */
    public List<ArrayNode> children() {
        int count = table.layout.childCount(index);
        return new AbstractList<>() {
            @Override
            public ArrayNode get(int i) {
                Objects.checkIndex(i, count);
                return table.node(table.layout.child(index, i));
            }

            @Override
            public int size() {
                return count;
            }
        };
    }

    /** {@return the dictionary of a dictionary-encoded node, or {@code null}} */
    public ArrayNode dictionary() {
        int d = table.layout.dictionary(index);
        return d < 0 ? null : table.node(d);
    }

    /** {@return {@code true} if the buffers are in memory this process can read (CPU)} */
    public boolean isHostAccessible() {
        return table.host;
    }

    /**
     * A copy of the view under this node whose buffers moved elsewhere (for example to device memory, after a
     * copy of each buffer): buffer {@code i} of node {@code n} is at {@code pointers.get(n).get(i)}, with the
     * same length; nodes absent from the map keep their addresses. Null counts, offsets and lengths are
     * unchanged, and the copy's buffers are device memory (not readable as segments: use
     * {@link #bufferPointer}). Nothing is copied or owned: the caller keeps the memory behind the new
     * addresses alive while the view is used.
     *
     * @param pointers for each node to move (of this view), its new buffer addresses as zero-length segments,
     *     {@link MemorySegment#NULL} for a NULL buffer, as many as the node has buffers; only read
     * @return the node of the copy that stands where this one does
     * @throws org.devicebridge.InvalidArgumentException if a node is of another view or its list has the
     *     wrong number of buffers
     */
    public ArrayNode relocated(Map<ArrayNode, List<MemorySegment>> pointers) {
        Objects.requireNonNull(pointers, "pointers");
        ArrayTable copy = table.derive(false);
        pointers.forEach((node, addresses) -> {
            if (node.table != table || addresses.size() != node.bufferCount()) {
                throw new InvalidArgumentException("pointers", "expected a node of this view with "
                        + node.bufferCount() + " buffers but found " + node.path() + " with " + addresses.size());
            }
            for (int i = 0; i < addresses.size(); i++) {
                copy.setBuffer(node.index, i, addresses.get(i).address(), node.bufferLength(i));
            }
        });
        return copy.node(index);
    }

    ArrayTable table() {
        return table;
    }

    int index() {
        return index;
    }

    private String bufferPath(int i) {
        return table.layout.path(index, "buffers[" + i + "]");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ArrayNode n && n.table == table && n.index == index;
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(table) * 31 + index;
    }

    @Override
    public String toString() {
        return "ArrayNode[" + type() + ", length=" + length() + ", offset=" + offset() + ", nullCount=" + nullCount() + "]";
    }
}
