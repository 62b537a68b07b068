package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.IntervalUnit;
import org.apache.arrow.vector.types.Types;
import org.apache.arrow.vector.types.UnionMode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.arrow.ArrowDataType;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.foreign.Access;
import org.devicebridge.foreign.ArrowAccess;
import org.devicebridge.internal.Bitmaps;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.RefCount;

/**
 * Zero-copy import of validated arrays into Arrow Java ({@code arrow-vector}, an optional dependency).
 *
 * <p>Every Arrow buffer points at the producer's memory through
 * {@link BufferAllocator#wrapForeignAllocation}; all buffers of one import share one reference count, and
 * the C struct is released exactly once, when the last of them is released (closing the returned vectors
 * and every vector the data was transferred to). The foreign bytes are accounted to the allocator.
 *
 * <p>Offsets: Arrow Java has no offset, so non-zero offsets (the array's own and those nested arrays
 * inherit from their parents) are applied here. Fixed-width, view, type-id and list-view buffers are
 * sliced without copying. Three things are copied into {@code allocator} memory: a validity or boolean
 * bitmap whose first element is not at a multiple of 8 bits (shifted into place), and an offsets buffer
 * whose first offset is not 0 (rebased to start at 0, while the data buffer is sliced). Arrow Java also
 * allocates validity buffers itself for nodes with no nulls or only nulls.
 *
 * <p>Types Arrow Java 19 cannot hold exactly raise {@link UnsupportedFeatureException} naming the field:
 * decimal32 and decimal64, sparse unions whose type ids are not Arrow Java's own minor-type numbers,
 * run-end encoded arrays with a non-zero offset. The Arrow Java path needs host memory validated at
 * {@link ValidationLevel#DEFAULT} or {@link ValidationLevel#FULL} (Arrow Java trusts offsets). Use FULL for
 * producers you do not trust: at DEFAULT an inner offset, union offset or list view can still point outside
 * its child, which Arrow Java's bounds-checked buffers report as an {@code IndexOutOfBoundsException} on
 * access (never a wrong value read from outside the buffer, unless bounds checking was disabled with
 * {@code arrow.enable_unsafe_memory_access}).
 */
public final class ArrowJavaImport {
    private static final ArrowAccess ARROW = Access.arrow();

    private ArrowJavaImport() {}

    /**
     * The Arrow Java field for {@code schema}, for callers that build vectors themselves. Dictionary ids
     * are assigned from 0 in depth-first order.
     *
     * @throws UnsupportedFeatureException if Arrow Java cannot represent a type of the tree exactly
     */
    public static Field toField(SchemaNode schema) {
        return new FieldMapper(0).field(Objects.requireNonNull(schema, "schema"));
    }

    /**
     * Imports a validated array into a new Arrow Java vector, without copying (see the class comment for
     * the exceptions). Dictionaries of dictionary-encoded fields are put into {@code dictionaries} (with
     * fresh ids above the ones it holds); the caller closes them.
     *
     * <p>Ownership: after a return the caller owns the vector (and the dictionaries it added), and
     * {@code array} is consumed: its struct is released when the last Arrow buffer is. After a throw
     * {@code array} has already been released (closed), whatever the exception, as after every import.
     *
     * @param dictionaries receives the dictionaries; may be {@code null} if the schema has none
     * @throws UnsupportedFeatureException see above, or if {@code array} is device memory or was validated
     *         below DEFAULT
     */
    public static FieldVector importFieldVector(BufferAllocator allocator, ImportedArray array,
                                                DictionaryProvider.MapDictionaryProvider dictionaries) {
        return importInto(allocator, array, dictionaries, root -> { }, Loader::loadRoot);
    }

    /**
     * Imports a validated struct array (a record batch) into a new {@link VectorSchemaRoot}, without
     * copying; the struct's validity must have no nulls and its children become the root's vectors.
     * Ownership and exceptions as in {@link #importFieldVector}: after a throw {@code array} has already
     * been released.
     */
    public static VectorSchemaRoot importVectorSchemaRoot(BufferAllocator allocator, ImportedArray array,
                                                          DictionaryProvider.MapDictionaryProvider dictionaries) {
        return importInto(allocator, array, dictionaries, ArrowJavaImport::requireRecordBatch, (loader, field, root) -> {
            List<FieldVector> vectors = new ArrayList<>();
            try {
                for (int i = 0; i < root.children().size(); i++) {
                    vectors.add(loader.load(field.getChildren().get(i), root.children().get(i), root.offset(), root.length()));
                }
            } catch (RuntimeException | Error e) {
                vectors.forEach(FieldVector::close);
                throw e;
            }
            return new VectorSchemaRoot(field.getChildren(), vectors, Math.toIntExact(root.length()));
        });
    }

