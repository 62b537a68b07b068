package org.devicebridge.dlpack;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * Where a tensor's elements lie: dtype, shape, strides (in elements) and byte offset, with the byte range they
 * cover, computed with exact arithmetic. Negative strides are allowed: the range then starts before
 * {@code data + byte_offset}, and {@link #origin} says where element {@code [0, ..., 0]} sits inside it. Zero
 * strides (broadcast) are allowed. A sub-byte type that is not padded to a byte per element must be compact
 * row-major. Made only by {@link #of} and {@link #packed}, which check every part.
 *
 * @param dtype the element type
 * @param shape the extents
 * @param strides one stride per dimension, in elements (compact row-major where the producer gave none)
 * @param byteOffset bytes from {@code data} to element {@code [0, ..., 0]}
 * @param elements the number of elements
 * @param start bytes from {@code data + byte_offset} to the first byte of the range ({@code <= 0})
 * @param extent bytes of the range
 * @param compact whether the strides are compact row-major
 */
record Geometry(DType dtype, long[] shape, long[] strides, long byteOffset, long elements, long start, long extent,
                boolean compact) {
    static final int MAX_NDIM = 64;

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
     * The geometry of {@code dtype} elements each addressed by strides: a sub-byte element padded to a byte
     * (how an export lays them out, and an import that sets {@code IS_SUBBYTE_TYPE_PADDED}).
     *
     * @param strides NULL (compact row-major) or one stride per dimension, in elements
     * @throws ValidationException {@code SIZE}, {@code STRUCTURE}: see the checks
     */
    static Geometry of(DType dtype, long[] shape, long[] strides, long byteOffset, String path) {
        long elements = elements(shape, byteOffset, path);
        // the compact strides are made (an array) only where the producer gave none
        long[] s = strides == null ? compactStrides(shape, path) : strides;
        boolean compact = strides == null || isCompact(shape, strides, path);
        if (elements == 0) {
            return new Geometry(dtype, shape, s, byteOffset, 0, 0, 0, true);
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
        return new Geometry(dtype, shape, s, byteOffset, elements, start, extent, compact);
    }

    /**
     * The geometry of {@code dtype} elements as DLPack lays them out without
     * {@code DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED}: sub-byte elements packed (compact row-major only);
     * {@link #of} for any other type.
     *
     * @param strides NULL (compact row-major) or one stride per dimension, in elements
     * @throws ValidationException {@code SCHEMA} for a packed sub-byte type that is not compact row-major;
     *         otherwise as {@link #of}
     */
    static Geometry packed(DType dtype, long[] shape, long[] strides, long byteOffset, String path) {
        if (!dtype.isSubByte()) {
            return of(dtype, shape, strides, byteOffset, path);
        }
        long elements = elements(shape, byteOffset, path);
        long[] s = strides == null ? compactStrides(shape, path) : strides;
        boolean compact = strides == null || isCompact(shape, strides, path);
        if (elements == 0) {
            return new Geometry(dtype, shape, s, byteOffset, 0, 0, 0, true);
        }
        if (!compact) {
            throw new ValidationException(Category.SCHEMA, field(path, "strides"), "packed sub-byte type " + dtype
                    + " must be compact row-major (set DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED for strided data)");
        }
        long bits = multiply(elements, dtype.bits(), path, "shape");
        long extent = bits / 8 + (bits % 8 == 0 ? 0 : 1);
        checkEnd(byteOffset, 0, extent, path);
        return new Geometry(dtype, shape, s, byteOffset, elements, 0, extent, true);
    }

    /**
     * The number of elements of {@code shape}, after the checks that come before the strides: a byte offset
     * below 2^63, no negative extent, a count that fits int64.
     */
    private static long elements(long[] shape, long byteOffset, String path) {
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
        return elements;
    }

    /**
     * Whether {@code strides} are compact row-major for {@code shape}.
     *
     * @throws ValidationException {@code SIZE} if the extents' product overflows, {@code STRUCTURE} unless there
     *         is one stride per dimension
     */
    private static boolean isCompact(long[] shape, long[] strides, String path) {
        boolean sameLength = strides.length == shape.length;
        boolean compact = compactSteps(shape, sameLength ? strides : null, null, path);
        if (!sameLength) {
            throw new ValidationException(Category.STRUCTURE, field(path, "strides"),
                    "expected " + shape.length + " strides but found " + strides.length);
        }
        return compact;
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
