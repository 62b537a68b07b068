package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseVariableWidthViewVector;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;

/**
 * Fills an ArrowArray tree from Arrow Java vectors without copying data: the buffer pointers are the
 * ArrowBufs' addresses, and each exported node retains its buffers. Everything is planned and checked
 * first (O(1) per node: buffer sizes against lengths, first/last offsets), then one malloc block receives
 * the child structs, pointer arrays and variadic-size buffers, the buffers are retained, and the root
 * struct is written last. A failure leaves the output untouched and holds nothing.
 */
final class ExportArrayWriter {
    private static final long LENGTH = ArrowArray.length$offset();
    private static final long NULL_COUNT = ArrowArray.null_count$offset();
    private static final long OFFSET = ArrowArray.offset$offset();
    private static final long N_BUFFERS = ArrowArray.n_buffers$offset();
    private static final long N_CHILDREN = ArrowArray.n_children$offset();
    private static final long BUFFERS = ArrowArray.buffers$offset();
    private static final long CHILDREN = ArrowArray.children$offset();
    private static final long DICTIONARY = ArrowArray.dictionary$offset();
    private static final long RELEASE = ArrowArray.release$offset();
    private static final long PRIVATE = ArrowArray.private_data$offset();

    private ExportArrayWriter() {}

    /** A node's field path, built into a string only for an error message (the export path stays cheap). */
    private static final class Path {
        static final Path ROOT = new Path(null, 0);
        final Path parent;
        final int index; // child index, or -1 for the dictionary

        Path(Path parent, int index) {
            this.parent = parent;
            this.index = index;
        }

        String join(String part) {
            return FieldPath.join(toString(), part);
        }

        @Override
        public String toString() {
            if (parent == null) {
                return "";
            }
            return parent.join(index < 0 ? "dictionary" : "children[" + index + "]");
        }
    }

    private static final class Plan {
        long length;
        long nullCount;
        /** Absolute addresses; -1 marks the variadic-sizes buffer, which lives in the block. */
        long[] buffers;
        final List<ArrowBuf> retain = new ArrayList<>(3);
        long[] variadicSizes;
        final List<Plan> children = new ArrayList<>();
        Plan dictionary;
        long structOff = -1;
        long buffersOff;
        long childrenOff;
        long variadicOff;
    }

    /** Exports {@code vector} (with its dictionaries) into {@code out}. */
    static void exportVector(FieldVector vector, DictionaryProvider provider, MemorySegment out) {
        List<Plan> all = new ArrayList<>();
        Plan root = plan(vector, provider, Path.ROOT, 0, all);
        write(all, root, out);
    }

    /** Exports {@code root} as a struct array (the record batch) into {@code out}. */
    static void exportRoot(VectorSchemaRoot batch, DictionaryProvider provider, MemorySegment out) {
        List<Plan> all = new ArrayList<>();
        Plan root = new Plan();
        all.add(root);
        root.length = batch.getRowCount();
        root.nullCount = 0;
        root.buffers = new long[] {0L};
        List<FieldVector> vectors = batch.getFieldVectors();
        for (int i = 0; i < vectors.size(); i++) {
            FieldVector v = vectors.get(i);
            Path path = new Path(Path.ROOT, i);
            if (v.getValueCount() != batch.getRowCount()) {
                throw new ValidationException(ValidationException.Category.LENGTH, path.toString(), "vector '" + v.getName()
                        + "' has " + v.getValueCount() + " values but the root has " + batch.getRowCount() + " rows");
            }
            root.children.add(plan(v, provider, path, 1, all));
        }
        write(all, root, out);
    }

