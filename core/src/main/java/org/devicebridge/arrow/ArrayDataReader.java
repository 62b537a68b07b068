package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.devicebridge.HandleClosedException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The second front end of validation, beside {@link ArrayReader}: checks an {@link ArrayData} tree described in
 * Java against its schema at a {@link ValidationLevel} and fills an {@link ArrayTable}, with the same structural
 * checks ({@link NodeChecks}) and the same sizing and content checks ({@link BufferSizer}) as an import. On top,
 * every size derived for a buffer must fit in the segment given for it; where the level derives none (the data of
 * a variable-size layout, the variadic buffers of a view type, below DEFAULT) the segment's size is the buffer's.
 * Contents are read only through the caller's segments, so no check reads past one.
 */
final class ArrayDataReader {
    private final SchemaLayout layout;
    private final ArrayTable table;
    private final ContentChecks contents;
    private final BufferSizer sizer;
    /** The caller's segments by address, for a view ({@code host}); {@code null} for an export, which reads none. */
    private final Segments segments;
    // One node's buffer addresses and sizes, reused node after node (a node's are read after its children's).
    private long[] addr = new long[4];
    private long[] len = new long[4];

    private ArrayDataReader(SchemaLayout layout, ValidationLevel level, boolean host) {
        this.layout = layout;
        this.segments = host ? new Segments() : null;
        this.table = new ArrayTable(layout, host);
        // contents are read (host memory, DEFAULT/FULL) through the caller's segments, never past their ends
        this.contents = new ContentChecks(level, table, host ? segments : null);
        this.sizer = new BufferSizer(level, layout, table, contents);
    }

    /**
     * Checks {@code data} against {@code schema} at {@code level} and returns its table: of host memory whose
     * segments come from the caller's (a view), or, with {@code host} false, of memory no check reads (for an
     * export, checked at MINIMAL).
     *
     * @throws ValidationException with the category and field path of the first problem found
     * @throws HandleClosedException if the arena of a buffer's segment is closed
     */
    static ArrayTable read(SchemaNode schema, ArrayData data, ValidationLevel level, boolean host) {
        ArrayDataReader r = new ArrayDataReader(schema.layout(), level, host);
        r.node(data, 0, 0);
        if (host) {
            r.table.ownedBy(r.segments);
        }
        return r.table;
    }

    private void node(ArrayData d, int n, int depth) {
        NodeChecks.depth(layout, n, depth);
        NodeChecks.header(contents, n, d.length(), d.offset(), d.nullCount());
        List<MemorySegment> buffers = d.buffers();
        int nBuffers = NodeChecks.bufferCount(layout, n, buffers.size());
        List<ArrayData> children = d.children();
        NodeChecks.childCount(layout, n, children.size());
        // Children first, as in an import: several rules compare against child lengths.
        for (int i = 0; i < children.size(); i++) {
            node(children.get(i), layout.child(n, i), depth + 1);
        }
        int dictionary = NodeChecks.dictionary(layout, n, d.dictionary() != null);
        if (dictionary >= 0) {
            node(d.dictionary(), dictionary, depth + 1);
        }
        if (addr.length < nBuffers) {
            addr = new long[nBuffers];
            len = new long[nBuffers];
        }
        long[] addr = this.addr;
        long[] len = this.len;
        for (int i = 0; i < nBuffers; i++) {
            MemorySegment s = buffers.get(i);
            if (!s.isNative()) {
                throw new ValidationException(Category.STRUCTURE, layout.path(n, "buffers[" + i + "]"),
                        "expected a native segment (off-heap memory) but found a heap segment");
            }
            if (!s.scope().isAlive()) {
                throw closed(n, i);
            }
            addr[i] = s.address();
            if (segments != null) { // an export's table is only read for its addresses and sizes
                segments.add(s, n, i);
            }
        }
        table.setNode(n, d.length(), d.nullCount(), d.offset());
        sizer.sizeAndCheckContents(n, addr, len, nBuffers);
        for (int i = 0; i < nBuffers; i++) {
            long size = buffers.get(i).byteSize();
            if (len[i] < 0) {
                len[i] = size; // the level derived no size: the segment bounds the buffer
            } else if (len[i] > size) {
                throw tooShort(n, i, len[i], size);
            }
        }
        table.setBuffers(n, addr, len, nBuffers);
    }

    private HandleClosedException closed(int n, int buffer) {
        return new HandleClosedException(layout.path(n, "buffers[" + buffer + "]")
                + ": the arena of the buffer's segment is closed");
    }

    private ValidationException tooShort(int n, int buffer, long need, long size) {
        return new ValidationException(Category.SIZE, layout.path(n, "buffers[" + buffer + "]"),
                "expected at least " + need + " bytes but found " + size);
    }

    /**
     * The caller's segments by address: where the content checks read (never past a segment's end: a read that
     * would is a SIZE error naming the buffer) and where the view's {@link ArrayNode#buffer} slices come from
     * (same scope as the caller's segment). Two buffers at one address share the larger segment.
     */
    private final class Segments implements SegmentSource, HostCopies {
        private record Entry(MemorySegment segment, int node, int buffer) {}

        // An open-addressing table by address: addresses are aligned and close together, which a HashMap of
        // Long keys hashes into one bin (a tree per export); a multiplicative mix spreads them.
        private long[] keys = new long[32];
        private Entry[] entries = new Entry[32];
        private int size;

        private int index(long address) {
            int mask = keys.length - 1;
            int i = (int) ((address * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (keys[i] != 0 && keys[i] != address) {
                i = (i + 1) & mask;
            }
            return i;
        }

        void add(MemorySegment s, int node, int buffer) {
            long address = s.address();
            if (address == 0) {
                return;
            }
            if (2 * (size + 1) > keys.length) {
                grow();
            }
            int i = index(address);
            Entry e = new Entry(s, node, buffer);
            if (keys[i] == 0) {
                keys[i] = address;
                entries[i] = e;
                size++;
            } else if (entries[i].segment.byteSize() < s.byteSize()) {
                entries[i] = e;
            }
        }

        private void grow() {
            long[] oldKeys = keys;
            Entry[] oldEntries = entries;
            keys = new long[2 * oldKeys.length];
            entries = new Entry[2 * oldKeys.length];
            for (int k = 0; k < oldKeys.length; k++) {
                if (oldKeys[k] != 0) {
                    int i = index(oldKeys[k]);
                    keys[i] = oldKeys[k];
                    entries[i] = oldEntries[k];
                }
            }
        }

        private Entry get(long address) {
            if (address == 0) {
                return null;
            }
            int i = index(address);
            return keys[i] == 0 ? null : entries[i];
        }

        @Override
        public MemorySegment find(long address, long byteSize) {
            Entry e = get(address);
            if (e != null && e.segment.byteSize() < byteSize) {
                throw tooShort(e.node, e.buffer, byteSize, e.segment.byteSize());
            }
            return e == null ? null : e.segment;
        }

        @Override
        public MemorySegment segment(long address, long byteSize) {
            Entry e = get(address);
            if (!e.segment.scope().isAlive()) {
                throw closed(e.node, e.buffer);
            }
            return e.segment.asSlice(0, byteSize);
        }

        @Override
        public void ensureLive() {
            for (Entry e : entries) {
                if (e != null && !e.segment.scope().isAlive()) {
                    throw closed(e.node, e.buffer);
                }
            }
        }
    }
}
