package org.devicebridge.cuda;

import java.util.Objects;
import org.devicebridge.InvalidArgumentException;

/**
 * Several byte ranges of one {@link DeviceBuffer}, such as the buffers of an uploaded batch
 * ({@link DeviceUpload#ranges()}): range {@code i} starts at {@code offsets[i]} and holds
 * {@code sizes[i]} bytes. It borrows the buffer: the caller keeps owning it, and it must still be live when
 * the ranges are used. The arrays are copied in and out.
 *
 * <p>Immutable and thread-safe; it owns nothing.
 *
 * @param buffer  the device buffer
 * @param offsets where each range starts in {@code buffer}
 * @param sizes   each range's size in bytes
 */
public record DeviceRanges(DeviceBuffer buffer, long[] offsets, long[] sizes) {

    /**
     * Copies the arrays and checks that every range lies inside the buffer.
     *
     * @throws InvalidArgumentException if the arrays differ in length or a range does not lie inside
     *         {@code buffer}
     */
    public DeviceRanges {
        Objects.requireNonNull(buffer, "buffer");
        offsets = Objects.requireNonNull(offsets, "offsets").clone();
        sizes = Objects.requireNonNull(sizes, "sizes").clone();
        if (offsets.length != sizes.length) {
            throw new InvalidArgumentException("sizes", "expected one size per offset (" + offsets.length
                    + ") but found " + sizes.length);
        }
        for (int i = 0; i < offsets.length; i++) {
            DeviceRange.checkInside(offsets[i], sizes[i], buffer.byteSize(), "ranges[" + i + "]");
        }
    }

    /** {@return a copy of the range offsets} */
    @Override
    public long[] offsets() {
        return offsets.clone();
    }

    /** {@return a copy of the range sizes} */
    @Override
    public long[] sizes() {
        return sizes.clone();
    }

    /** {@return the number of ranges} */
    public int count() {
        return offsets.length;
    }

    /**
     * {@return range {@code i}, borrowing the buffer}
     *
     * @param i the range index, from 0 to {@link #count()} - 1
     */
    public DeviceRange get(int i) {
        return new DeviceRange(buffer, offsets[i], sizes[i]);
    }
}
