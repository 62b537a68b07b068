package org.devicebridge.arrow.java;

import static org.devicebridge.arrow.java.ExportBufferChecks.bitmapNulls;
import static org.devicebridge.arrow.java.ExportBufferChecks.ceilDiv8;
import static org.devicebridge.arrow.java.ExportBufferChecks.checkChildCount;
import static org.devicebridge.arrow.java.ExportBufferChecks.checkChildLength;
import static org.devicebridge.arrow.java.ExportBufferChecks.nullCount;
import static org.devicebridge.arrow.java.ExportBufferChecks.offsets;
import static org.devicebridge.arrow.java.ExportBufferChecks.required;
import static org.devicebridge.arrow.java.ExportBufferChecks.validity;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthViewVector;
import org.apache.arrow.vector.ExtensionTypeVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.DenseUnionVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.internal.FieldPath;

/**
 * Fills an ArrowArray tree from Arrow Java vectors without copying data (but for the buffers
 * {@link ExportRewrites} makes: narrowed decimals, views whose inline padding is not zero, sparse-union type ids
 * Arrow Java's own field misnames or never set, which the export copies and owns): the buffer pointers are the
 * ArrowBufs' addresses, and each exported node retains its buffers. Everything is planned and checked
 * first (O(1) per node: buffer sizes against lengths, first/last offsets; views and narrowed decimals are
 * read per value) into the thread's reused
 * {@link ArrayExportPlan}, then {@link ExportBlock} retains the buffers, makes one malloc block for the child structs,
 * pointer arrays, variadic sizes and the node table, registers the tree and writes the structs. A
 * failure leaves the output untouched and holds nothing.
 */
final class ExportArrayWriter {
    private static final long VARIADIC_SIZES = ExportBlock.VARIADIC_SIZES;

    private ExportArrayWriter() {}

    /** Exports {@code vector} (with its dictionaries) into {@code out}. */
    static void exportVector(FieldVector vector, DictionaryProvider provider, MemorySegment out) {
        ArrayExportPlan p = ArrayExportPlan.take();
        try {
            p.reserveRoot();
            planVector(p, 0, vector, VectorFields.of(vector), provider);
            ExportBlock.write(p, out);
        } finally {
            ArrayExportPlan.done(p);
        }
    }

    /** Exports {@code root} as a struct array (the record batch) into {@code out}. */
    static void exportRoot(VectorSchemaRoot batch, DictionaryProvider provider, MemorySegment out) {
        ArrayExportPlan p = ArrayExportPlan.take();
        try {
            planRoot(p, batch, provider);
            ExportBlock.write(p, out);
        } finally {
            ArrayExportPlan.done(p);
        }
    }

    /**
     * Plans {@code batch} as a struct array (the record batch) into {@code p}, a plan just taken: what
     * {@link #exportRoot} writes, and what {@link ArrowJavaView} describes.
     */
    static void planRoot(ArrayExportPlan p, VectorSchemaRoot batch, DictionaryProvider provider) {
        p.reserveRoot();
        int rows = batch.getRowCount();
        List<Field> fields = batch.getSchema().getFields(); // the schema exported with it: as many as vectors
        int n = fields.size();
        p.begin(0);
        p.length[0] = rows;
        p.nullCount[0] = 0;
        p.buffer(0L, 0L);
        p.end(0);
        int first = p.reserveDependents(0, n, false);
        for (int i = 0; i < n; i++) {
            FieldVector v = batch.getVector(i);
            if (v.getValueCount() != rows) {
                throw new ValidationException(ValidationException.Category.LENGTH, p.path(first + i), "vector '"
                        + v.getName() + "' has " + v.getValueCount() + " values but the root has " + rows + " rows");
            }
            planVector(p, first + i, v, fields.get(i), provider);
        }
    }

    // ---------------------------------------------------------------- planning

