package org.devicebridge.arrow;

import java.util.List;
import java.util.Objects;

/**
 * A parsed Arrow C Data Interface format string, independent of Arrow Java. Parameters that do not apply
 * to a type are {@code 0} / {@code null} / empty.
 *
 * @param id the type
 * @param format the format string it was parsed from
 * @param fixedSize byte width of fixed-size binary, list size of fixed-size list, otherwise 0
 * @param precision decimal precision, otherwise 0
 * @param scale decimal scale, otherwise 0
 * @param unit time unit of time, timestamp and duration types, otherwise {@code null}
 * @param timezone timestamp time zone; {@code ""} for a timestamp without one; {@code null} for other types
 * @param unionTypeIds the declared type ids of a union, in child order; empty for other types
 */
public record ArrowDataType(TypeId id, String format, int fixedSize, int precision, int scale, TimeUnit unit,
                            String timezone, List<Integer> unionTypeIds) {

    public ArrowDataType {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(format, "format");
        unionTypeIds = List.copyOf(unionTypeIds);
    }

    /** Time unit of time-like types. */
    public enum TimeUnit { SECOND, MILLISECOND, MICROSECOND, NANOSECOND }

    /** Physical layout family, which decides the buffers and children a node has. */
    public enum Layout {
        NULL, BOOL, FIXED_WIDTH, VARIABLE, LARGE_VARIABLE, VIEW, FIXED_SIZE_BINARY, LIST, LARGE_LIST,
        LIST_VIEW, LARGE_LIST_VIEW, FIXED_SIZE_LIST, STRUCT, SPARSE_UNION, DENSE_UNION, RUN_END_ENCODED;

        /**
         * Bytes per offset (and per size, for list views) of the layouts that have them: 4 for
         * {@link #VARIABLE}, {@link #LIST} and {@link #LIST_VIEW}, 8 for their large variants; 0 for layouts
         * without offsets. The one home of this rule.
         */
        public int offsetWidth() {
            return switch (this) {
                case VARIABLE, LIST, LIST_VIEW -> 4;
                case LARGE_VARIABLE, LARGE_LIST, LARGE_LIST_VIEW -> 8;
                default -> 0;
            };
        }
    }

    /** Every type of the Arrow format. {@code byteWidth} is the element width of fixed-width types. */
    public enum TypeId {
        NULL(Layout.NULL, 0), BOOL(Layout.BOOL, 0),
        INT8(Layout.FIXED_WIDTH, 1), UINT8(Layout.FIXED_WIDTH, 1), INT16(Layout.FIXED_WIDTH, 2),
        UINT16(Layout.FIXED_WIDTH, 2), INT32(Layout.FIXED_WIDTH, 4), UINT32(Layout.FIXED_WIDTH, 4),
        INT64(Layout.FIXED_WIDTH, 8), UINT64(Layout.FIXED_WIDTH, 8),
        FLOAT16(Layout.FIXED_WIDTH, 2), FLOAT32(Layout.FIXED_WIDTH, 4), FLOAT64(Layout.FIXED_WIDTH, 8),
        DECIMAL32(Layout.FIXED_WIDTH, 4), DECIMAL64(Layout.FIXED_WIDTH, 8), DECIMAL128(Layout.FIXED_WIDTH, 16),
        DECIMAL256(Layout.FIXED_WIDTH, 32),
        DATE32(Layout.FIXED_WIDTH, 4), DATE64(Layout.FIXED_WIDTH, 8), TIME32(Layout.FIXED_WIDTH, 4),
        TIME64(Layout.FIXED_WIDTH, 8), TIMESTAMP(Layout.FIXED_WIDTH, 8), DURATION(Layout.FIXED_WIDTH, 8),
        INTERVAL_MONTHS(Layout.FIXED_WIDTH, 4), INTERVAL_DAY_TIME(Layout.FIXED_WIDTH, 8),
        INTERVAL_MONTH_DAY_NANO(Layout.FIXED_WIDTH, 16),
        BINARY(Layout.VARIABLE, 0), UTF8(Layout.VARIABLE, 0), LARGE_BINARY(Layout.LARGE_VARIABLE, 0),
        LARGE_UTF8(Layout.LARGE_VARIABLE, 0), BINARY_VIEW(Layout.VIEW, 16), UTF8_VIEW(Layout.VIEW, 16),
        FIXED_SIZE_BINARY(Layout.FIXED_SIZE_BINARY, 0),
        LIST(Layout.LIST, 0), LARGE_LIST(Layout.LARGE_LIST, 0), LIST_VIEW(Layout.LIST_VIEW, 0),
        LARGE_LIST_VIEW(Layout.LARGE_LIST_VIEW, 0), FIXED_SIZE_LIST(Layout.FIXED_SIZE_LIST, 0),
        STRUCT(Layout.STRUCT, 0), MAP(Layout.LIST, 0), SPARSE_UNION(Layout.SPARSE_UNION, 0),
        DENSE_UNION(Layout.DENSE_UNION, 0), RUN_END_ENCODED(Layout.RUN_END_ENCODED, 0);

        private final Layout layout;
        private final int byteWidth;

        TypeId(Layout layout, int byteWidth) {
            this.layout = layout;
            this.byteWidth = byteWidth;
        }

        public Layout layout() {
            return layout;
        }

        /** Element width in bytes of fixed-width types (16 for a view), 0 otherwise. */
        public int byteWidth() {
            return byteWidth;
        }

        /** {@code true} for the eight integer types (the only legal dictionary index and run-end types). */
        public boolean isInteger() {
            return ordinal() >= INT8.ordinal() && ordinal() <= UINT64.ordinal();
        }
    }

    /** The layout family of this type. */
    public Layout layout() {
        return id.layout();
    }

    /**
     * Bytes per element of the data buffer for fixed-width types and fixed-size binary; 0 for other types.
     */
    public int elementByteWidth() {
        return id == TypeId.FIXED_SIZE_BINARY ? fixedSize : id.byteWidth();
    }

    @Override
    public String toString() {
        return id + "(" + format + ")";
    }
}
