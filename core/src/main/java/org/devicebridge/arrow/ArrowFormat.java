package org.devicebridge.arrow;

import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowDataType.TypeId;

/** Parses C Data Interface format strings (the table in CDataInterface.rst) with precise errors. */
final class ArrowFormat {
    private ArrowFormat() {}

    /**
     * Parses {@code format}; {@code path} names the schema field ({@code children[1].format}) for errors.
     *
     * @throws ValidationException {@link Category#FORMAT} for an unknown or malformed format string
     */
    static ArrowDataType parse(String format, String path) {
        if (format.isEmpty()) {
            throw error(path, format, "expected a format string but found an empty one");
        }
        switch (format) {
            case "n": return simple(TypeId.NULL, format);
            case "b": return simple(TypeId.BOOL, format);
            case "c": return simple(TypeId.INT8, format);
            case "C": return simple(TypeId.UINT8, format);
            case "s": return simple(TypeId.INT16, format);
            case "S": return simple(TypeId.UINT16, format);
            case "i": return simple(TypeId.INT32, format);
            case "I": return simple(TypeId.UINT32, format);
            case "l": return simple(TypeId.INT64, format);
            case "L": return simple(TypeId.UINT64, format);
            case "e": return simple(TypeId.FLOAT16, format);
            case "f": return simple(TypeId.FLOAT32, format);
            case "g": return simple(TypeId.FLOAT64, format);
            case "z": return simple(TypeId.BINARY, format);
            case "Z": return simple(TypeId.LARGE_BINARY, format);
            case "vz": return simple(TypeId.BINARY_VIEW, format);
            case "u": return simple(TypeId.UTF8, format);
            case "U": return simple(TypeId.LARGE_UTF8, format);
            case "vu": return simple(TypeId.UTF8_VIEW, format);
            case "tdD": return simple(TypeId.DATE32, format);
            case "tdm": return simple(TypeId.DATE64, format);
            case "tts": return timed(TypeId.TIME32, format, ChronoUnit.SECONDS);
            case "ttm": return timed(TypeId.TIME32, format, ChronoUnit.MILLIS);
            case "ttu": return timed(TypeId.TIME64, format, ChronoUnit.MICROS);
            case "ttn": return timed(TypeId.TIME64, format, ChronoUnit.NANOS);
            case "tDs": return timed(TypeId.DURATION, format, ChronoUnit.SECONDS);
            case "tDm": return timed(TypeId.DURATION, format, ChronoUnit.MILLIS);
            case "tDu": return timed(TypeId.DURATION, format, ChronoUnit.MICROS);
            case "tDn": return timed(TypeId.DURATION, format, ChronoUnit.NANOS);
            case "tiM": return simple(TypeId.INTERVAL_MONTHS, format);
            case "tiD": return simple(TypeId.INTERVAL_DAY_TIME, format);
            case "tin": return simple(TypeId.INTERVAL_MONTH_DAY_NANO, format);
            case "+l": return simple(TypeId.LIST, format);
            case "+L": return simple(TypeId.LARGE_LIST, format);
            case "+vl": return simple(TypeId.LIST_VIEW, format);
            case "+vL": return simple(TypeId.LARGE_LIST_VIEW, format);
            case "+s": return simple(TypeId.STRUCT, format);
            case "+m": return simple(TypeId.MAP, format);
            case "+r": return simple(TypeId.RUN_END_ENCODED, format);
            default: break;
        }
        if (format.startsWith("ts") && format.length() >= 4 && format.charAt(3) == ':') {
            ChronoUnit unit = unit(format.charAt(2), format, path);
            return new ArrowDataType(TypeId.TIMESTAMP, format, 0, 0, 0, unit, format.substring(4), List.of());
        }
        if (format.startsWith("d:")) {
            String[] parts = format.substring(2).split(",", -1);
            if (parts.length < 2 || parts.length > 3) {
                throw error(path, format, "expected 'd:precision,scale[,bitWidth]' but found '" + format + "'");
            }
            int precision = number(parts[0], "decimal precision", format, path);
            int scale = signedNumber(parts[1], "decimal scale", format, path);
            int bits = parts.length == 3 ? number(parts[2], "decimal bit width", format, path) : 128;
            TypeId id = switch (bits) {
                case 32 -> TypeId.DECIMAL32;
                case 64 -> TypeId.DECIMAL64;
                case 128 -> TypeId.DECIMAL128;
                case 256 -> TypeId.DECIMAL256;
                default -> throw error(path, format, "expected a decimal bit width of 32, 64, 128 or 256 but found " + bits);
            };
            int maxPrecision = switch (id) {
                case DECIMAL32 -> 9;
                case DECIMAL64 -> 18;
                case DECIMAL128 -> 38;
                default -> 76;
            };
            if (precision < 1 || precision > maxPrecision) {
                throw error(path, format, "expected a decimal" + bits + " precision in [1, " + maxPrecision
                        + "] but found " + precision);
            }
            return new ArrowDataType(id, format, 0, precision, scale, null, null, List.of());
        }
        if (format.startsWith("w:")) {
            int width = number(format.substring(2), "fixed-size binary byte width", format, path);
            return new ArrowDataType(TypeId.FIXED_SIZE_BINARY, format, width, 0, 0, null, null, List.of());
        }
        if (format.startsWith("+w:")) {
            int size = number(format.substring(3), "fixed-size list size", format, path);
            return new ArrowDataType(TypeId.FIXED_SIZE_LIST, format, size, 0, 0, null, null, List.of());
        }
        if (format.startsWith("+ud:") || format.startsWith("+us:")) {
            TypeId id = format.charAt(2) == 'd' ? TypeId.DENSE_UNION : TypeId.SPARSE_UNION;
            String list = format.substring(4);
            List<Integer> ids = new ArrayList<>();
            if (!list.isEmpty()) {
                for (String p : list.split(",", -1)) {
                    int typeId = number(p, "union type id", format, path);
                    if (typeId > 127) {
                        throw error(path, format, "expected union type ids in [0, 127] but found " + typeId);
                    }
                    if (ids.contains(typeId)) {
                        throw error(path, format, "expected distinct union type ids but found " + typeId + " twice");
                    }
                    ids.add(typeId);
                }
            }
            return new ArrowDataType(id, format, 0, 0, 0, null, null, ids);
        }
        throw error(path, format, "expected a known format string but found '" + format + "'");
    }

