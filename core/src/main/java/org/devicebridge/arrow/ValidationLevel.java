package org.devicebridge.arrow;

/**
 * How much an import checks, as in nanoarrow. Every level checks the struct shape the library itself
 * relies on to size buffers (so no level can make the library read out of bounds through a segment it
 * hands out); higher levels also read buffer contents.
 *
 * <p>An enum: immutable and thread-safe; it owns nothing.
 */
public enum ValidationLevel {
    /**
     * Only what sizing needs: struct pointers, counts and non-negative lengths. Buffer sizes of variable
     * length layouts stay unknown ({@code -1}).
     */
    NONE,
    /**
     * O(1) per node and never reads buffer contents (safe for device memory): lengths, offsets, null
     * counts, buffer and child counts, NULL buffers, child lengths against their parent.
     */
    MINIMAL,
    /** {@link #MINIMAL} plus the first and last value of each offsets / run-ends buffer (CPU memory only). */
    DEFAULT,
    /**
     * {@link #DEFAULT} plus every offset, union type id and offset, run end, dictionary index, list view and
     * view, and UTF-8 validity of utf8 / large utf8 values (CPU only).
     */
    FULL
}