    /** Builds the Arrow Java result of one import from the loader, once the array is checked and handed over. */
    @FunctionalInterface
    private interface Body<T> {
        T load(Loader loader, Field field, ArrayNode root);
    }

    /**
     * The one import path: checks {@code array} (the common checks, then {@code refuse}), takes it over and
     * loads it with {@code body}. The input is released on every throw: by closing it while it is still a
     * handle, by the loader's release step once it was handed over.
     */
    private static <T> T importInto(BufferAllocator allocator, ImportedArray array,
                                    DictionaryProvider.MapDictionaryProvider dictionaries,
                                    java.util.function.Consumer<ArrayNode> refuse, Body<T> body) {
        Objects.requireNonNull(array, "array");
        ArrayNode root;
        FieldMapper mapper;
        try {
            Objects.requireNonNull(allocator, "allocator");
            root = array.root();
            mapper = prepare(root, array, dictionaries);
            refuse.accept(root);
        } catch (RuntimeException | Error e) {
            array.close();
            throw e;
        }
        Loader loader = new Loader(allocator, ARROW.transfer(array), dictionaries, mapper);
        return loader.run(() -> body.load(loader, mapper.rootField, root));
    }

    /** A record batch is a struct array, not dictionary-encoded, without top-level nulls. */
    private static void requireRecordBatch(ArrayNode root) {
        if (root.type().id() != TypeId.STRUCT || root.schema().dictionary() != null) {
            throw new UnsupportedFeatureException("format", "expected a struct array (a record batch) for a"
                    + " VectorSchemaRoot but found " + root.type());
        }
        long topNulls = Loader.nullCount(root, root.offset(), root.length());
        if (topNulls > 0) {
            throw new UnsupportedFeatureException("null_count",
                    "expected a record batch without top-level nulls but found " + topNulls);
        }
    }

    private static FieldMapper prepare(ArrayNode root, ImportedArray array,
                                       DictionaryProvider.MapDictionaryProvider dictionaries) {
        if (!root.isHostAccessible()) {
            throw new UnsupportedFeatureException("", "expected host memory for Arrow Java but found device type "
                    + array.deviceType().cName() + ": copy it to the host first");
        }
        if (array.validationLevel() != ValidationLevel.DEFAULT && array.validationLevel() != ValidationLevel.FULL) {
            throw new UnsupportedFeatureException("", "expected an array validated at DEFAULT or FULL for Arrow Java"
                    + " (it trusts every offset) but found " + array.validationLevel());
        }
        if (root.length() > Integer.MAX_VALUE) {
            throw new UnsupportedFeatureException("length", "expected at most " + Integer.MAX_VALUE
                    + " elements (Arrow Java's limit) but found " + root.length());
        }
        long firstId = 0;
        if (dictionaries != null) {
            for (long id : dictionaries.getDictionaryIds()) {
                firstId = Math.max(firstId, id + 1);
            }
        }
        FieldMapper mapper = new FieldMapper(firstId);
        mapper.rootField = mapper.field(root.schema());
        if (hasDictionary(root.schema()) && dictionaries == null) {
            throw new UnsupportedFeatureException("dictionary",
                    "expected a DictionaryProvider for a dictionary-encoded field but found null");
        }
        checkLoadable(root, 0, root.length());
        return mapper;
    }

    private static boolean hasDictionary(SchemaNode s) {
        if (s.dictionary() != null) {
            return true;
        }
        for (SchemaNode c : s.children()) {
            if (hasDictionary(c)) {
                return true;
            }
        }
        return false;
    }

