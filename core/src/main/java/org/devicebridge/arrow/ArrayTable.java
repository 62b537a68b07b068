package org.devicebridge.arrow;

import java.util.Arrays;
import org.devicebridge.foreign.SegmentSource;

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
    private final long[] lengths;
    private final long[] nullCounts;
    private final long[] offsets;
    private final int[] bufferStart; // node i's buffers: [bufferStart[i], bufferStart[i] + bufferCount[i])
    private final int[] bufferCount; // (nodes are filled in post-order, so the ranges are not in node order)
    private long[] bufferAddresses;
    private long[] bufferLengths;
    private int buffersUsed;
    private SegmentSource source;
    private ArrayNode[] nodes;       // made on demand

    ArrayTable(SchemaLayout layout, boolean host) {
        this.layout = layout;
        this.host = host;
        int n = layout.size();
        lengths = new long[n];
        nullCounts = new long[n];
        offsets = new long[n];
        bufferStart = new int[n];
        bufferCount = new int[n];
        bufferAddresses = new long[layout.bufferCount()];
        bufferLengths = new long[layout.bufferCount()];
    }

    /** Records node {@code i}, once (the reader fills children before their parent). */
    void setNode(int i, long length, long nullCount, long offset, long[] addresses, long[] byteLengths, int count) {
        lengths[i] = length;
        nullCounts[i] = nullCount;
        offsets[i] = offset;
        bufferStart[i] = buffersUsed;
        if (buffersUsed + count > bufferAddresses.length) {
            int grown = Math.max(buffersUsed + count, bufferAddresses.length * 2);
            bufferAddresses = Arrays.copyOf(bufferAddresses, grown);
            bufferLengths = Arrays.copyOf(bufferLengths, grown);
        }
        System.arraycopy(addresses, 0, bufferAddresses, buffersUsed, count);
        System.arraycopy(byteLengths, 0, bufferLengths, buffersUsed, count);
        bufferCount[i] = count;
        buffersUsed += count;
    }

    /**
     * A copy of this table (same layout and fields, no owner yet), for a tree whose buffers moved (an
     * upload to the device) or whose lengths became known (offsets copied back from the device).
     */
    ArrayTable derive(boolean onHost) {
        ArrayTable t = new ArrayTable(layout, onHost);
        System.arraycopy(lengths, 0, t.lengths, 0, lengths.length);
        System.arraycopy(nullCounts, 0, t.nullCounts, 0, nullCounts.length);
        System.arraycopy(offsets, 0, t.offsets, 0, offsets.length);
        System.arraycopy(bufferStart, 0, t.bufferStart, 0, bufferStart.length);
        System.arraycopy(bufferCount, 0, t.bufferCount, 0, bufferCount.length);
        t.bufferAddresses = bufferAddresses.clone();
        t.bufferLengths = bufferLengths.clone();
        t.buffersUsed = buffersUsed;
        return t;
    }

    /** Replaces buffer {@code i} of {@code node} (only on a table made by {@link #derive}, before it is shared). */
    void setBuffer(int node, int i, long address, long byteLength) {
        bufferAddresses[bufferStart[node] + i] = address;
        bufferLengths[bufferStart[node] + i] = byteLength;
    }

    /** Called once, by the handle that owns the memory. */
    void ownedBy(SegmentSource owner) {
        this.source = owner;
    }

    int size() {
        return lengths.length;
    }

    long length(int node) {
        return lengths[node];
    }

    long nullCount(int node) {
        return nullCounts[node];
    }

    long offset(int node) {
        return offsets[node];
    }

    int bufferCount(int node) {
        return bufferCount[node];
    }

    long bufferAddress(int node, int i) {
        return bufferAddresses[bufferStart[node] + i];
    }

    long bufferLength(int node, int i) {
        return bufferLengths[bufferStart[node] + i];
    }

    SegmentSource source() {
        return source;
    }

    ArrayNode node(int i) {
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