    private static void write(List<Plan> all, Plan root, MemorySegment out) {
        long size = 0;
        for (Plan p : all) {
            if (p != root) {
                p.structOff = size;
                size += ExportRuntime.ARRAY_SIZE;
            }
            p.buffersOff = size;
            size = Math.addExact(size, 8L * Math.max(1, p.buffers.length));
            p.childrenOff = size;
            size = Math.addExact(size, 8L * p.children.size());
            p.variadicOff = size;
            if (p.variadicSizes != null) {
                size = Math.addExact(size, 8L * Math.max(1, p.variadicSizes.length));
            }
        }
        MemorySegment block = Native.malloc(size);
        long base = block.address();
        int retained = 0;
        int planIndex = 0;
        try {
            for (planIndex = 0; planIndex < all.size(); planIndex++) {
                Plan p = all.get(planIndex);
                for (retained = 0; retained < p.retain.size(); retained++) {
                    p.retain.get(retained).getReferenceManager().retain();
                }
            }
        } catch (RuntimeException e) {
            // undo: a buffer that can no longer be retained (its vector was closed concurrently)
            for (int i = 0; i <= planIndex && i < all.size(); i++) {
                Plan p = all.get(i);
                int n = i == planIndex ? retained : p.retain.size();
                for (int k = 0; k < n; k++) {
                    p.retain.get(k).getReferenceManager().release();
                }
            }
            Native.free(block);
            throw new ValidationException(ValidationException.Category.RELEASED, "",
                    "an Arrow buffer was released while it was being exported: " + e.getMessage(), e);
        }
        ExportRuntime.Block owner = new ExportRuntime.Block(base, all.size());
        long[] keys = new long[all.size()];
        for (int i = 0; i < all.size(); i++) {
            Plan p = all.get(i);
            for (int b = 0; b < p.buffers.length; b++) {
                long a = p.buffers[b] == -1L ? base + p.variadicOff : p.buffers[b];
                block.set(ValueLayout.JAVA_LONG, p.buffersOff + 8L * b, a);
            }
            if (p.variadicSizes != null) {
                for (int k = 0; k < p.variadicSizes.length; k++) {
                    block.set(ValueLayout.JAVA_LONG, p.variadicOff + 8L * k, p.variadicSizes[k]);
                }
            }
            for (int c = 0; c < p.children.size(); c++) {
                block.set(ValueLayout.JAVA_LONG, p.childrenOff + 8L * c, base + p.children.get(c).structOff);
            }
            long[] dependents = new long[p.children.size() + (p.dictionary == null ? 0 : 1)];
            for (int c = 0; c < p.children.size(); c++) {
                dependents[c] = base + p.children.get(c).structOff;
            }
            if (p.dictionary != null) {
                dependents[dependents.length - 1] = base + p.dictionary.structOff;
            }
            ArrowBuf[] held = p.retain.isEmpty() ? null : p.retain.toArray(new ArrowBuf[0]);
            keys[i] = ExportRuntime.ARRAYS.register(new ExportRuntime.Node(owner, held, dependents));
        }
        for (int i = 0; i < all.size(); i++) {
            Plan p = all.get(i);
            MemorySegment s = p == root ? out : block.asSlice(p.structOff, ExportRuntime.ARRAY_SIZE);
            s.set(ValueLayout.JAVA_LONG, LENGTH, p.length);
            s.set(ValueLayout.JAVA_LONG, NULL_COUNT, p.nullCount);
            s.set(ValueLayout.JAVA_LONG, OFFSET, 0L);
            s.set(ValueLayout.JAVA_LONG, N_BUFFERS, p.buffers.length);
            s.set(ValueLayout.JAVA_LONG, N_CHILDREN, p.children.size());
            s.set(ValueLayout.JAVA_LONG, BUFFERS, base + p.buffersOff);
            s.set(ValueLayout.JAVA_LONG, CHILDREN, p.children.isEmpty() ? 0L : base + p.childrenOff);
            s.set(ValueLayout.JAVA_LONG, DICTIONARY, p.dictionary == null ? 0L : base + p.dictionary.structOff);
            s.set(ValueLayout.JAVA_LONG, PRIVATE, keys[i]);
            s.set(ValueLayout.JAVA_LONG, RELEASE, ExportRuntime.RELEASE_ARRAY.address());
        }
    }

    // ---------------------------------------------------------------- planning