    private static ArrowDataType simple(TypeId id, String format) {
        return new ArrowDataType(id, format, 0, 0, 0, null, null, List.of());
    }

    private static ArrowDataType timed(TypeId id, String format, ChronoUnit unit) {
        return new ArrowDataType(id, format, 0, 0, 0, unit, null, List.of());
    }

    private static ChronoUnit unit(char c, String format, String path) {
        return switch (c) {
            case 's' -> ChronoUnit.SECONDS;
            case 'm' -> ChronoUnit.MILLIS;
            case 'u' -> ChronoUnit.MICROS;
            case 'n' -> ChronoUnit.NANOS;
            default -> throw error(path, format, "expected a time unit (s, m, u, n) but found '" + c + "'");
        };
    }

    /** A non-negative decimal number without sign or leading '+', as an int. */
    private static int number(String s, String what, String format, String path) {
        if (s.isEmpty() || s.length() > 10) {
            throw error(path, format, "expected a " + what + " but found '" + s + "'");
        }
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw error(path, format, "expected a " + what + " but found '" + s + "'");
            }
            v = v * 10 + (c - '0');
        }
        if (v > Integer.MAX_VALUE) {
            throw error(path, format, "expected a " + what + " of at most " + Integer.MAX_VALUE + " but found " + s);
        }
        return (int) v;
    }

    private static int signedNumber(String s, String what, String format, String path) {
        if (s.startsWith("-")) {
            return -number(s.substring(1), what, format, path);
        }
        return number(s, what, format, path);
    }

    private static ValidationException error(String path, String format, String message) {
        String p = path.isEmpty() ? "format" : path + ".format";
        return new ValidationException(Category.FORMAT, p, message);
    }
}
