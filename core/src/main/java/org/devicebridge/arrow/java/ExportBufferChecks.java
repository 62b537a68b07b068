package org.devicebridge.arrow.java;

import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthViewVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.complex.LargeListViewVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.ListViewVector;
import org.apache.arrow.vector.complex.StructVector;
import org.devicebridge.ValidationException;
import org.devicebridge.internal.Bitmaps;

/**
 * The buffer-size, offsets and child checks and the null counts of {@link ExportArrayWriter}'s planning, apart to
 * keep the writer under 600 lines.
 */
final class ExportBufferChecks {
    private ExportBufferChecks() {
    }

    static long ceilDiv8(long bits) {
        return (bits + 7) >>> 3;
    }

    /**
     * The nulls of {@code len} elements whose validity bitmap is {@code validity}: its zero bits among the first
     * {@code len} ({@link Bitmaps#countSet}: a word at a time, on the worker threads for large bitmaps); every element where the bitmap is missing or
     * too short, which {@link #validity} then rejects by name.
     */
    static long nullCount(ArrayExportPlan p, ArrowBuf validity, long len) {
        if (len == 0) {
            return 0;
        }
        if (validity == null || validity.memoryAddress() == 0 || validity.capacity() < ceilDiv8(len)) {
            return len;
        }
        return len - Bitmaps.countSet(ExportRuntime.ALL, validity.memoryAddress(), 0, len);
    }

    /**
     * {@code v.getNullCount()}: for these vectors, the zero bits among the first {@code len} bits of
     * {@code validity} (their validity buffer). Arrow Java reads them one bounds-checked long at a time (22 us
     * per million elements: most of the export of a string or list column); counted here by
     * {@link #nullCount} where the bitmap holds those bits, by Arrow Java otherwise (whatever it then does).
     */
    static long bitmapNulls(ArrayExportPlan p, FieldVector v, ArrowBuf validity, long len) {
        boolean countsItsBitmap = v instanceof BaseVariableWidthVector || v instanceof BaseLargeVariableWidthVector
                || v instanceof BaseVariableWidthViewVector || v instanceof ListVector || v instanceof LargeListVector
                || v instanceof ListViewVector || v instanceof LargeListViewVector || v instanceof FixedSizeListVector
                || v instanceof StructVector;
        if (len > 0 && countsItsBitmap && validity != null && validity == v.getValidityBuffer()
                && validity.memoryAddress() != 0 && validity.capacity() >= ceilDiv8(len)) {
            return nullCount(p, validity, len);
        }
        return v.getNullCount();
    }

    /** Adds the validity bitmap, or NULL where there is none and no value is null (allowed by the spec). */
    static void validity(ArrayExportPlan p, int node, ArrowBuf b) {
        long len = p.length[node];
        long need = ceilDiv8(len);
        if (len == 0) {
            p.buffer(0L, 0L);
            return;
        }
        if (b != null && b.capacity() >= need && b.memoryAddress() != 0) {
            p.retain(node, b);
            p.buffer(b.memoryAddress(), b.capacity());
            return;
        }
        if (p.nullCount[node] == 0) {
            p.buffer(0L, 0L);
            return;
        }
        throw new ValidationException(ValidationException.Category.SIZE, p.path(node, "buffers[0]"),
                "expected at least " + need + " bytes but found " + (b == null ? 0 : b.capacity()));
    }

    /** Adds a buffer that must hold {@code need} bytes; an empty one points at static zeros rather than NULL. */
    static void required(ArrayExportPlan p, int node, ArrowBuf b, long need, int index) {
        long have = b == null ? 0 : b.capacity();
        if (have < need) {
            throw new ValidationException(ValidationException.Category.SIZE, p.path(node, "buffers[" + index + "]"),
                    "expected at least " + need + " bytes but found " + have);
        }
        if (have == 0 || b.memoryAddress() == 0) {
            p.buffer(ExportRuntime.ZEROS.address(), ExportRuntime.ZEROS.byteSize());
            return;
        }
        p.retain(node, b);
        p.buffer(b.memoryAddress(), have);
    }

    /** Adds the offsets buffer (buffers[1]) and returns its last offset, checked against the first. */
    static long offsets(ArrayExportPlan p, int node, ArrowBuf b, int width, long len) {
        long need = Math.multiplyExact((long) width, len + 1);
        long have = b == null ? 0 : b.capacity();
        if (len == 0 && have < width) {
            p.buffer(ExportRuntime.ZEROS.address(), ExportRuntime.ZEROS.byteSize()); // Arrow Java may leave an empty vector without offsets
            return 0;
        }
        required(p, node, b, need, 1);
        long first = width == 4 ? b.getInt(0) : b.getLong(0);
        long last = width == 4 ? b.getInt(len * 4) : b.getLong(len * 8);
        if (first < 0 || last < first) {
            throw new ValidationException(ValidationException.Category.CONTENT, p.path(node, "buffers[1]"),
                    "offsets run from " + first + " to " + last);
        }
        return last;
    }

    static void checkChildCount(List<FieldVector> children, int expected, FieldVector v, ArrayExportPlan p, int node) {
        if (children.size() != expected) {
            throw new ValidationException(ValidationException.Category.STRUCTURE, p.path(node),
                    "expected " + expected + " children but found " + children.size() + " in " + v.getClass().getSimpleName());
        }
    }

    static void checkChildLength(FieldVector child, long need, ArrayExportPlan p, int node, int index) {
        if (child.getValueCount() < need) {
            throw new ValidationException(ValidationException.Category.LENGTH,
                    p.path(node, "children[" + index + "]"),
                    "expected at least " + need + " values but found " + child.getValueCount());
        }
    }
}