    private static Plan plan(FieldVector vector, DictionaryProvider provider, Path path, int depth, List<Plan> all) {
        if (depth > FieldPath.MAX_DEPTH) {
            throw new ValidationException(ValidationException.Category.DEPTH, path.toString(),
                    "the data nests deeper than " + FieldPath.MAX_DEPTH
                            + " levels (or a dictionary refers back to itself)");
        }
        Field field = vector.getField();
        FieldVector v = vector;
        while (v instanceof ExtensionTypeVector<?> ext) {
            v = ext.getUnderlyingVector();
        }
        ArrowType type = ExportFormats.storage(field.getType());
        Plan p = new Plan();
        all.add(p);
        long len = v.getValueCount();
        p.length = len;
        List<FieldVector> children = v.getChildrenFromFields() == null ? List.of() : v.getChildrenFromFields();
        int expectedChildren;
        switch (type.getTypeID()) {
            case Null -> {
                p.nullCount = len;
                p.buffers = new long[0];
                expectedChildren = 0;
            }
            case Bool, Int, FloatingPoint, Decimal, Date, Time, Timestamp, Duration, Interval, FixedSizeBinary -> {
                long bits = fixedBits(type, path);
                List<ArrowBuf> fb = fieldBuffers(v, 2, type, path);
                p.nullCount = v.getNullCount();
                p.buffers = new long[2];
                p.buffers[0] = validity(p, fb.get(0), path);
                p.buffers[1] = required(p, fb.get(1), ceilDiv8(Math.multiplyExact(bits, len)), path, 1);
                expectedChildren = 0;
            }
            case Utf8, Binary, LargeUtf8, LargeBinary -> {
                int w = (type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary ? Layout.VARIABLE
                        : Layout.LARGE_VARIABLE).offsetWidth();
                List<ArrowBuf> fb = fieldBuffers(v, 3, type, path); // fills offset holes, as arrow-c-data does
                p.nullCount = v.getNullCount();
                p.buffers = new long[3];
                p.buffers[0] = validity(p, fb.get(0), path);
                long last = offsets(p, fb.get(1), w, len, path);
                p.buffers[2] = required(p, fb.get(2), last, path, 2);
                expectedChildren = 0;
            }
            case Utf8View, BinaryView -> {
                if (!(v instanceof BaseVariableWidthViewVector view)) {
                    throw unexpectedVector(v, type, path);
                }
                List<ArrowBuf> data = view.getDataBuffers();
                p.nullCount = v.getNullCount();
                p.buffers = new long[3 + data.size()];
                p.buffers[0] = validity(p, view.getValidityBuffer(), path);
                p.buffers[1] = required(p, view.getDataBuffer(), Math.multiplyExact(16L, len), path, 1);
                p.variadicSizes = new long[data.size()];
                for (int k = 0; k < data.size(); k++) {
                    ArrowBuf d = data.get(k);
                    p.variadicSizes[k] = d.capacity();
                    p.buffers[2 + k] = required(p, d, d.capacity(), path, 2 + k);
                }
                p.buffers[p.buffers.length - 1] = -1L;
                expectedChildren = 0;
            }
            case List, LargeList, Map -> {
                int w = (type instanceof ArrowType.LargeList ? Layout.LARGE_LIST : Layout.LIST).offsetWidth();
                List<ArrowBuf> fb = fieldBuffers(v, 2, type, path);
                p.nullCount = v.getNullCount();
                p.buffers = new long[2];
                p.buffers[0] = validity(p, fb.get(0), path);
                long last = offsets(p, fb.get(1), w, len, path);
                expectedChildren = 1;
                checkChildCount(children, expectedChildren, v, path);
                checkChildLength(children.get(0), last, path, 0);
            }
            case ListView, LargeListView -> {
                int w = (type instanceof ArrowType.LargeListView ? Layout.LARGE_LIST_VIEW : Layout.LIST_VIEW).offsetWidth();
                List<ArrowBuf> fb = fieldBuffers(v, 3, type, path);
                p.nullCount = v.getNullCount();
                p.buffers = new long[3];
                p.buffers[0] = validity(p, fb.get(0), path);
                p.buffers[1] = required(p, fb.get(1), Math.multiplyExact((long) w, len), path, 1);
                p.buffers[2] = required(p, fb.get(2), Math.multiplyExact((long) w, len), path, 2);
                expectedChildren = 1;
            }
            case FixedSizeList -> {
                List<ArrowBuf> fb = fieldBuffers(v, 1, type, path);
                p.nullCount = v.getNullCount();
                p.buffers = new long[] {validity(p, fb.get(0), path)};
                expectedChildren = 1;
                checkChildCount(children, expectedChildren, v, path);
                checkChildLength(children.get(0),
                        Math.multiplyExact(len, (long) ((ArrowType.FixedSizeList) type).getListSize()), path, 0);
            }
            case Struct -> {
                List<ArrowBuf> fb = fieldBuffers(v, 1, type, path);
                p.nullCount = v.getNullCount();
                p.buffers = new long[] {validity(p, fb.get(0), path)};
                expectedChildren = field.getChildren().size();
                checkChildCount(children, expectedChildren, v, path);
                for (int i = 0; i < children.size(); i++) {
                    checkChildLength(children.get(i), len, path, i);
                }
            }
            case Union -> {
                ArrowType.Union u = (ArrowType.Union) type;
                boolean dense = u.getMode() == org.apache.arrow.vector.types.UnionMode.Dense;
                List<ArrowBuf> fb = fieldBuffers(v, dense ? 2 : 1, type, path);
                p.nullCount = 0; // unions have no validity bitmap
                p.buffers = new long[dense ? 2 : 1];
                p.buffers[0] = required(p, fb.get(0), len, path, 0);
                if (dense) {
                    p.buffers[1] = required(p, fb.get(1), Math.multiplyExact(4L, len), path, 1);
                }
                expectedChildren = field.getChildren().size();
                checkChildCount(children, expectedChildren, v, path);
                if (!dense) {
                    for (int i = 0; i < children.size(); i++) {
                        checkChildLength(children.get(i), len, path, i);
                    }
                }
            }
            case RunEndEncoded -> {
                fieldBuffers(v, 0, type, path);
                p.nullCount = 0; // no validity bitmap: nulls live in the values child
                p.buffers = new long[0];
                expectedChildren = 2;
            }
            default -> throw new UnsupportedFeatureException(path.toString(), "cannot export Arrow type " + type);
        }
        checkChildCount(children, expectedChildren, v, path);
        if (field.getChildren().size() != children.size()) {
            throw new ValidationException(ValidationException.Category.STRUCTURE, path.toString(), "the field declares "
                    + field.getChildren().size() + " children but the vector has " + children.size());
        }
        DictionaryEncoding encoding = field.getDictionary();
        if (encoding != null) {
            ExportSchemaWriter.checkIndexType(field, encoding, path.toString());
            Dictionary dictionary = ExportSchemaWriter.lookup(provider, encoding, path.toString());
            p.dictionary = plan(dictionary.getVector(), provider, new Path(path, -1),
                    depth + 1, all);
        }
        for (int i = 0; i < children.size(); i++) {
            p.children.add(plan(children.get(i), provider, new Path(path, i),
                    depth + 1, all));
        }
        return p;
    }

