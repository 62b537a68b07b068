package org.devicebridge.arrow;

import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Objects;
import org.devicebridge.InvalidArgumentException;

/**
 * A parsed Arrow C Data Interface format string, independent of Arrow Java. Parameters that do not apply
 * to a type are {@code 0} / {@code null} / empty.
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 *
 * @param id the type
 * @param format the format string it was parsed from
 * @param fixedSize byte width of fixed-size binary, list size of fixed-size list, otherwise 0
 * @param precision decimal precision, otherwise 0
 * @param scale decimal scale, otherwise 0
 * @param unit time unit of time, timestamp and duration types ({@link ChronoUnit#SECONDS}, {@link ChronoUnit#MILLIS},
 *     {@link ChronoUnit#MICROS} or {@link ChronoUnit#NANOS}), otherwise {@code null}
 * @param timezone timestamp time zone; {@code ""} for a timestamp without one; {@code null} for other types
 * @param unionTypeIds the declared type ids of a union, in child order; empty for other types
 */
public record ArrowDataType(TypeId id, String format, int fixedSize, int precision, int scale, ChronoUnit unit,
                            String timezone, List<Integer> unionTypeIds) {

    /**
     * Checks the components and copies {@code unionTypeIds}.
     *
     * @throws NullPointerException if {@code id} or {@code format} is {@code null}
     * @throws InvalidArgumentException if {@code unit} is not {@code null} and not one of the four units Arrow has
     */
    public ArrowDataType {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(format, "format");
        if (unit != null && unit != ChronoUnit.SECONDS && unit != ChronoUnit.MILLIS && unit != ChronoUnit.MICROS
                && unit != ChronoUnit.NANOS) {
            throw new InvalidArgumentException("unit", "expected SECONDS, MILLIS, MICROS or NANOS but found " + unit);
        }
        unionTypeIds = List.copyOf(unionTypeIds);
    }

    /** Physical layout family, which decides the buffers and children a node has. */
    public enum Layout {
        /** No buffers (null type). */
        NULL,
        /** A validity bitmap and a bit-packed data buffer. */
        BOOL,
        /** A validity bitmap and a data buffer of fixed-width elements. */
        FIXED_WIDTH,
        /** Validity, 32-bit offsets, data. */
        VARIABLE,
        /** Validity, 64-bit offsets, data. */
        LARGE_VARIABLE,
        /** Validity, 16-byte views, variadic data buffers and their sizes. */
        VIEW,
        /** Validity and a data buffer of fixed-size values. */
        FIXED_SIZE_BINARY,
        /** Validity, 32-bit offsets, one child. */
        LIST,
        /** Validity, 64-bit offsets, one child. */
        LARGE_LIST,
        /** Validity, 32-bit offsets and sizes, one child. */
        LIST_VIEW,
        /** Validity, 64-bit offsets and sizes, one child. */
        LARGE_LIST_VIEW,
        /** Validity, one child of a fixed number of values per element. */
        FIXED_SIZE_LIST,
        /** Validity and one child per field. */
        STRUCT,
        /** Type ids, one child per member, each as long as the union. */
        SPARSE_UNION,
        /** Type ids, 32-bit offsets, one child per member. */
        DENSE_UNION,
        /** No buffers; a run-ends child and a values child. */
        RUN_END_ENCODED;

        /**
         * Bytes per offset (and per size, for list views) of the layouts that have them: 4 for
         * {@link #VARIABLE}, {@link #LIST} and {@link #LIST_VIEW}, 8 for their large variants; 0 for layouts
         * without offsets. The one home of this rule.
         *
         * @return the offset width in bytes, or 0
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
        /** Null ({@code n}): no buffers. */
        NULL(Layout.NULL, 0),
        /** Boolean ({@code b}), bit-packed. */
        BOOL(Layout.BOOL, 0),
        /** Signed 8-bit integer ({@code c}). */
        INT8(Layout.FIXED_WIDTH, 1),
        /** Unsigned 8-bit integer ({@code C}). */
        UINT8(Layout.FIXED_WIDTH, 1),
        /** Signed 16-bit integer ({@code s}). */
        INT16(Layout.FIXED_WIDTH, 2),
        /** Unsigned 16-bit integer ({@code S}). */
        UINT16(Layout.FIXED_WIDTH, 2),
        /** Signed 32-bit integer ({@code i}). */
        INT32(Layout.FIXED_WIDTH, 4),
        /** Unsigned 32-bit integer ({@code I}). */
        UINT32(Layout.FIXED_WIDTH, 4),
        /** Signed 64-bit integer ({@code l}). */
        INT64(Layout.FIXED_WIDTH, 8),
        /** Unsigned 64-bit integer ({@code L}). */
        UINT64(Layout.FIXED_WIDTH, 8),
        /** IEEE half-precision float ({@code e}). */
        FLOAT16(Layout.FIXED_WIDTH, 2),
        /** IEEE single-precision float ({@code f}). */
        FLOAT32(Layout.FIXED_WIDTH, 4),
        /** IEEE double-precision float ({@code g}). */
        FLOAT64(Layout.FIXED_WIDTH, 8),
        /** 32-bit decimal ({@code d:P,S,32}). */
        DECIMAL32(Layout.FIXED_WIDTH, 4),
        /** 64-bit decimal ({@code d:P,S,64}). */
        DECIMAL64(Layout.FIXED_WIDTH, 8),
        /** 128-bit decimal ({@code d:P,S}). */
        DECIMAL128(Layout.FIXED_WIDTH, 16),
        /** 256-bit decimal ({@code d:P,S,256}). */
        DECIMAL256(Layout.FIXED_WIDTH, 32),
        /** Days since the epoch, 32-bit ({@code tdD}). */
        DATE32(Layout.FIXED_WIDTH, 4),
        /** Milliseconds since the epoch, 64-bit ({@code tdm}). */
        DATE64(Layout.FIXED_WIDTH, 8),
        /** Time of day in seconds or milliseconds, 32-bit ({@code tts}, {@code ttm}). */
        TIME32(Layout.FIXED_WIDTH, 4),
        /** Time of day in microseconds or nanoseconds, 64-bit ({@code ttu}, {@code ttn}). */
        TIME64(Layout.FIXED_WIDTH, 8),
        /** Timestamp with a unit and an optional time zone ({@code tss:}...). */
        TIMESTAMP(Layout.FIXED_WIDTH, 8),
        /** Duration with a unit ({@code tDs}...). */
        DURATION(Layout.FIXED_WIDTH, 8),
        /** Interval in months ({@code tiM}). */
        INTERVAL_MONTHS(Layout.FIXED_WIDTH, 4),
        /** Interval in days and milliseconds ({@code tiD}). */
        INTERVAL_DAY_TIME(Layout.FIXED_WIDTH, 8),
        /** Interval in months, days and nanoseconds ({@code tin}). */
        INTERVAL_MONTH_DAY_NANO(Layout.FIXED_WIDTH, 16),
        /** Variable-size binary, 32-bit offsets ({@code z}). */
        BINARY(Layout.VARIABLE, 0),
        /** UTF-8 string, 32-bit offsets ({@code u}). */
        UTF8(Layout.VARIABLE, 0),
        /** Variable-size binary, 64-bit offsets ({@code Z}). */
        LARGE_BINARY(Layout.LARGE_VARIABLE, 0),
        /** UTF-8 string, 64-bit offsets ({@code U}). */
        LARGE_UTF8(Layout.LARGE_VARIABLE, 0),
        /** Binary view ({@code vz}). */
        BINARY_VIEW(Layout.VIEW, 16),
        /** UTF-8 string view ({@code vu}). */
        UTF8_VIEW(Layout.VIEW, 16),
        /** Fixed-size binary ({@code w:N}). */
        FIXED_SIZE_BINARY(Layout.FIXED_SIZE_BINARY, 0),
        /** List, 32-bit offsets ({@code +l}). */
        LIST(Layout.LIST, 0),
        /** List, 64-bit offsets ({@code +L}). */
        LARGE_LIST(Layout.LARGE_LIST, 0),
        /** List view, 32-bit offsets and sizes ({@code +vl}). */
        LIST_VIEW(Layout.LIST_VIEW, 0),
        /** List view, 64-bit offsets and sizes ({@code +vL}). */
        LARGE_LIST_VIEW(Layout.LARGE_LIST_VIEW, 0),
        /** Fixed-size list ({@code +w:N}). */
        FIXED_SIZE_LIST(Layout.FIXED_SIZE_LIST, 0),
        /** Struct ({@code +s}). */
        STRUCT(Layout.STRUCT, 0),
        /** Map ({@code +m}): a list of key-value structs. */
        MAP(Layout.LIST, 0),
        /** Sparse union ({@code +us:...}). */
        SPARSE_UNION(Layout.SPARSE_UNION, 0),
        /** Dense union ({@code +ud:...}). */
        DENSE_UNION(Layout.DENSE_UNION, 0),
        /** Run-end encoded ({@code +r}). */
        RUN_END_ENCODED(Layout.RUN_END_ENCODED, 0);

        private final Layout layout;
        private final int byteWidth;

        TypeId(Layout layout, int byteWidth) {
            this.layout = layout;
            this.byteWidth = byteWidth;
        }

        /** {@return the layout family of this type} */
        public Layout layout() {
            return layout;
        }

        /** {@return the element width in bytes of fixed-width types (16 for a view), 0 otherwise} */
        public int byteWidth() {
            return byteWidth;
        }

        /** {@return {@code true} for the eight integer types (the only legal dictionary index and run-end types)} */
        public boolean isInteger() {
            return ordinal() >= INT8.ordinal() && ordinal() <= UINT64.ordinal();
        }
    }

    /** {@return the layout family of this type} */
    public Layout layout() {
        return id.layout();
    }

    /**
     * {@return bytes per element of the data buffer for fixed-width types and fixed-size binary; 0 for other types}
     */
    public int elementByteWidth() {
        return id == TypeId.FIXED_SIZE_BINARY ? fixedSize : id.byteWidth();
    }

    @Override
    public String toString() {
        return id + "(" + format + ")";
    }
}
