package org.devicebridge.arrow;

import java.util.Arrays;

/**
 * The validated fields of a whole imported array tree in a few flat arrays, one row per node in the
 * pre-order of its {@link SchemaLayout}: no per-node objects unless a caller asks for {@link ArrayNode}s,
 * which are then made once and kept. Buffer sizes are the ones validation derived (exact arithmetic);
 * {@code -1} where the level did not establish one. The memory behind the addresses belongs to the
 * handle that owns this table; segments over it come only from that handle ({@link SegmentSource}).
 */
final class ArrayTable {

    final SchemaLayout layout;
    final boolean host;
    // Three arrays for the whole tree (each array is an object, so few of them keep an import cheap):
    private final long[] nodeFields;  // node i: [3i] length, [3i + 1] null count, [3i + 2] offset
    // node i: [2i] first buffer, [2i + 1] count (filled in post-order); null where the layout fixes both
    // (no view node), so that a table is three arrays, not four
    private final int[] bufferRange;
    private long[] buffers;           // buffer b: [2b] address, [2b + 1] byte length
    private int buffersUsed;
    private SegmentSource source;
    private ArrayNode root;           // made on demand, like every node
    private ArrayNode[] nodes;        // the others, made on demand

    ArrayTable(SchemaLayout layout, boolean host) {
        this.layout = layout;
        this.host = host;
        int n = layout.size();
        nodeFields = new long[3 * n];
        bufferRange = layout.fixedBuffers() ? null : new int[2 * n];
        buffers = new long[2 * layout.bufferCount()];
    }

    /**
     * Records the header of node {@code i} (the reader fills children before their parent, and a node's header
     * before its buffers, which the checks of its buffers read back from here).
     */
    void setNode(int i, long length, long nullCount, long offset) {
        nodeFields[3 * i] = length;
        nodeFields[3 * i + 1] = nullCount;
        nodeFields[3 * i + 2] = offset;
    }

    /** Records the first {@code count} buffers of node {@code i}, once, after its header and those of its children. */
    void setBuffers(int i, long[] addresses, long[] byteLengths, int count) {
        int start = bufferRange == null ? layout.bufferStart(i) : buffersUsed;
        if (2 * (start + count) > buffers.length) {
            buffers = Arrays.copyOf(buffers, Math.max(2 * (start + count), buffers.length * 2));
        }
        for (int k = 0; k < count; k++) {
            buffers[2 * (start + k)] = addresses[k];
            buffers[2 * (start + k) + 1] = byteLengths[k];
        }
        if (bufferRange != null) {
            bufferRange[2 * i] = start;
            bufferRange[2 * i + 1] = count;
            buffersUsed += count;
        }
    }

    /** Records the two buffers of node {@code i} of a layout with {@link SchemaLayout#fixedBuffers()}. */
    void setBuffers(int i, long address0, long bytes0, long address1, long bytes1) {
        int b = 2 * layout.bufferStart(i);
        buffers[b] = address0;
        buffers[b + 1] = bytes0;
        buffers[b + 2] = address1;
        buffers[b + 3] = bytes1;
    }

    /**
     * A copy of this table (same layout and fields, no owner yet), for a tree whose buffers moved (an
     * upload to the device, a download to host copies).
     */
    ArrayTable derive(boolean onHost) {
        ArrayTable t = new ArrayTable(layout, onHost);
        System.arraycopy(nodeFields, 0, t.nodeFields, 0, nodeFields.length);
        if (bufferRange != null) {
            System.arraycopy(bufferRange, 0, t.bufferRange, 0, bufferRange.length);
        }
        t.buffers = buffers.clone();
        t.buffersUsed = buffersUsed;
        return t;
    }

    /**
     * Records buffer {@code i} of {@code node}: of a layout with {@link SchemaLayout#fixedBuffers()} as it is
     * read, or, replacing it, on a table made by {@link #derive} before it is shared.
     */
    void setBuffer(int node, int i, long address, long byteLength) {
        int b = firstBuffer(node) + i;
        buffers[2 * b] = address;
        buffers[2 * b + 1] = byteLength;
    }

    /** Replaces the null count of {@code node} (only on a table made by {@link #derive}, before it is shared). */
    void setNullCount(int node, long nullCount) {
        nodeFields[3 * node + 1] = nullCount;
    }

    /** Called once, by the handle that owns the memory. */
    void ownedBy(SegmentSource owner) {
        this.source = owner;
    }

    int size() {
        return layout.size();
    }

    long length(int node) {
        return nodeFields[3 * node];
    }

    long nullCount(int node) {
        return nodeFields[3 * node + 1];
    }

    long offset(int node) {
        return nodeFields[3 * node + 2];
    }

    int bufferCount(int node) {
        return bufferRange == null ? layout.bufferCount(node) : bufferRange[2 * node + 1];
    }

    private int firstBuffer(int node) {
        return bufferRange == null ? layout.bufferStart(node) : bufferRange[2 * node];
    }

    long bufferAddress(int node, int i) {
        return buffers[2 * (firstBuffer(node) + i)];
    }

    long bufferLength(int node, int i) {
        return buffers[2 * (firstBuffer(node) + i) + 1];
    }

    SegmentSource source() {
        return source;
    }

    ArrayNode node(int i) {
        if (i == 0) {
            ArrayNode r = root;
            if (r == null) {
                r = new ArrayNode(this, 0);
                root = r; // racing first calls may make two equal views of the root
            }
            return r;
        }
        ArrayNode[] made = nodes;
        if (made == null) {
            made = new ArrayNode[size()];
            nodes = made;
        }
        ArrayNode n = made[i];
        if (n == null) {
            n = new ArrayNode(this, i);
            made[i] = n; // racing first calls may make two equal views of one node
        }
        return n;
    }
}