    private static long fixedBits(ArrowType type, Path path) {
        return switch (type.getTypeID()) {
            case Bool -> 1;
            case Int -> ((ArrowType.Int) type).getBitWidth();
            case FloatingPoint -> switch (((ArrowType.FloatingPoint) type).getPrecision()) {
                case HALF -> 16;
                case SINGLE -> 32;
                case DOUBLE -> 64;
            };
            case Decimal -> ((ArrowType.Decimal) type).getBitWidth();
            case Date -> ((ArrowType.Date) type).getUnit() == org.apache.arrow.vector.types.DateUnit.DAY ? 32 : 64;
            case Time -> ((ArrowType.Time) type).getBitWidth();
            case Timestamp, Duration -> 64;
            case Interval -> switch (((ArrowType.Interval) type).getUnit()) {
                case YEAR_MONTH -> 32;
                case DAY_TIME -> 64;
                case MONTH_DAY_NANO -> 128;
            };
            case FixedSizeBinary -> 8L * ((ArrowType.FixedSizeBinary) type).getByteWidth();
            default -> throw new UnsupportedFeatureException(path.toString(), "cannot export Arrow type " + type);
        };
    }

    private static List<ArrowBuf> fieldBuffers(FieldVector v, int expected, ArrowType type, Path path) {
        List<ArrowBuf> fb = v.getFieldBuffers();
        if (fb.size() != expected) {
            throw unexpectedVector(v, type, path);
        }
        return fb;
    }