    /**
     * Plans node {@code node} (already reserved) from {@code vector}, then its dictionary and children.
     * {@code field} is the field the schema exported with the array describes this node with (the vector's own
     * field, or the root schema's): the array follows it where Arrow Java's vector could be read in another
     * order (a dense union's field lists its children by type id, its vector by when they were added).
     */
    private static void planVector(ArrayExportPlan p, int node, FieldVector vector, Field field,
                                   DictionaryProvider provider) {
        if (p.depth(node) > FieldPath.MAX_DEPTH) {
            throw new ValidationException(ValidationException.Category.DEPTH, p.path(node),
                    "the data nests deeper than " + FieldPath.MAX_DEPTH
                            + " levels (or a dictionary refers back to itself)");
        }
        FieldVector v = vector;
        while (v instanceof ExtensionTypeVector<?> ext) {
            v = ext.getUnderlyingVector();
        }
        ArrowType type = ExportFormats.storage(field.getType());
        long len = v.getValueCount();
        p.length[node] = len;
        p.begin(node);
        List<FieldVector> children = v instanceof DenseUnionVector dense ? denseChildren(dense, type, p, node)
                : v.getChildrenFromFields() == null ? List.of() : v.getChildrenFromFields();
        int expectedChildren;
        switch (type.getTypeID()) {
            case Null -> {
                p.nullCount[node] = len;
                expectedChildren = 0;
            }
            case Bool, Int, FloatingPoint, Decimal, Date, Time, Timestamp, Duration, Interval, FixedSizeBinary -> {
                long bits = fixedBits(type, p, node);
                ArrowBuf validity;
                ArrowBuf data;
                if (v instanceof BaseFixedWidthVector f) { // no list per export
                    validity = f.getValidityBuffer();
                    data = f.getDataBuffer();
                    p.nullCount[node] = nullCount(p, validity, len);
                } else {
                    List<ArrowBuf> fb = fieldBuffers(v, 2, type, p, node);
                    validity = fb.get(0);
                    data = fb.get(1);
                    p.nullCount[node] = v.getNullCount();
                }
                validity(p, node, validity);
                if (type instanceof ArrowType.Decimal && v instanceof BaseFixedWidthVector f
                        && bits < 8L * f.getTypeWidth() && len > 0) {
                    data = ExportRewrites.narrowDecimals(p, node, f, (int) bits);
                }
                required(p, node, data, ceilDiv8(Math.multiplyExact(bits, len)), 1);
                expectedChildren = 0;
            }
            case Utf8, Binary, LargeUtf8, LargeBinary -> {
                int w = (type instanceof ArrowType.Utf8 || type instanceof ArrowType.Binary ? Layout.VARIABLE
                        : Layout.LARGE_VARIABLE).offsetWidth();
                List<ArrowBuf> fb = fieldBuffers(v, 3, type, p, node); // fills offset holes, as arrow-c-data does
                p.nullCount[node] = bitmapNulls(p, v, fb.get(0), len);
                validity(p, node, fb.get(0));
                long last = offsets(p, node, fb.get(1), w, len);
                required(p, node, fb.get(2), last, 2);
                expectedChildren = 0;
            }
            case Utf8View, BinaryView -> {
                if (!(v instanceof BaseVariableWidthViewVector view)) {
                    throw unexpectedVector(v, type, p, node);
                }
                List<ArrowBuf> data = view.getDataBuffers();
                p.nullCount[node] = bitmapNulls(p, v, view.getValidityBuffer(), len);
                validity(p, node, view.getValidityBuffer());
                required(p, node, ExportRewrites.zeroPaddedViews(p, node, view, len), Math.multiplyExact(16L, len), 1);
                for (int k = 0; k < data.size(); k++) {
                    ArrowBuf d = data.get(k);
                    p.variadicSize(node, d.capacity());
                    required(p, node, d, d.capacity(), 2 + k);
                }
                p.buffer(VARIADIC_SIZES, 8L * p.variadicCount[node]);
                expectedChildren = 0;
            }
            case List, LargeList, Map -> {
                int w = (type instanceof ArrowType.LargeList ? Layout.LARGE_LIST : Layout.LIST).offsetWidth();
                List<ArrowBuf> fb = fieldBuffers(v, 2, type, p, node);
                p.nullCount[node] = bitmapNulls(p, v, fb.get(0), len);
                validity(p, node, fb.get(0));
                long last = offsets(p, node, fb.get(1), w, len);
                expectedChildren = 1;
                checkChildCount(children, expectedChildren, v, p, node);
                checkChildLength(children.get(0), last, p, node, 0);
            }
            case ListView, LargeListView -> {
                int w = (type instanceof ArrowType.LargeListView ? Layout.LARGE_LIST_VIEW : Layout.LIST_VIEW).offsetWidth();
                List<ArrowBuf> fb = fieldBuffers(v, 3, type, p, node);
                p.nullCount[node] = bitmapNulls(p, v, fb.get(0), len);
                validity(p, node, fb.get(0));
                required(p, node, fb.get(1), Math.multiplyExact((long) w, len), 1);
                required(p, node, fb.get(2), Math.multiplyExact((long) w, len), 2);
                expectedChildren = 1;
            }
            case FixedSizeList -> {
                List<ArrowBuf> fb = fieldBuffers(v, 1, type, p, node);
                p.nullCount[node] = bitmapNulls(p, v, fb.get(0), len);
                validity(p, node, fb.get(0));
                expectedChildren = 1;
                checkChildCount(children, expectedChildren, v, p, node);
                checkChildLength(children.get(0),
                        Math.multiplyExact(len, (long) ((ArrowType.FixedSizeList) type).getListSize()), p, node, 0);
            }
            case Struct -> {
                List<ArrowBuf> fb = fieldBuffers(v, 1, type, p, node);
                p.nullCount[node] = bitmapNulls(p, v, fb.get(0), len);
                validity(p, node, fb.get(0));
                expectedChildren = field.getChildren().size();
                checkChildCount(children, expectedChildren, v, p, node);
                for (int i = 0; i < children.size(); i++) {
                    checkChildLength(children.get(i), len, p, node, i);
                }
            }
            case Union -> {
                ArrowType.Union u = (ArrowType.Union) type;
                boolean dense = u.getMode() == org.apache.arrow.vector.types.UnionMode.Dense;
                List<ArrowBuf> fb = fieldBuffers(v, dense ? 2 : 1, type, p, node);
                p.nullCount[node] = 0; // unions have no validity bitmap
                ArrowBuf types = fb.get(0);
                if (!dense && v instanceof UnionVector sparse && children.size() == field.getChildren().size()) {
                    types = ExportRewrites.sparseTypeIds(p, node, sparse, u.getTypeIds(), children);
                }
                required(p, node, types, len, 0);
                if (dense) {
                    required(p, node, fb.get(1), Math.multiplyExact(4L, len), 1);
                }
                expectedChildren = field.getChildren().size();
                checkChildCount(children, expectedChildren, v, p, node);
                if (!dense) {
                    for (int i = 0; i < children.size(); i++) {
                        checkChildLength(children.get(i), len, p, node, i);
                    }
                }
            }
            case RunEndEncoded -> {
                fieldBuffers(v, 0, type, p, node);
                p.nullCount[node] = 0; // no validity bitmap: nulls live in the values child
                expectedChildren = 2;
            }
            default -> throw new UnsupportedFeatureException(p.path(node), "cannot export Arrow type " + type);
        }
        p.end(node);
        checkChildCount(children, expectedChildren, v, p, node);
        if (field.getChildren().size() != children.size()) {
            throw new ValidationException(ValidationException.Category.STRUCTURE, p.path(node), "the field declares "
                    + field.getChildren().size() + " children but the vector has " + children.size());
        }
        DictionaryEncoding encoding = field.getDictionary();
        Dictionary dictionary = null;
        if (encoding != null) {
            ExportSchemaWriter.checkIndexType(field, encoding, p.path(node));
            dictionary = ExportSchemaWriter.lookup(provider, encoding, p.path(node));
        }
        int first = p.reserveDependents(node, children.size(), dictionary != null);
        if (dictionary != null) {
            planVector(p, first + children.size(), dictionary.getVector(), VectorFields.of(dictionary.getVector()), provider);
        }
        for (int i = 0; i < children.size(); i++) {
            planVector(p, first + i, children.get(i), field.getChildren().get(i), provider);
        }
    }