    /** Rejects, before ownership moves, what the loader could not represent exactly. */
    private static void checkLoadable(ArrayNode n, long start, long count) {
        long phys = n.offset() + start;
        switch (n.type().layout()) {
            case RUN_END_ENCODED -> {
                if (phys != 0) {
                    throw new UnsupportedFeatureException(n.path(), "expected a run-end encoded array without offset"
                            + " (Arrow Java's RunEndEncodedVector has none) but found offset " + phys);
                }
                n.children().forEach(c -> checkLoadable(c, 0, c.length()));
            }
            case STRUCT, SPARSE_UNION -> n.children().forEach(c -> checkLoadable(c, phys, count));
            case FIXED_SIZE_LIST -> {
                long k = n.type().fixedSize();
                checkLoadable(n.children().get(0), Math.multiplyExact(phys, k), Math.multiplyExact(count, k));
            }
            case LIST, LARGE_LIST -> {
                ArrayNode c = n.children().get(0);
                long[] r = ListRange.of(n, phys, count);
                checkLoadable(c, r[0], r[1] - r[0]);
            }
            default -> n.children().forEach(c -> checkLoadable(c, 0, c.length()));
        }
        if (n.dictionary() != null) {
            checkLoadable(n.dictionary(), 0, n.dictionary().length());
        }
    }

    /** First and last offsets of a list or variable-size node over physical elements [phys, phys + count]. */
    static final class ListRange {
        static long[] of(ArrayNode n, long phys, long count) {
            if (n.isBufferNull(1)) {
                return new long[] {0, 0};
            }
            int w = n.type().layout().offsetWidth();
            MemorySegment s = hostBuffer(n, 1);
            return new long[] {read(s, phys, w), read(s, phys + count, w)};
        }

