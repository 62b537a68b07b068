package org.devicebridge.dlpack;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The byte range a tensor covers, computed with exact arithmetic from dtype, shape, strides (in elements)
 * and byte offset. Negative strides are allowed: the range then starts before {@code data + byte_offset},
 * and {@link #origin} says where element {@code [0, ..., 0]} sits inside it. Zero strides (broadcast) are
 * allowed. A sub-byte type that is not padded to a byte per element must be compact row-major.
 */
final class Geometry {
    static final int MAX_NDIM = 64;

    final long[] shape;
    final long[] strides;
    final long elements;
    /** Bytes from {@code data + byte_offset} to the first byte of the range ({@code <= 0}). */
    final long start;
    /** Bytes of the range. */
    final long extent;
    final boolean compact;

    private Geometry(long[] shape, long[] strides, long elements, long start, long extent, boolean compact) {
        this.shape = shape;
        this.strides = strides;
        this.elements = elements;
        this.start = start;
        this.extent = extent;
        this.compact = compact;
    }

    /** Byte offset of element {@code [0, ..., 0]} inside the range. */
    long origin() {
        return -start;
    }

    static long[] compactStrides(long[] shape, String path) {
        long[] s = new long[shape.length];
        compactSteps(shape, null, s, path);
        return s;
    }

    /**
     * Walks the compact row-major strides of {@code shape} from the last dimension: writes them to {@code out}
     * when it is not null, and tells whether {@code strides} (when not null, one per dimension) equals them on
     * every dimension whose extent is not 1. Allocates nothing.
     *
     * @throws ValidationException {@code SIZE} if the product of the extents (zeros counted as 1) overflows
     */
    private static boolean compactSteps(long[] shape, long[] strides, long[] out, String path) {
        boolean compact = true;
        long step = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            if (out != null) {
                out[i] = step;
            }
            if (strides != null && shape[i] != 1 && strides[i] != step) {
                compact = false;
            }
            try {
                step = Math.multiplyExact(step, Math.max(1, shape[i]));
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, field(path, "shape"), "element count overflows int64");
            }
        }
        return compact;
    }

    /**
     * @param strides NULL (compact row-major) or one stride per dimension, in elements
     * @param packed  sub-byte elements are packed (not padded to a byte each)
     */
    static Geometry of(DType dtype, boolean packed, long[] shape, long[] strides, long byteOffset, String path) {
        if (byteOffset < 0) {
            throw new ValidationException(Category.SIZE, field(path, "byte_offset"),
                    "expected a byte offset below 2^63 but found " + Long.toUnsignedString(byteOffset));
        }
        long elements = 1;
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] < 0) {
                throw new ValidationException(Category.SIZE, field(path, "shape", i),
                        "expected a non-negative extent but found " + shape[i]);
            }
        }
        for (int i = 0; i < shape.length; i++) {
            try {
                elements = Math.multiplyExact(elements, shape[i]);
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, field(path, "shape", i), "element count overflows int64");
            }
        }
        // the compact strides are made (an array) only where the producer gave none
        long[] s;
        boolean compact;
        if (strides == null) {
            s = new long[shape.length];
            compact = compactSteps(shape, null, s, path);
        } else {
            s = strides;
            boolean sameLength = s.length == shape.length;
            compact = compactSteps(shape, sameLength ? s : null, null, path);
            if (!sameLength) {
                throw new ValidationException(Category.STRUCTURE, field(path, "strides"),
                        "expected " + shape.length + " strides but found " + s.length);
            }
        }
        if (elements == 0) {
            return new Geometry(shape, s, 0, 0, 0, true);
        }
        if (packed && dtype.isSubByte()) {
            if (!compact) {
                throw new ValidationException(Category.SCHEMA, field(path, "strides"), "packed sub-byte type " + dtype
                        + " must be compact row-major (set DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED for strided data)");
            }
            long bits = multiply(elements, dtype.bits(), path, "shape");
            long extent = bits / 8 + (bits % 8 == 0 ? 0 : 1);
            checkEnd(byteOffset, 0, extent, path);
            return new Geometry(shape, s, elements, 0, extent, true);
        }
        long item = dtype.byteSize();
        long min = 0;
        long max = 0;
        for (int i = 0; i < shape.length; i++) {
            long span;
            try {
                span = Math.multiplyExact(s[i], shape[i] - 1);
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, field(path, "strides", i), "byte size overflows int64");
            }
            try {
                if (span >= 0) {
                    max = Math.addExact(max, span);
                } else {
                    min = Math.addExact(min, span);
                }
            } catch (ArithmeticException e) {
                throw new ValidationException(Category.SIZE, field(path, "strides", i),
                        "element offsets overflow int64");
            }
        }
        long start = multiply(min, item, path, "strides");
        long last = multiply(max, item, path, "strides");
        long extent;
        try {
            extent = Math.addExact(Math.subtractExact(last, start), item);
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, field(path, "strides"), "byte extent overflows int64");
        }
        checkEnd(byteOffset, start, extent, path);
        return new Geometry(shape, s, elements, start, extent, compact);
    }

    private static void checkEnd(long byteOffset, long start, long extent, String path) {
        try {
            Math.addExact(Math.addExact(byteOffset, start), extent);
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, field(path, "byte_offset"), "byte offset plus extent overflows int64");
        }
    }

    /** {@code path.name}, or {@code name} alone at the root (an export's spec has no enclosing struct). */
    private static String field(String path, String name) {
        return path.isEmpty() ? name : path + "." + name;
    }

    /** {@code path.name[index]}; built only when an error is thrown. */
    private static String field(String path, String name, int index) {
        return field(path, name + "[" + index + "]");
    }

    /** {@code a * b}; the field path of the error is built only when it overflows. */
    private static long multiply(long a, long b, String path, String name) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, field(path, name), "byte size overflows int64");
        }
    }
}
