package org.devicebridge.arrow.java;

import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthViewVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.devicebridge.ValidationException;

/**
 * The buffers an export writes itself, where a buffer of Arrow Java's cannot be handed out as it is: the
 * C Data Interface would read other values from it than Arrow Java does. Each one is made from the vector's
 * allocator and kept by the plan ({@link ArrayExportPlan#made}); the export holds it and frees it in
 * its release. The vector is never written. Not thread-safe: called on the exporting thread with its plan.
 */
final class ExportRewrites {
    private ExportRewrites() {
    }

    /**
     * Arrow Java 19 keeps decimal32/decimal64 in its 16-byte {@code DecimalVector} while the field says 32 or
     * 64 bits; the C Data Interface wants 4- or 8-byte values. They are narrowed exactly into a buffer this
     * export makes (from the vector's allocator; the export holds it and frees it in its release), null slots
     * as 0; a valid value that does not fit is refused. Node {@code node} is planned up to its null count.
     *
     * @param bits the width the exported field declares: 32 or 64
     * @throws ValidationException ({@code CONTENT}) naming the first value that does not fit
     */
    static ArrowBuf narrowDecimals(ArrayExportPlan p, int node, BaseFixedWidthVector v, int bits) {
        ArrowBuf data = v.getDataBuffer();
        ArrowBuf validity = v.getValidityBuffer();
        long len = p.length[node];
        long width = v.getTypeWidth();
        if (width != 16 || data == null || data.capacity() < Math.multiplyExact(width, len)) {
            throw new ValidationException(ValidationException.Category.SIZE, p.path(node, "buffers[1]"),
                    "expected " + len + " decimals of " + width + " bytes (Arrow Java's DecimalVector) but found "
                            + (data == null ? 0 : data.capacity()) + " bytes");
        }
        boolean allValid = validity == null || validity.memoryAddress() == 0 || p.nullCount[node] == 0;
        ArrowBuf out = v.getAllocator().buffer(Math.multiplyExact(len, bits / 8L));
        p.made(out);
        for (long i = 0; i < len; i++) {
            long low = data.getLong(i * 16);
            long high = data.getLong(i * 16 + 8);
            boolean valid = allValid || (validity.getByte(i >>> 3) & (1 << (i & 7))) != 0;
            if (!valid) {
                low = 0;
            } else if (high != (low >> 63) || (bits == 32 && low != (int) low)) {
                throw new ValidationException(ValidationException.Category.CONTENT, p.path(node, "buffers[1]"),
                        "decimal value at index " + i + " (" + v.getObject((int) i) + ") does not fit in " + bits
                                + " bits, the width its field declares");
            }
            if (bits == 32) {
                out.setInt(i * 4, (int) low);
            } else {
                out.setLong(i * 8, low);
            }
        }
        return out;
    }

    /**
     * The view buffer to export: the vector's own where every valid inline view (12 bytes or fewer) is zero
     * after its bytes, as the format requires; else a copy with that padding zeroed, which this export makes
     * (from the vector's allocator; the export holds it and frees it in its release). Arrow Java 19's split
     * ({@code VectorSchemaRoot.slice}, {@code splitAndTransfer}) writes only the length and bytes of an inline
     * view into a view buffer it allocates without zeroing, so a slice can carry allocator garbage there.
     * The vector is never written. Null slots are left as they are (their views are unspecified).
     */
    static ArrowBuf zeroPaddedViews(ArrayExportPlan p, int node, BaseVariableWidthViewVector v, long len) {
        ArrowBuf views = v.getDataBuffer();
        long need = Math.multiplyExact(16L, len);
        if (len == 0 || views == null || views.memoryAddress() == 0 || views.capacity() < need) {
            return views; // required() names a short buffer
        }
        ArrowBuf validity = v.getValidityBuffer();
        boolean allValid = validity == null || validity.memoryAddress() == 0 || p.nullCount[node] == 0;
        ArrowBuf out = null;
        for (long i = 0; i < len; i++) {
            long base = i * 16;
            int size = views.getInt(base);
            if (size < 0 || size >= 12
                    || !(allValid || (validity.getByte(i >>> 3) & (1 << (i & 7))) != 0)) {
                continue; // no padding, not inline, or a null slot
            }
            int pad = 4 + size; // first padding byte; the buffer is little-endian, as Arrow Java's
            long lo = views.getLong(base);
            long hi = views.getLong(base + 8);
            boolean dirty = pad < 8 ? (lo >>> (8 * pad)) != 0 || hi != 0 : (hi >>> (8 * (pad - 8))) != 0;
            if (!dirty) {
                continue;
            }
            if (out == null) {
                out = v.getAllocator().buffer(need);
                p.made(out);
                out.setBytes(0, views, 0, need);
            }
            out.setZero(base + pad, 16 - pad);
        }
        return out == null ? views : out;
    }

