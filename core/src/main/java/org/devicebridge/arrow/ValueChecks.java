package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import org.devicebridge.internal.Bitmaps;

/**
 * The FULL checks of fixed-width values that Arrow C++'s {@code ValidateFull} makes: decimals fit their
 * precision, date64 values are whole days, time32 / time64 values lie within one day. Null slots are
 * skipped, as there. Values are read through unaligned layouts in native byte order (Arrow's, on the
 * little-endian machines this library runs on); decimals of 128 and 256 bits as little-endian 64-bit limbs.
 */
final class ValueChecks {
    private static final long DAY_SECONDS = 86_400L;
    private static final long DAY_MILLIS = DAY_SECONDS * 1_000L;
    private static final long DAY_MICROS = DAY_MILLIS * 1_000L;
    private static final long DAY_NANOS = DAY_MICROS * 1_000L;
    /** 10^p for p in [0, 76] as four unsigned 64-bit limbs, least significant first. */
    private static final long[][] POW10 = new long[77][4];

    static {
        BigInteger mask = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
        for (int p = 0; p < POW10.length; p++) {
            BigInteger v = BigInteger.TEN.pow(p);
            for (int limb = 0; limb < 4; limb++) {
                POW10[p][limb] = v.shiftRight(64 * limb).and(mask).longValue();
            }
        }
    }

    private ValueChecks() {}

    /** Whether {@code type} has values that FULL checks here. */
    static boolean applies(ArrowDataType type) {
        return switch (type.id()) {
            case DECIMAL32, DECIMAL64, DECIMAL128, DECIMAL256, DATE64, TIME32, TIME64 -> true;
            default -> false;
        };
    }

    /**
     * Checks the non-null values [offset, offset + length) of {@code values} (sized for them) against
     * {@code type}; {@code validity} is the bitmap or {@code null} when every slot is valid. The caller names
     * the buffer in the error it throws (the path is built only then).
     *
     * @return {@code null} if every value is in range, else what is wrong with the first one out of range
     *     ("value 3: expected ...")
     */
    static String firstProblem(ArrowDataType type, MemorySegment values, MemorySegment validity, long offset,
                               long length) {
        long[] limbs = new long[4];
        for (long i = offset; i < offset + length; i++) {
            if (validity != null && !Bitmaps.bit(validity, i)) {
                continue;
            }
            String problem = switch (type.id()) {
                case DECIMAL32 -> fitsLong(values.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i), type);
                case DECIMAL64 -> fitsLong(values.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i), type);
                case DECIMAL128 -> fitsLimbs(values, i, 2, limbs, type);
                case DECIMAL256 -> fitsLimbs(values, i, 4, limbs, type);
                case DATE64 -> {
                    long v = values.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                    yield v % DAY_MILLIS == 0 ? null : "expected a whole number of days (a multiple of " + DAY_MILLIS
                            + " ms) but found " + v;
                }
                case TIME32 -> within(values.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i), type);
                case TIME64 -> within(values.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i), type);
                default -> null;
            };
            if (problem != null) {
                return "value " + (i - offset) + ": " + problem;
            }
        }
        return null;
    }

    /** Value {@code i} of {@code values}, of integer {@code type} (an index type), unsigned types zero-extended. */
    static long integerAt(MemorySegment values, long i, ArrowDataType type) {
        return switch (type.id()) {
            case INT8 -> values.get(ValueLayout.JAVA_BYTE, i);
            case UINT8 -> Byte.toUnsignedLong(values.get(ValueLayout.JAVA_BYTE, i));
            case INT16 -> values.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i);
            case UINT16 -> Short.toUnsignedLong(values.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i));
            case INT32 -> values.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
            case UINT32 -> Integer.toUnsignedLong(values.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i));
            default -> values.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
        };
    }

    private static String within(long v, ArrowDataType type) {
        long day = switch (type.unit()) {
            case SECONDS -> DAY_SECONDS;
            case MILLIS -> DAY_MILLIS;
            case MICROS -> DAY_MICROS;
            case NANOS -> DAY_NANOS;
            default -> throw new IllegalStateException("time unit " + type.unit());
        };
        return v >= 0 && v < day ? null : "expected a " + type + " time of day in [0, " + day + ") but found " + v;
    }

    /** Decimal32 and decimal64: |v| < 10^precision (precision at most 18, so 10^p fits a long). */
    private static String fitsLong(long v, ArrowDataType type) {
        long limit = POW10[type.precision()][0];
        return v > -limit && v < limit ? null : tooWide(BigInteger.valueOf(v), type);
    }

    /** Decimal128 and decimal256 as {@code count} little-endian limbs: |v| < 10^precision. */
    private static String fitsLimbs(MemorySegment values, long i, int count, long[] limbs, ArrowDataType type) {
        long base = i * count * 8L;
        for (int k = 0; k < count; k++) {
            limbs[k] = values.get(ValueLayout.JAVA_LONG_UNALIGNED, base + 8L * k);
        }
        boolean negative = limbs[count - 1] < 0;
        if (negative) { // two's complement negation over the limbs
            long carry = 1;
            for (int k = 0; k < count; k++) {
                long inverted = ~limbs[k];
                limbs[k] = inverted + carry;
                carry = carry != 0 && limbs[k] == 0 ? 1 : 0;
            }
            if (limbs[count - 1] < 0) { // the most negative value: its magnitude fits no precision
                return tooWide(value(values, base, count), type);
            }
        }
        long[] limit = POW10[type.precision()];
        for (int k = count - 1; k >= 0; k--) {
            int c = Long.compareUnsigned(limbs[k], limit[k]);
            if (c != 0) {
                return c < 0 ? null : tooWide(value(values, base, count), type);
            }
        }
        return tooWide(value(values, base, count), type); // equal to 10^precision
    }

    private static BigInteger value(MemorySegment values, long base, int count) {
        byte[] big = new byte[count * 8];
        for (int b = 0; b < big.length; b++) {
            big[big.length - 1 - b] = values.get(ValueLayout.JAVA_BYTE, base + b);
        }
        return new BigInteger(big);
    }

    private static String tooWide(BigInteger unscaled, ArrowDataType type) {
        return "expected an unscaled value of at most " + type.precision() + " digits (the precision of " + type
                + ") but found " + unscaled;
    }
}
