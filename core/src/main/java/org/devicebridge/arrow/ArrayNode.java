package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import org.devicebridge.UnsupportedFeatureException;

/**
 * One node of an imported array, read-only, for FFM code that wants no Arrow Java objects: lengths, the
 * offset, and the buffers sized exactly from validated metadata. Buffer sizes <em>include</em> the
 * offset: buffer {@code i} spans the whole region the producer's pointer covers for elements
 * {@code [0, offset + length)}, so element {@code j} of this node is element {@code offset + j} of its
 * buffers. Valid only while the {@link ImportedArray} it came from is live.
 */
public final class ArrayNode {
    private final SchemaNode schema;
    private final String path;
    private final long length;
    private final long nullCount;
    private final long offset;
    private final long[] addresses;
    private final long[] lengths;
    private final List<ArrayNode> children;
    private final ArrayNode dictionary;
    private final BufferScope scope;
    private final boolean hostAccessible;

    ArrayNode(SchemaNode schema, String path, long length, long nullCount, long offset, long[] addresses,
              long[] lengths, List<ArrayNode> children, ArrayNode dictionary, BufferScope scope, boolean hostAccessible) {
        this.schema = schema;
        this.path = path;
        this.length = length;
        this.nullCount = nullCount;
        this.offset = offset;
        this.addresses = addresses;
        this.lengths = lengths;
        this.children = List.copyOf(children);
        this.dictionary = dictionary;
        this.scope = scope;
        this.hostAccessible = hostAccessible;
    }

    /** The field this node holds. */
    public SchemaNode schema() {
        return schema;
    }

    /** The type of this node (for a dictionary-encoded node: the index type). */
    public ArrowDataType type() {
        return schema.type();
    }

    /** The field path, e.g. {@code children[2]}; empty for the root. */
    public String path() {
        return path;
    }

    /** Logical length (elements). */
    public long length() {
        return length;
    }

    /** The producer's null count; {@code -1} where it is not known. */
    public long nullCount() {
        return nullCount;
    }

    /** The producer's offset into every buffer of this node (in elements). */
    public long offset() {
        return offset;
    }

    /** Number of buffers, as the producer gave them (view types: including the variadic buffers and sizes). */
    public int bufferCount() {
        return addresses.length;
    }

    /**
     * Byte length of buffer {@code i} as validated metadata implies (including the offset), or {@code -1}
     * where the validation level did not establish it (the data buffer of a variable-size layout below
     * {@link ValidationLevel#DEFAULT}, and every such buffer of device memory).
     */
    public long bufferLength(int i) {
        Objects.checkIndex(i, lengths.length);
        return lengths[i];
    }

    /** {@code true} if buffer {@code i} is NULL (allowed where it would have no bytes, or for validity with no nulls). */
    public boolean isBufferNull(int i) {
        Objects.checkIndex(i, addresses.length);
        return addresses[i] == 0;
    }

    /**
     * The address of buffer {@code i} as a zero-length segment: for handing device pointers to native code
     * (it cannot be dereferenced). Use {@link #buffer(int)} for host memory.
     */
    public MemorySegment bufferPointer(int i) {
        Objects.checkIndex(i, addresses.length);
        return MemorySegment.ofAddress(addresses[i]);
    }

    /**
     * Buffer {@code i} as a read-only segment of exactly {@link #bufferLength(int)} bytes, unusable after
     * the owning {@link ImportedArray} is closed; {@link MemorySegment#NULL} for a NULL buffer. Reads must
     * use unaligned layouts unless the caller checked the alignment (the C Data Interface only recommends
     * 8-byte alignment).
     *
     * @throws UnsupportedFeatureException if the buffer is in device memory or its length is unknown
     * @throws org.devicebridge.HandleClosedException if the array was closed
     */
    public MemorySegment buffer(int i) {
        Objects.checkIndex(i, addresses.length);
        if (!hostAccessible) {
            throw new UnsupportedFeatureException(bufferPath(i),
                    "expected host memory but found device memory: use bufferPointer(i) and bufferLength(i)");
        }
        if (addresses[i] == 0) {
            return MemorySegment.NULL;
        }
        if (lengths[i] < 0) {
            throw new UnsupportedFeatureException(bufferPath(i),
                    "expected a known buffer length but found none: import with ValidationLevel.DEFAULT or FULL");
        }
        return scope.segment(addresses[i], lengths[i]);
    }

    /** Child nodes, in schema order. */
    public List<ArrayNode> children() {
        return children;
    }

    /** The dictionary of a dictionary-encoded node, or {@code null}. */
    public ArrayNode dictionary() {
        return dictionary;
    }

    /** {@code true} if the buffers are in memory this process can read (CPU). */
    public boolean isHostAccessible() {
        return hostAccessible;
    }

    long address(int i) {
        return addresses[i];
    }

    private String bufferPath(int i) {
        return SchemaReader.join(path, "buffers[" + i + "]");
    }

    @Override
    public String toString() {
        return "ArrayNode[" + schema.type() + ", length=" + length + ", offset=" + offset + ", nullCount=" + nullCount + "]";
    }
}
