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
     * counts, buffer and child counts, NULL buffers, child lengths against their parent, no declared nulls
     * in map keys, map entries and run ends, offset + length within the run-end type.
     */
    MINIMAL,
    /**
     * {@link #MINIMAL} plus the first and last value of each offsets / run-ends buffer, and the bitmaps of map
     * keys, map entries and run ends whose null count is unknown (-1): everything Arrow C++'s
     * {@code Validate} and nanoarrow's DEFAULT check (host memory, or host copies of device memory).
     */
    DEFAULT,
    /**
     * {@link #DEFAULT} plus every offset, union type id and offset (per child non-decreasing), run end,
     * dictionary index, list view and view (bounds, inline padding, prefix), null counts against their
     * bitmaps, decimal precision, date64 and time ranges, and UTF-8 of utf8, large utf8 and utf8 view values:
     * everything Arrow C++'s {@code ValidateFull} checks (see {@code validation-parity.md} in the tests).
     */
    FULL
}