        static long read(MemorySegment s, long i, int w) {
            return w == 4 ? s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) : s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
        }
    }

    /**
     * Buffer {@code i} of a validated host node, sized to its validated length, for reading offsets and bits
     * here: the node's address, never a segment handed out (those belong to the import's scope).
     */
    private static MemorySegment hostBuffer(ArrayNode n, int i) {
        return n.bufferPointer(i).reinterpret(n.bufferLength(i));
    }

    /** Maps parsed types to Arrow Java fields. */
    private static final class FieldMapper {
        private long nextDictionaryId;
        /** The value field of each dictionary, as mapped with the ids of the whole tree. */
        final java.util.IdentityHashMap<SchemaNode, Field> dictionaryValueFields = new java.util.IdentityHashMap<>();
        Field rootField;

        FieldMapper(long firstDictionaryId) {
            this.nextDictionaryId = firstDictionaryId;
        }

        Field field(SchemaNode s) {
            List<Field> children = new ArrayList<>();
            DictionaryEncoding encoding = null;
            ArrowType type = type(s);
            if (s.dictionary() != null) {
                // Arrow Java's convention for an encoded vector: the index type plus the encoding; the
                // dictionary's value field is mapped (and checked) here and again when it is loaded.
                encoding = new DictionaryEncoding(nextDictionaryId++,
                        (s.flags() & SchemaNode.FLAG_DICTIONARY_ORDERED) != 0, (ArrowType.Int) type);
                dictionaryValueFields.put(s.dictionary(), field(s.dictionary()));
            }
            for (SchemaNode c : s.children()) {
                children.add(field(c));
            }
            if (s.type().id() == TypeId.SPARSE_UNION) {
                checkSparseUnion(s, children);
            }
            Map<String, String> metadata = s.metadata().isEmpty() ? null : s.metadata();
            return new Field(s.name() == null ? "" : s.name(), new FieldType(s.nullable(), type, encoding, metadata),
                    children);
        }

        private static void checkSparseUnion(SchemaNode s, List<Field> children) {
            Set<Types.MinorType> seen = new HashSet<>();
            for (int i = 0; i < children.size(); i++) {
                Types.MinorType minor = Types.getMinorTypeForArrowType(children.get(i).getType());
                int declared = s.type().unionTypeIds().get(i);
                if (declared != minor.ordinal() || !seen.add(minor)) {
                    throw new UnsupportedFeatureException(FieldPath.join(s.path(), "format"),
                            "expected sparse union type ids equal to Arrow Java's minor-type numbers (one child per type)"
                                    + " but found type id " + declared + " for " + minor + " (" + minor.ordinal() + ")");
                }
            }
        }

        private static ArrowType type(SchemaNode s) {
            ArrowDataType t = s.type();
            return switch (t.id()) {
                case NULL -> ArrowType.Null.INSTANCE;
                case BOOL -> ArrowType.Bool.INSTANCE;
                case INT8 -> new ArrowType.Int(8, true);
                case UINT8 -> new ArrowType.Int(8, false);
                case INT16 -> new ArrowType.Int(16, true);
                case UINT16 -> new ArrowType.Int(16, false);
                case INT32 -> new ArrowType.Int(32, true);
                case UINT32 -> new ArrowType.Int(32, false);
                case INT64 -> new ArrowType.Int(64, true);
                case UINT64 -> new ArrowType.Int(64, false);
                case FLOAT16 -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
                case FLOAT32 -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
                case FLOAT64 -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
                case DECIMAL32, DECIMAL64 -> throw new UnsupportedFeatureException(FieldPath.join(s.path(), "format"),
                        "expected a decimal Arrow Java 19 can hold exactly (128 or 256 bits) but found '" + t.format() + "'");
                case DECIMAL128 -> new ArrowType.Decimal(t.precision(), t.scale(), 128);
                case DECIMAL256 -> new ArrowType.Decimal(t.precision(), t.scale(), 256);
                case DATE32 -> new ArrowType.Date(DateUnit.DAY);
                case DATE64 -> new ArrowType.Date(DateUnit.MILLISECOND);
                case TIME32 -> new ArrowType.Time(unit(t), 32);
                case TIME64 -> new ArrowType.Time(unit(t), 64);
                case TIMESTAMP -> new ArrowType.Timestamp(unit(t), t.timezone().isEmpty() ? null : t.timezone());
                case DURATION -> new ArrowType.Duration(unit(t));
                case INTERVAL_MONTHS -> new ArrowType.Interval(IntervalUnit.YEAR_MONTH);
                case INTERVAL_DAY_TIME -> new ArrowType.Interval(IntervalUnit.DAY_TIME);
                case INTERVAL_MONTH_DAY_NANO -> new ArrowType.Interval(IntervalUnit.MONTH_DAY_NANO);
                case BINARY -> ArrowType.Binary.INSTANCE;
                case UTF8 -> ArrowType.Utf8.INSTANCE;
                case LARGE_BINARY -> ArrowType.LargeBinary.INSTANCE;
                case LARGE_UTF8 -> ArrowType.LargeUtf8.INSTANCE;
                case BINARY_VIEW -> ArrowType.BinaryView.INSTANCE;
                case UTF8_VIEW -> ArrowType.Utf8View.INSTANCE;
                case FIXED_SIZE_BINARY -> new ArrowType.FixedSizeBinary(t.fixedSize());
                case LIST -> ArrowType.List.INSTANCE;
                case LARGE_LIST -> ArrowType.LargeList.INSTANCE;
                case LIST_VIEW -> ArrowType.ListView.INSTANCE;
                case LARGE_LIST_VIEW -> ArrowType.LargeListView.INSTANCE;
                case FIXED_SIZE_LIST -> new ArrowType.FixedSizeList(t.fixedSize());
                case STRUCT -> ArrowType.Struct.INSTANCE;
                case MAP -> new ArrowType.Map((s.flags() & SchemaNode.FLAG_MAP_KEYS_SORTED) != 0);
                case SPARSE_UNION -> new ArrowType.Union(UnionMode.Sparse, ids(t));
                case DENSE_UNION -> new ArrowType.Union(UnionMode.Dense, ids(t));
                case RUN_END_ENCODED -> ArrowType.RunEndEncoded.INSTANCE;
            };
        }

        private static int[] ids(ArrowDataType t) {
            return t.unionTypeIds().stream().mapToInt(Integer::intValue).toArray();
        }

        private static org.apache.arrow.vector.types.TimeUnit unit(ArrowDataType t) {
            return switch (t.unit()) {
                case SECOND -> org.apache.arrow.vector.types.TimeUnit.SECOND;
                case MILLISECOND -> org.apache.arrow.vector.types.TimeUnit.MILLISECOND;
                case MICROSECOND -> org.apache.arrow.vector.types.TimeUnit.MICROSECOND;
                case NANOSECOND -> org.apache.arrow.vector.types.TimeUnit.NANOSECOND;
            };
        }
    }

    /** One buffer of foreign memory; releasing it drops one reference of the shared count. */
    private static final class Foreign extends ForeignAllocation {
        private final RefCount refs;

        Foreign(long size, long address, RefCount refs) {
            super(size, address);
            this.refs = refs;
        }

        @Override
        protected void release0() {
            refs.release();
        }
    }

    /** Loads one import; holds the shared reference count (its own reference is dropped by {@link #run}). */
    private static final class Loader {
        private final BufferAllocator allocator;
        private final RefCount refs;
        private final DictionaryProvider.MapDictionaryProvider dictionaries;
        private final List<FieldVector> addedDictionaries = new ArrayList<>();

        private final FieldMapper mapper;

        /** @param release the import's release step, run once when the last reference is dropped */
        Loader(BufferAllocator allocator, Runnable release, DictionaryProvider.MapDictionaryProvider dictionaries,
               FieldMapper mapper) {
            this.allocator = allocator;
            this.mapper = mapper;
            this.refs = new RefCount(release);
            this.dictionaries = dictionaries;
        }

        <T> T run(java.util.function.Supplier<T> body) {
            try {
                return body.get();
            } catch (RuntimeException | Error e) {
                for (FieldVector d : addedDictionaries) {
                    d.close();
                }
                if (e instanceof DeviceBridgeException || e instanceof Error) {
                    throw e;
                }
                throw new DeviceBridgeException("Arrow Java could not load the imported array (it was released): " + e, e);
            } finally {
                refs.release(); // the import's own reference; buffers still held keep the struct alive
            }
        }

        FieldVector loadRoot(Field field, ArrayNode root) {
            return load(field, root, 0, root.length());
        }

        /** A new vector for elements [start, start + count) of {@code n} (logical, before n's own offset). */
        FieldVector load(Field field, ArrayNode n, long start, long count) {
            FieldVector v = field.createVector(allocator);
            try {
                fill(v, n, start, count);
                return v;
            } catch (RuntimeException | Error e) {
                v.close();
                throw e;
            }
        }

        private void fill(FieldVector v, ArrayNode n, long start, long count) {
            long phys = Math.addExact(n.offset(), start);
            List<FieldVector> childVectors = v.getChildrenFromFields();
            List<ArrowBuf> buffers = new ArrayList<>();
            try {
                ArrowDataType t = n.type();
                Layout layout = t.layout();
                boolean hasValidity = switch (layout) {
                    case NULL, SPARSE_UNION, DENSE_UNION, RUN_END_ENCODED -> false;
                    default -> true;
                };
                long nulls = 0;
                if (hasValidity) {
                    nulls = nullCount(n, phys, count);
                    buffers.add(n.isBufferNull(0) ? allocator.getEmpty() : bitmap(n, 0, phys, count));
                }
                switch (layout) {
                    case NULL -> { }
                    case BOOL -> buffers.add(bitmap(n, 1, phys, count));
                    case FIXED_WIDTH, FIXED_SIZE_BINARY -> {
                        long w = t.elementByteWidth();
                        buffers.add(slice(n, 1, Math.multiplyExact(phys, w), Math.multiplyExact(count, w)));
                    }
                    case VARIABLE, LARGE_VARIABLE -> {
                        long[] r = offsets(n, phys, count, buffers);
                        buffers.add(slice(n, 2, r[0], r[1] - r[0]));
                    }
                    case VIEW -> {
                        buffers.add(slice(n, 1, Math.multiplyExact(phys, 16), Math.multiplyExact(count, 16)));
                        for (int i = 2; i < n.bufferCount() - 1; i++) {
                            buffers.add(slice(n, i, 0, n.bufferLength(i)));
                        }
                    }
                    case LIST, LARGE_LIST -> {
                        long[] r = offsets(n, phys, count, buffers);
                        fill(childVectors.get(0), n.children().get(0), r[0], r[1] - r[0]);
                    }
                    case LIST_VIEW, LARGE_LIST_VIEW -> {
                        long w = layout.offsetWidth();
                        buffers.add(slice(n, 1, Math.multiplyExact(phys, w), Math.multiplyExact(count, w)));
                        buffers.add(slice(n, 2, Math.multiplyExact(phys, w), Math.multiplyExact(count, w)));
                        ArrayNode c = n.children().get(0);
                        fill(childVectors.get(0), c, 0, c.length());
                    }
                    case FIXED_SIZE_LIST -> {
                        long k = t.fixedSize();
                        fill(childVectors.get(0), n.children().get(0), Math.multiplyExact(phys, k), Math.multiplyExact(count, k));
                    }
                    case STRUCT, SPARSE_UNION -> {
                        if (layout == Layout.SPARSE_UNION) {
                            buffers.add(slice(n, 0, phys, count));
                        }
                        for (int i = 0; i < n.children().size(); i++) {
                            fill(childVectors.get(i), n.children().get(i), phys, count);
                        }
                    }
                    case DENSE_UNION -> {
                        buffers.add(slice(n, 0, phys, count));
                        buffers.add(slice(n, 1, Math.multiplyExact(phys, 4), Math.multiplyExact(count, 4)));
                        for (int i = 0; i < n.children().size(); i++) {
                            ArrayNode c = n.children().get(i);
                            fill(childVectors.get(i), c, 0, c.length());
                        }
                    }
                    case RUN_END_ENCODED -> {
                        for (int i = 0; i < 2; i++) {
                            ArrayNode c = n.children().get(i);
                            fill(childVectors.get(i), c, 0, c.length());
                        }
                    }
                }
                if (n.dictionary() != null) {
                    loadDictionary(v.getField().getDictionary(), n.dictionary());
                }
                v.loadFieldBuffers(new ArrowFieldNode(Math.toIntExact(count), Math.toIntExact(nulls)), buffers);
            } finally {
                for (ArrowBuf b : buffers) {
                    b.getReferenceManager().release();
                }
            }
        }

        private void loadDictionary(DictionaryEncoding encoding, ArrayNode dictionaryNode) {
            // Arrow Java keeps a dictionary's value vector separately, under the id the mapping assigned.
            Field valueField = mapper.dictionaryValueFields.get(dictionaryNode.schema());
            FieldVector values = load(valueField, dictionaryNode, 0, dictionaryNode.length());
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
            MemorySegment bits = hostBuffer(n, 0);
            long nulls = 0;
            for (long i = phys; i < phys + count; i++) {
                if (!Bitmaps.bit(bits, i)) {
                    nulls++;
                }
            }
            return nulls;
        }

        /** Bits [phys, phys + count) of bitmap buffer {@code i}: a slice when byte-aligned, else a shifted copy. */
        private ArrowBuf bitmap(ArrayNode n, int i, long phys, long count) {
            long bytes = Bitmaps.bytes(count);
            if ((phys & 7) == 0) {
                return slice(n, i, phys >>> 3, bytes);
            }
            MemorySegment src = hostBuffer(n, i);
            ArrowBuf out = allocator.buffer(Math.max(bytes, 1));
            out.setZero(0, out.capacity());
            for (long k = 0; k < count; k++) {
                if (Bitmaps.bit(src, phys + k)) {
                    out.setByte(k >>> 3, out.getByte(k >>> 3) | (1 << (k & 7)));
                }
            }
            return out;
        }

        /**
         * Adds the offsets buffer for [phys, phys + count] (a slice when the first offset is 0, else a copy
         * rebased to 0) and returns the {first, last} offsets of that range.
         */
        private long[] offsets(ArrayNode n, long phys, long count, List<ArrowBuf> buffers) {
            int w = n.type().layout().offsetWidth();
            long[] r = ListRange.of(n, phys, count);
            if (n.isBufferNull(1) || count == 0) {
                ArrowBuf empty = allocator.buffer(w);
                empty.setZero(0, w);
                buffers.add(empty);
                return new long[] {0, 0};
            }
            if (r[0] == 0) {
                buffers.add(slice(n, 1, Math.multiplyExact(phys, w), Math.multiplyExact(count + 1, w)));
                return r;
            }
            MemorySegment src = hostBuffer(n, 1);
            ArrowBuf out = allocator.buffer(Math.multiplyExact(count + 1, w));
            for (long k = 0; k <= count; k++) {
                long v = ListRange.read(src, phys + k, w) - r[0];
                if (w == 4) {
                    out.setInt(k * 4, (int) v);
                } else {
                    out.setLong(k * 8, v);
                }
            }
            buffers.add(out);
            return r;
        }

        /** Bytes [from, from + bytes) of buffer {@code i}, zero-copy, checked against the validated length. */
        private ArrowBuf slice(ArrayNode n, int i, long from, long bytes) {
            if (bytes == 0 || n.isBufferNull(i)) {
                return allocator.getEmpty();
            }
            long end = Math.addExact(from, bytes);
            if (from < 0 || (n.bufferLength(i) >= 0 && end > n.bufferLength(i))) {
                throw new DeviceBridgeException("internal error: " + FieldPath.join(n.path(), "buffers[" + i + "]")
                        + " slice [" + from + ", " + end + ") exceeds " + n.bufferLength(i) + " bytes");
            }
            if (!refs.retain()) {
                throw new DeviceBridgeException("internal error: the imported array was already released");
            }
            try {
                return allocator.wrapForeignAllocation(new Foreign(bytes, n.bufferPointer(i).address() + from, refs));
            } catch (RuntimeException | Error e) {
                refs.release();
                throw e;
            }
        }
    }
}
