package org.devicebridge.arrow.java;

import static org.devicebridge.arrow.java.ExportBufferChecks.ceilDiv8;
import static org.devicebridge.arrow.java.ExportBufferChecks.nullCount;
import static org.devicebridge.arrow.java.ExportBufferChecks.required;
import static org.devicebridge.arrow.java.ExportBufferChecks.validity;

import java.lang.ref.WeakReference;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/**
 * What an export of a record batch of fixed-width and boolean columns learns once and reuses while the same
 * root (or one built on the same {@code Field} list) is exported again on the thread: each column's vector
 * class and bits per value, so that planning the next batch re-reads only what can change (buffers, value
 * and null counts) and makes the same checks {@link ExportArrayWriter}'s general planning makes for such
 * columns. It is keyed by the identity of the root schema's field list (the fields decide every format and
 * width) and checked against each vector's exact class; anything else (another list, another class, a
 * column whose value count is not the root's) goes to the general planning, which then names any problem.
 */
final class ExportRootShape {
    /** The field list this shape was made from, weakly: the thread's plan must not keep a caller's schema alive. */
    private final WeakReference<List<Field>> fields;
    /** Each column's vector class; {@code null} where the columns do not fit (remembered, not tried again). */
    private final Class<?>[] classes;
    private final long[] bits;

    private ExportRootShape(List<Field> fields, Class<?>[] classes, long[] bits) {
        this.fields = new WeakReference<>(fields);
        this.classes = classes;
        this.bits = bits;
    }

    /**
     * The shape of {@code batch} (just planned by the general planning, with {@code fields} its schema's fields);
     * one that does not {@link #fits() fit} where a column is not a plain fixed-width or boolean vector without
     * dictionary.
     */
    static ExportRootShape of(VectorSchemaRoot batch, List<Field> fields, ArrayExportPlan p) {
        int n = fields.size();
        Class<?>[] classes = new Class<?>[n];
        long[] bits = new long[n];
        for (int i = 0; i < n; i++) {
            Field f = fields.get(i);
            FieldVector v = batch.getVector(i);
            ArrowType type = f.getType();
            if (!(v instanceof BaseFixedWidthVector) || f.getDictionary() != null || !f.getChildren().isEmpty()) {
                return new ExportRootShape(fields, null, null);
            }
            switch (type.getTypeID()) {
                // not Decimal (narrowed per export), not extension types (their storage is looked up)
                case Bool, Int, FloatingPoint, Date, Time, Timestamp, Duration, Interval, FixedSizeBinary -> {
                    bits[i] = ExportArrayWriter.fixedBits(type, p, 0);
                }
                default -> {
                    return new ExportRootShape(fields, null, null);
                }
            }
            classes[i] = v.getClass();
        }
        return new ExportRootShape(fields, classes, bits);
    }

    /** Whether the columns fit: {@link #plan} can plan a batch of this shape. */
    boolean fits() {
        return classes != null;
    }

    /** Whether this shape was made from {@code fields} (the same list object). */
    boolean madeFrom(List<Field> fields) {
        return this.fields.get() == fields;
    }

    /**
     * Plans the columns of {@code batch} ({@code rows} rows) as nodes {@code first..} of {@code p}, as the
     * general planning would; returns {@code false}, having planned part of them, where a column does not fit
     * this shape or its value count is not {@code rows} (the caller then plans the batch anew).
     *
     * @throws org.devicebridge.ValidationException as the general planning throws it for a fitting column
     */
    boolean plan(ArrayExportPlan p, int first, VectorSchemaRoot batch, int rows) {
        if (classes == null) {
            return false;
        }
        int n = classes.length;
        List<FieldVector> vectors = batch.getFieldVectors();
        if (vectors.size() != n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            FieldVector v = vectors.get(i);
            if (v.getClass() != classes[i] || v.getValueCount() != rows) {
                return false;
            }
            BaseFixedWidthVector f = (BaseFixedWidthVector) v;
            int node = first + i;
            long len = rows;
            p.length[node] = len;
            p.begin(node);
            ArrowBuf validity = f.getValidityBuffer();
            p.nullCount[node] = nullCount(p, validity, len);
            validity(p, node, validity);
            required(p, node, f.getDataBuffer(), ceilDiv8(Math.multiplyExact(bits[i], len)), 1);
            p.end(node);
            p.reserveDependents(node, 0, false);
        }
        return true;
    }
}