    private static UnsupportedFeatureException unexpectedVector(FieldVector v, ArrowType type, Path path) {
        return new UnsupportedFeatureException(path.toString(), "vector class " + v.getClass().getName()
                + " does not have the buffer layout of Arrow type " + type);
    }

    private static long ceilDiv8(long bits) {
        return (bits + 7) >>> 3;
    }

    /** The validity bitmap, or NULL where there is none and no value is null (allowed by the spec). */
    private static long validity(Plan p, ArrowBuf b, Path path) {
        long need = ceilDiv8(p.length);
        if (p.length == 0) {
            return 0L;
        }
        if (b != null && b.capacity() >= need && b.memoryAddress() != 0) {
            p.retain.add(b);
            return b.memoryAddress();
        }
        if (p.nullCount == 0) {
            return 0L;
        }
        throw new ValidationException(ValidationException.Category.SIZE, path.join("buffers[0]"),
                "expected at least " + need + " bytes but found " + (b == null ? 0 : b.capacity()));
    }

    /** A buffer that must hold {@code need} bytes; an empty one points at static zeros rather than NULL. */
    private static long required(Plan p, ArrowBuf b, long need, Path path, int index) {
        long have = b == null ? 0 : b.capacity();
        if (have < need) {
            throw new ValidationException(ValidationException.Category.SIZE,
                    path.join("buffers[" + index + "]"),
                    "expected at least " + need + " bytes but found " + have);
        }
        if (have == 0 || b.memoryAddress() == 0) {
            return ExportRuntime.ZEROS.address();
        }
        p.retain.add(b);
        return b.memoryAddress();
    }

    /** Exports the offsets buffer (buffers[1]) and returns its last offset, checked against the first. */
    private static long offsets(Plan p, ArrowBuf b, int width, long len, Path path) {
        String at = path.join("buffers[1]");
        long need = Math.multiplyExact((long) width, len + 1);
        long have = b == null ? 0 : b.capacity();
        if (len == 0 && have < width) {
            p.buffers[1] = ExportRuntime.ZEROS.address(); // Arrow Java may leave an empty vector without offsets
            return 0;
        }
        p.buffers[1] = required(p, b, need, path, 1);
        long first = width == 4 ? b.getInt(0) : b.getLong(0);
        long last = width == 4 ? b.getInt(len * 4) : b.getLong(len * 8);
        if (first < 0 || last < first) {
            throw new ValidationException(ValidationException.Category.CONTENT, at,
                    "offsets run from " + first + " to " + last);
        }
        return last;
    }

    private static void checkChildCount(List<FieldVector> children, int expected, FieldVector v, Path path) {
        if (children.size() != expected) {
            throw new ValidationException(ValidationException.Category.STRUCTURE, path.toString(),
                    "expected " + expected + " children but found " + children.size() + " in " + v.getClass().getSimpleName());
        }
    }

    private static void checkChildLength(FieldVector child, long need, Path path, int index) {
        if (child.getValueCount() < need) {
            throw new ValidationException(ValidationException.Category.LENGTH,
                    path.join("children[" + index + "]"),
                    "expected at least " + need + " values but found " + child.getValueCount());
        }
    }
}
