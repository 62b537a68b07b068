package org.devicebridge.cuda;

import java.util.Objects;
import org.devicebridge.InvalidArgumentException;

/**
 * A byte range of a {@link DeviceBuffer}: where a copy reads or a fill writes. It borrows the buffer: the
 * caller keeps owning it, and it must still be live when the range is used.
 *
 * <p>Immutable and thread-safe; it owns nothing.
 *
 * @param buffer   the device buffer
 * @param offset   the first byte, from the start of {@code buffer}
 * @param byteSize the number of bytes
 */
public record DeviceRange(DeviceBuffer buffer, long offset, long byteSize) {

    /**
     * Checks that the range lies inside the buffer.
     *
     * @throws InvalidArgumentException unless {@code [offset, offset + byteSize)} lies inside {@code buffer}
     */
    public DeviceRange {
        Objects.requireNonNull(buffer, "buffer");
        checkInside(offset, byteSize, buffer.byteSize(), "");
    }

    /** The device address of the first byte; checks the buffer is live. */
    long address() {
        return buffer.addressOf(offset, byteSize);
    }

    /**
     * The one range rule of this package: {@code [offset, offset + bytes)} inside {@code [0, size)}, with
     * exact arithmetic. {@code what} names the range in the message (e.g. {@code ranges[3]}); may be empty.
     *
     * @throws InvalidArgumentException otherwise
     */
    static void checkInside(long offset, long bytes, long size, String what) {
        if (offset < 0 || bytes < 0 || offset > size - bytes) { // size >= 0, so size - bytes cannot overflow
            throw new InvalidArgumentException(what.isEmpty() ? "offset" : what, "expected a range inside the buffer's "
                    + size + " bytes but found " + bytes + " bytes at offset " + offset);
        }
    }
}
