package org.devicebridge.foreign;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.ValidationException;

/** The one check of a caller-allocated output struct, for every export that fills one. */
public final class OutStructs {
    private OutStructs() {}

    /**
     * {@code out} as a segment of at least {@code size} bytes: a native, non-NULL, 8-byte aligned segment;
     * a zero-length one (an address from native code, such as {@code MemorySegment.ofAddress(p)}) is taken
     * to point at a whole struct.
     *
     * @param name the parameter's name, for the error's field path
     * @throws ValidationException naming {@code name} for a heap, NULL, misaligned or too small segment
     */
    public static MemorySegment sized(MemorySegment out, long size, String name) {
        Objects.requireNonNull(out, name);
        if (!out.isNative()) {
            throw new ValidationException(ValidationException.Category.STRUCTURE, name,
                    "expected a native segment (off-heap memory) but found a heap segment");
        }
        if (out.address() == 0) {
            throw new ValidationException(ValidationException.Category.NULL_POINTER, name, "the struct pointer is NULL");
        }
        if (out.address() % 8 != 0) {
            throw new ValidationException(ValidationException.Category.ALIGNMENT, name,
                    "expected an 8-byte aligned struct but found address 0x" + Long.toHexString(out.address()));
        }
        if (out.byteSize() == 0) {
            return out.reinterpret(size); // an address from native code: taken to point at a whole struct
        }
        if (out.byteSize() < size) {
            throw new ValidationException(ValidationException.Category.SIZE, name,
                    "expected at least " + size + " bytes but found " + out.byteSize());
        }
        return out;
    }
}
