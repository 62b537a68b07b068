package org.devicebridge.python;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The bytes an array spans relative to element {@code [0, ..., 0]}: from {@code low} ({@code <= 0}) for
 * {@code extent} bytes; both 0 for an empty array. Computed with exact arithmetic for the import and the
 * export of the array interfaces alike. Immutable.
 */
record ByteRange(long low, long extent) {
    /** The range of an array of {@code shape} (byte strides, or null for compact row-major); a SIZE error at {@code path} on overflow. */
    static ByteRange of(long[] shape, long[] byteStrides, int itemSize, String path) {
        long elements = 1;
        for (long n : shape) {
            elements = n == 0 ? 0 : elements;
        }
        if (elements == 0) {
            return new ByteRange(0, 0);
        }
        try {
            long low = 0;
            long high = 0;
            long step = itemSize;
            for (int i = shape.length - 1; i >= 0; i--) {
                long s = byteStrides == null ? step : byteStrides[i];
                long span = Math.multiplyExact(s, shape[i] - 1);
                if (span < 0) {
                    low = Math.addExact(low, span);
                } else {
                    high = Math.addExact(high, span);
                }
                step = Math.multiplyExact(step, shape[i]);
            }
            return new ByteRange(low, Math.addExact(Math.subtractExact(high, low), itemSize));
        } catch (ArithmeticException e) {
            throw new ValidationException(Category.SIZE, path, "the array's byte range overflows int64");
        }
    }
}