    /**
     * The type-id buffer to export for a sparse union: the vector's own where each id in it is the id the
     * exported field gives the child Arrow Java reads for it; else a copy with the ids rewritten. Arrow Java's
     * {@code UnionVector} reads a row through {@code getVectorByType(id)}, which maps a declared id to its
     * child (a union loaded from C data or IPC keeps the declared ids in its buffer), while the vector's own
     * field lists minor-type numbers as its ids: exported with that field, {@code +us:5,7} would become
     * {@code +us:4,24} over a buffer still holding 5 and 7. Each distinct id is looked up once (at most 128),
     * then the rows are rewritten only where some id changes.
     *
     * <p>Rows Arrow Java's {@code UnionVector} never set hold type id 0 ({@code MinorType.NULL}), which Arrow
     * Java reads as null and which selects no child of a union without a null child. Each such row is exported
     * with the id of the first child (in the exported field's order) that is null at that row: every consumer
     * then reads null there, the union stays valid at FULL, and the schema is the vector's own, whatever the
     * batch holds (a stream's schema is exported once, before its batches). The row's value is exact; its type
     * id is that child's.
     *
     * @param fieldIds the exported field's type ids, one per child ({@code null}: the child indices)
     * @param children the vector's children, in the exported field's order
     * @throws ValidationException ({@code CONTENT}) naming the first row whose id selects no child (an unset
     *         row: where no child is null)
     */
    static ArrowBuf sparseTypeIds(ArrayExportPlan p, int node, UnionVector v, int[] fieldIds,
                                  List<FieldVector> children) {
        ArrowBuf types = v.getTypeBuffer();
        long len = p.length[node];
        if (len == 0 || types == null || types.memoryAddress() == 0 || types.capacity() < len) {
            return types; // required() names a short buffer
        }
        byte[] exported = new byte[Byte.MAX_VALUE + 1];
        long seen0 = 0;
        long seen1 = 0;
        boolean rewrite = false;
        for (long i = 0; i < len; i++) {
            int id = types.getByte(i);
            if (id < 0) {
                throw new ValidationException(ValidationException.Category.CONTENT, p.path(node, "buffers[0]"),
                        "type id " + id + " at index " + i + " is negative");
            }
            long bit = 1L << (id & 63);
            if (((id < 64 ? seen0 : seen1) & bit) != 0) {
                continue;
            }
            if (id < 64) {
                seen0 |= bit;
            } else {
                seen1 |= bit;
            }
            int child = childReadFor(v, children, id);
            if (child == NO_CHILD) {
                throw new ValidationException(ValidationException.Category.CONTENT, p.path(node, "buffers[0]"),
                        "type id " + id + " at index " + i + " selects no child of the sparse union");
            }
            int out = child == UNSET ? -1 : fieldIds == null ? child : fieldIds[child];
            exported[id] = (byte) out;
            rewrite |= out != id;
        }
        if (!rewrite) {
            return types;
        }
        ArrowBuf out = v.getAllocator().buffer(len);
        p.made(out);
        for (long i = 0; i < len; i++) {
            byte id = exported[types.getByte(i)];
            out.setByte(i, id >= 0 ? id : nullChildId(p, node, fieldIds, children, i));
        }
        return out;
    }

    /** The exported type id of the first child null at unset row {@code row}. */
    private static byte nullChildId(ArrayExportPlan p, int node, int[] fieldIds, List<FieldVector> children,
                                    long row) {
        for (int c = 0; c < children.size(); c++) {
            if (children.get(c).isNull((int) row)) {
                return (byte) (fieldIds == null ? c : fieldIds[c]);
            }
        }
        throw new ValidationException(ValidationException.Category.CONTENT, p.path(node, "buffers[0]"),
                "type id 0 at index " + row + " (a row the UnionVector never set) selects no child of the sparse"
                        + " union, and no child is null at that row");
    }

    /** What {@link #childReadFor} returns for type id 0 in a union without a null child: rows never set. */
    private static final int UNSET = -1;
    /** What {@link #childReadFor} returns for an id that selects no child: the caller refuses the row. */
    private static final int NO_CHILD = -2;

    /**
     * The index in {@code children} of the child {@code UnionVector} reads for type id {@code id}, or
     * {@link #UNSET} for id 0 ({@code MinorType.NULL}, read as null) where no child is a null vector, or
     * {@link #NO_CHILD}. Arrow Java's lookup makes a vector for a minor type it has none of; should it do so
     * here, the id selects no child and is refused (any read of that row by Arrow Java would have done the same).
     */
    private static int childReadFor(UnionVector v, List<FieldVector> children, int id) {
        Object found;
        try {
            found = v.getVectorByType(id);
        } catch (RuntimeException e) {
            found = e; // no minor type of that number
        }
        int match = -1;
        for (int c = 0; c < children.size(); c++) {
            FieldVector child = children.get(c);
            if (found == child || (found == null && child instanceof NullVector)) {
                match = c;
                break;
            }
        }
        if (v.getChildrenFromFields().size() == children.size() && match < 0 && found == null) {
            return UNSET;
        }
        return match < 0 || v.getChildrenFromFields().size() != children.size() ? NO_CHILD : match;
    }
}
