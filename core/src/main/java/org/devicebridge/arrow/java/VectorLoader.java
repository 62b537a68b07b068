package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.internal.Bitmaps;
import org.devicebridge.internal.FieldPath;

/**
 * Loads one validated import into Arrow Java vectors, in two steps. {@link #plan} makes the vectors and
 * notes, vector by vector, the buffers each will take: ranges of the producer's memory, or buffers of the
 * allocator where Arrow Java cannot take that memory as it is (a bitmap not starting at a byte, offsets not
 * starting at 0). {@link #load} then wraps all the foreign bytes as <em>one</em> Arrow allocation, accounted
 * to the allocator, whose release releases the C struct (Arrow Java runs it once, when the last buffer of
 * any of the vectors, or of vectors they were transferred or sliced to, is released), and hands each vector
 * its buffers, each readable to its length (its writer index there), as Arrow Java's own import gives them.
 * The plan lives in this thread's reused {@link LoadPlan}.
 */
final class VectorLoader implements AutoCloseable {
    private static final VarHandle RELEASED;

    static {
        try {
            RELEASED = MethodHandles.lookup().findVarHandle(VectorLoader.class, "released", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final BufferAllocator allocator;
    private final Runnable release;
    @SuppressWarnings("unused")
    private volatile boolean released;
    private final DictionaryProvider.MapDictionaryProvider dictionaries;
    private final JavaFields.Mapping fields;
    private LoadPlan s;
    private List<FieldVector> addedDictionaries;
    /** The foreign allocation's own buffer (its first reference), once made. */
    private ArrowBuf allocation;

    /**
     * @param release the import's release step: run exactly once, by Arrow Java when the last buffer is
     *        released, or by {@link #close} when no foreign buffer was handed out
     */
    VectorLoader(BufferAllocator allocator, Runnable release, DictionaryProvider.MapDictionaryProvider dictionaries,
                 JavaFields.Mapping fields) {
        this.allocator = allocator;
        this.release = release;
        this.dictionaries = dictionaries;
        this.fields = fields;
        this.s = LoadPlan.take(allocator);
    }

    /**
     * Ends the import: drops this loader's references (the allocator's buffers it made, the foreign
     * allocation's first reference; the vectors hold their own) and closes the dictionaries it added if
     * {@code failed}. After this the struct is released as soon as no vector holds a buffer of it.
     */
    void finish(boolean failed) {
        if (failed && addedDictionaries != null) {
            for (FieldVector d : addedDictionaries) {
                d.close();
            }
        }
        close();
    }

    @Override
    public void close() {
        try {
            for (int b = 0; b < s.bufferCount; b++) {
                if (s.own[b] != null) {
                    s.own[b].getReferenceManager().release();
                }
            }
        } finally {
            s.clear();
            s.busy = false;
            s = null;
            if (allocation != null) {
                allocation.getReferenceManager().release(); // the vectors' references keep the struct alive
            } else {
                releaseOnce(); // nothing of the struct was handed out
            }
        }
    }

    /** A new vector for elements [start, start + count) of {@code n} (logical, before n's own offset), planned. */
    FieldVector plan(Field field, ArrayNode n, long start, long count) {
        FieldVector v = field.createVector(allocator);
        try {
            fill(v, n, start, count);
            return v;
        } catch (RuntimeException | Error e) {
            v.close();
            throw e;
        }
    }

    /** Wraps the planned foreign ranges as one allocation and loads every planned vector. */
    void load() {
        long bytes = 0;
        long first = 0;
        for (int b = 0; b < s.bufferCount; b++) {
            if (s.own[b] == null) {
                bytes = Math.addExact(bytes, s.sizes[b]);
                first = first == 0 ? s.addresses[b] : first;
            }
        }
        ReferenceManager ledger = null;
        if (bytes > 0) {
            allocation = allocator.wrapForeignAllocation(new Foreign(bytes, first, this));
            ledger = allocation.getReferenceManager();
        }
        List<ArrowBuf> list = s.list;
        for (int k = 0; k < s.vectorCount; k++) {
            list.clear();
            for (int b = s.bufferStarts[k]; b < s.bufferEnds[k]; b++) {
                list.add(s.own[b] != null ? s.own[b] // readable to its length, as Arrow Java's own import makes it
                        : ledger.deriveBuffer(allocation, s.addresses[b] - allocation.memoryAddress(), s.sizes[b])
                                .writerIndex(s.sizes[b]));
            }
            s.vectors[k].loadFieldBuffers(new ArrowFieldNode(s.lengths[k], s.nulls[k]), list);
        }
        list.clear();
    }

    private void fill(FieldVector v, ArrayNode n, long start, long count) {
        long phys = Math.addExact(n.offset(), start);
        int mark = s.bufferCount;
        ArrowDataType t = n.type();
        Layout layout = t.layout();
        boolean hasValidity = switch (layout) {
            case NULL, SPARSE_UNION, DENSE_UNION, RUN_END_ENCODED -> false;
            default -> true;
        };
        long nulls = 0;
        if (hasValidity) {
            nulls = nullCount(n, phys, count);
            if (n.isBufferNull(0)) {
                s.own(allocator.getEmpty());
            } else {
                s.bitmap(n, 0, phys, count);
            }
        }
        // A vector's own buffers are all planned before its children's, so they stay one range.
        int ownEnd;
        boolean nested = switch (layout) {
            case LIST, LARGE_LIST, LIST_VIEW, LARGE_LIST_VIEW, FIXED_SIZE_LIST, STRUCT, SPARSE_UNION, DENSE_UNION,
                 RUN_END_ENCODED -> true;
            default -> false;
        };
        FieldVector storage = v instanceof ExtensionTypeVector<?> ext ? ext.getUnderlyingVector() : v;
        List<FieldVector> childVectors = nested ? storage.getChildrenFromFields() : List.of();
        List<ArrayNode> children = nested ? n.children() : List.of();
        switch (layout) {
            case NULL -> ownEnd = s.bufferCount;
            case BOOL -> {
                s.bitmap(n, 1, phys, count);
                ownEnd = s.bufferCount;
            }
            case FIXED_WIDTH, FIXED_SIZE_BINARY -> {
                if (t.id() == ArrowDataType.TypeId.DECIMAL32 || t.id() == ArrowDataType.TypeId.DECIMAL64) {
                    widenDecimals(n, phys, count);
                } else {
                    long w = t.elementByteWidth();
                    s.slice(n, 1, Math.multiplyExact(phys, w), Math.multiplyExact(count, w));
                }
                ownEnd = s.bufferCount;
            }
            case VARIABLE, LARGE_VARIABLE -> {
                long[] r = s.offsets(n, phys, count);
                s.slice(n, 2, r[0], r[1] - r[0]);
                ownEnd = s.bufferCount;
            }
            case VIEW -> {
                s.slice(n, 1, Math.multiplyExact(phys, 16), Math.multiplyExact(count, 16));
                for (int i = 2; i < n.bufferCount() - 1; i++) {
                    s.slice(n, i, 0, n.bufferLength(i));
                }
                ownEnd = s.bufferCount;
            }
            case LIST, LARGE_LIST -> {
                long[] r = s.offsets(n, phys, count);
                ownEnd = s.bufferCount;
                fill(childVectors.get(0), children.get(0), r[0], r[1] - r[0]);
            }
            case LIST_VIEW, LARGE_LIST_VIEW -> {
                long w = layout.offsetWidth();
                s.slice(n, 1, Math.multiplyExact(phys, w), Math.multiplyExact(count, w));
                s.slice(n, 2, Math.multiplyExact(phys, w), Math.multiplyExact(count, w));
                ownEnd = s.bufferCount;
                ArrayNode c = children.get(0);
                fill(childVectors.get(0), c, 0, c.length());
            }
            case FIXED_SIZE_LIST -> {
                long k = t.fixedSize();
                ownEnd = s.bufferCount;
                fill(childVectors.get(0), children.get(0), Math.multiplyExact(phys, k), Math.multiplyExact(count, k));
            }
            case STRUCT, SPARSE_UNION -> {
                if (layout == Layout.SPARSE_UNION) {
                    s.slice(n, 0, phys, count);
                }
                ownEnd = s.bufferCount;
                if (layout == Layout.SPARSE_UNION) {
                    checkSparseUnion((UnionVector) storage, n, childVectors);
                }
                for (int i = 0; i < children.size(); i++) {
                    fill(childVectors.get(i), children.get(i), phys, count);
                }
            }
            case DENSE_UNION -> {
                s.slice(n, 0, phys, count);
                s.slice(n, 1, Math.multiplyExact(phys, 4), Math.multiplyExact(count, 4));
                ownEnd = s.bufferCount;
                for (int i = 0; i < children.size(); i++) {
                    ArrayNode c = children.get(i);
                    fill(childVectors.get(i), c, 0, c.length());
                }
            }
            case RUN_END_ENCODED -> {
                ownEnd = s.bufferCount;
                for (int i = 0; i < 2; i++) {
                    ArrayNode c = children.get(i);
                    fill(childVectors.get(i), c, 0, c.length());
                }
            }
            default -> throw new DeviceBridgeException("internal error: no loader for layout " + layout);
        }
        ArrayNode dictionary = n.dictionary();
        if (dictionary != null) {
            loadDictionary(v.getField().getDictionary(), dictionary);
        }
        s.add(v, Math.toIntExact(count), Math.toIntExact(nulls), mark, ownEnd);
    }

    /**
     * Arrow Java 19 keeps decimal32/decimal64 in its 16-byte {@code DecimalVector} under the declared type (as
     * its IPC reader and arrow-c-data make them): values [phys, phys + count) are sign-extended into a buffer of
     * the allocator, exactly (null slots included, whatever they hold).
     */
    private void widenDecimals(ArrayNode n, long phys, long count) {
        int w = n.type().elementByteWidth();
        if (count == 0 || n.isBufferNull(1)) {
            s.own(allocator.getEmpty());
            return;
        }
        MemorySegment src = hostBuffer(n, 1);
        ArrowBuf out = allocator.buffer(Math.multiplyExact(count, DecimalVector.TYPE_WIDTH));
        s.own(out.writerIndex(Math.multiplyExact(count, DecimalVector.TYPE_WIDTH)));
        for (long k = 0; k < count; k++) {
            long v = w == 4 ? src.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, phys + k)
                    : src.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, phys + k);
            out.setLong(k * DecimalVector.TYPE_WIDTH, v); // little-endian two's complement, as DecimalVector stores it
            out.setLong(k * DecimalVector.TYPE_WIDTH + 8, v >> 63);
        }
    }

    /**
     * Arrow Java's sparse {@code UnionVector} finds the child of a type id through the child's minor type
     * (one cached vector per minor type, and a fixed name for struct, list and list-view children): a union
     * it would read from another vector than the declared child, or from a vector it makes on the spot, is
     * refused. Arrow Java's own readers (its IPC reader, arrow-c-data 19) load such unions and then read
     * wrong values from them: two children of one minor type read the first one's values, a struct child
     * not named "struct" reads nulls. Type ids themselves are not the problem: Arrow Java 19 maps any id to
     * its declared child (although the vector's own field then lists minor-type numbers as its ids; the
     * imported schema keeps the declared ones). Two null children are refused too: UnionVector looks both up
     * as no vector, so which of them a row belongs to is lost (its field then lists type id 0 twice).
     */
    private static void checkSparseUnion(UnionVector v, ArrayNode n, List<FieldVector> childVectors) {
        List<Integer> ids = n.type().unionTypeIds();
        boolean nullChild = false;
        for (int i = 0; i < childVectors.size(); i++) {
            FieldVector child = childVectors.get(i);
            if (child instanceof NullVector) {
                if (nullChild) {
                    throw new UnsupportedFeatureException(FieldPath.join(n.path(), "children[" + i + "]"),
                            "expected a sparse union Arrow Java's UnionVector can read (at most one null child) but found"
                                    + " a second null child '" + child.getName() + "' (type id " + ids.get(i) + ")");
                }
                nullChild = true;
            }
            Object found;
            try {
                found = v.getVectorByType(ids.get(i));
            } catch (RuntimeException e) {
                found = e;
            }
            if (found != child && !(found == null && child instanceof NullVector)) {
                throw new UnsupportedFeatureException(FieldPath.join(n.path(), "children[" + i + "]"),
                        "expected a sparse union Arrow Java's UnionVector can read (one child per minor type; a struct,"
                                + " list or list-view child named as its minor type) but found type id " + ids.get(i)
                                + " for child '" + child.getName() + "' of minor type " + child.getMinorType());
            }
        }
    }

    private void loadDictionary(DictionaryEncoding encoding, ArrayNode dictionaryNode) {
        // Arrow Java keeps a dictionary's value vector separately, under the id the mapping assigned.
        Field valueField = fields.dictionaryBuildFields.get(dictionaryNode.schema());
        FieldVector values = plan(valueField, dictionaryNode, 0, dictionaryNode.length());
        if (addedDictionaries == null) {
            addedDictionaries = new ArrayList<>();
        }
        addedDictionaries.add(values);
        dictionaries.put(new Dictionary(values, encoding));
    }

    /** Null count over [phys, phys + count): the producer's count where it covers exactly that range. */
    static long nullCount(ArrayNode n, long phys, long count) {
        if (n.isBufferNull(0)) {
            return 0;
        }
        if (phys == n.offset() && count == n.length() && n.nullCount() >= 0) {
            return n.nullCount();
        }
        return count - Bitmaps.countSet(hostBuffer(n, 0), phys, count);
    }

    /**
     * Buffer {@code i} of a validated host node, sized to its validated length, for reading offsets and bits
     * here: the node's address, never a segment handed out (those belong to the import's scope).
     */
    static MemorySegment hostBuffer(ArrayNode n, int i) {
        return n.bufferPointer(i).reinterpret(n.bufferLength(i));
    }

    /** Runs the import's release, the first time only. */
    private void releaseOnce() {
        if (RELEASED.compareAndSet(this, false, true)) {
            release.run();
        }
    }

    /**
     * All foreign buffers of one import as one Arrow allocation of their total size (its address is one of
     * them: Arrow Java derives every buffer from it and reads nothing there); its release, which Arrow Java
     * runs once the last buffer is released, is the import's release.
     */
    private static final class Foreign extends ForeignAllocation {
        private final VectorLoader loader;

        Foreign(long size, long address, VectorLoader loader) {
            super(size, address);
            this.loader = loader;
        }

        @Override
        protected void release0() {
            loader.releaseOnce();
        }
    }
}
