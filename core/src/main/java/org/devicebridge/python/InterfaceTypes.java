package org.devicebridge.python;

import java.nio.ByteOrder;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.DType;

/**
 * The one home of the mapping between the array interfaces' {@code typestr} (NumPy's
 * {@code <endian><kind><itemsize>}, e.g. {@code "<f4"}, {@code "|b1"}) and DLPack {@link DType}s. Stateless.
 */
final class InterfaceTypes {
    private InterfaceTypes() {}

    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    /**
     * The DLPack type a {@code typestr} names.
     *
     * @throws ValidationException {@code FORMAT} for a malformed typestr
     * @throws UnsupportedFeatureException for a well-formed one this library cannot hold (non-native byte
     *         order, datetimes, objects, strings, void/structured, bit fields, long double, ...)
     */
    static DType dtypeOf(String typestr, String path) {
        if (typestr.length() >= 2 && "<>|=".indexOf(typestr.charAt(0)) >= 0
                && "tmMOSUV".indexOf(typestr.charAt(1)) >= 0) {
            throw new UnsupportedFeatureException(path, "typestr '" + typestr + "' (" + kindName(typestr.charAt(1))
                    + ") has no DLPack type this library supports");
        }
        if (typestr.length() < 3) {
            throw malformed(typestr, path);
        }
        char endian = typestr.charAt(0);
        char kind = typestr.charAt(1);
        int size;
        try {
            size = Integer.parseInt(typestr.substring(2));
        } catch (NumberFormatException e) {
            throw malformed(typestr, path);
        }
        if ("<>|=".indexOf(endian) < 0 || size <= 0 || !Character.isDigit(typestr.charAt(2))) {
            throw malformed(typestr, path);
        }
        boolean foreignOrder = (endian == '>' && LITTLE) || (endian == '<' && !LITTLE);
        if (foreignOrder && size > 1) {
            throw new UnsupportedFeatureException(path, "typestr '" + typestr + "' is in "
                    + (endian == '>' ? "big" : "little") + "-endian byte order, not this machine's; swap it first"
                    + " (e.g. numpy's astype('=" + kind + size + "'))");
        }
        DType t = switch (kind) {
            case 'b' -> size == 1 ? DType.BOOL : null;
            case 'i' -> switch (size) {
                case 1 -> DType.INT8;
                case 2 -> DType.INT16;
                case 4 -> DType.INT32;
                case 8 -> DType.INT64;
                default -> null;
            };
            case 'u' -> switch (size) {
                case 1 -> DType.UINT8;
                case 2 -> DType.UINT16;
                case 4 -> DType.UINT32;
                case 8 -> DType.UINT64;
                default -> null;
            };
            case 'f' -> switch (size) {
                case 2 -> DType.FLOAT16;
                case 4 -> DType.FLOAT32;
                case 8 -> DType.FLOAT64;
                default -> null;
            };
            case 'c' -> switch (size) {
                case 8 -> DType.COMPLEX64;
                case 16 -> DType.COMPLEX128;
                default -> null;
            };
            case 't', 'm', 'M', 'O', 'S', 'U', 'V' -> null;
            default -> throw malformed(typestr, path);
        };
        if (t == null) {
            throw new UnsupportedFeatureException(path, "typestr '" + typestr + "' ("
                    + kindName(kind) + " of " + size + " bytes) has no DLPack type this library supports");
        }
        return t;
    }

    /**
     * The {@code typestr} of a DLPack type, in this machine's byte order.
     *
     * @throws UnsupportedFeatureException for a type the array interfaces cannot name (bfloat16, float8,
     *         sub-byte, complex32, lanes other than 1)
     */
    static String typestrOf(DType t, String path) {
        char kind = switch (t.code()) {
            case DType.KDL_INT -> 'i';
            case DType.KDL_UINT -> 'u';
            case DType.KDL_FLOAT -> 'f';
            case DType.KDL_COMPLEX -> 'c';
            case DType.KDL_BOOL -> 'b';
            default -> 0;
        };
        boolean ok = kind != 0 && t.lanes() == 1 && t.bits() % 8 == 0 && t.bits() > 0
                && !(kind == 'c' && t.bits() < 64) && !(kind == 'f' && t.bits() > 64) && !(kind == 'b' && t.bits() != 8);
        if (!ok) {
            throw new UnsupportedFeatureException(path, "DLPack type " + t
                    + " has no typestr in the array interfaces (they name bool, int, uint, float16/32/64, complex64/128)");
        }
        int size = t.bits() / 8;
        char endian = size == 1 ? '|' : (LITTLE ? '<' : '>');
        return "" + endian + kind + size;
    }

    private static String kindName(char kind) {
        return switch (kind) {
            case 'b' -> "boolean";
            case 'i' -> "signed integer";
            case 'u' -> "unsigned integer";
            case 'f' -> "floating point";
            case 'c' -> "complex";
            case 't' -> "bit field";
            case 'm' -> "timedelta";
            case 'M' -> "datetime";
            case 'O' -> "Python object";
            case 'S' -> "byte string";
            case 'U' -> "unicode string";
            default -> "void/structured";
        };
    }

    private static ValidationException malformed(String typestr, String path) {
        return new ValidationException(Category.FORMAT, path, "expected a typestr of the form <endian><kind><bytes>"
                + " (e.g. '<f4') but found '" + typestr + "'");
    }
}