    /**
     * The children of a dense union in the order of the field's type ids (the vector for each id), which is the
     * order the schema lists them in; the vector's own list is in the order the children were added.
     */
    private static List<FieldVector> denseChildren(DenseUnionVector v, ArrowType type, ArrayExportPlan p, int node) {
        int[] ids = type instanceof ArrowType.Union u ? u.getTypeIds() : null;
        if (ids == null) {
            return v.getChildrenFromFields();
        }
        List<FieldVector> out = new java.util.ArrayList<>(ids.length);
        for (int id : ids) {
            FieldVector c = VectorFields.denseChild(v, id);
            if (c == null) {
                throw new ValidationException(ValidationException.Category.STRUCTURE, p.path(node),
                        "the field declares type id " + id + " but the dense union vector has no child of that id");
            }
            out.add(c);
        }
        return out;
    }

    private static long fixedBits(ArrowType type, ArrayExportPlan p, int node) {
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
            default -> throw new UnsupportedFeatureException(p.path(node), "cannot export Arrow type " + type);
        };
    }

    private static List<ArrowBuf> fieldBuffers(FieldVector v, int expected, ArrowType type, ArrayExportPlan p, int node) {
        List<ArrowBuf> fb = v.getFieldBuffers();
        if (fb.size() != expected) {
            throw unexpectedVector(v, type, p, node);
        }
        return fb;
    }

    private static UnsupportedFeatureException unexpectedVector(FieldVector v, ArrowType type, ArrayExportPlan p, int node) {
        return new UnsupportedFeatureException(p.path(node), "vector class " + v.getClass().getName()
                + " does not have the buffer layout of Arrow type " + type);
    }
}
