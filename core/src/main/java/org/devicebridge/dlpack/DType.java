package org.devicebridge.dlpack;

import java.util.Locale;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * A DLPack element type, {@code DLDataType}: a type code, a width in bits and a number of lanes.
 *
 * {@snippet lang=c :
 * typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
 * }
 *
 * <p>Any value that fits the C fields can be represented; {@link #check(String)} says whether this library
 * can lay it out in memory (every code of DLPack 1.3 is either accepted or rejected by name).
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 *
 * @param code  the {@code DLDataTypeCode} (0..255)
 * @param bits  bits per lane (0..255)
 * @param lanes lanes per element (0..65535); this library supports 1 only
 */
public record DType(int code, int bits, int lanes) {
    /**
     * {@code DLDataTypeCode} values of DLPack 1.3, the header's {@code kDL*} constants (written here so that
     * this type loads without native access; {@code HeaderConstantsTest} pins each to the generated header).
     */
    public static final int KDL_INT = 0;
    public static final int KDL_UINT = 1;
    public static final int KDL_FLOAT = 2;
    public static final int KDL_OPAQUE_HANDLE = 3;
    public static final int KDL_BFLOAT = 4;
    public static final int KDL_COMPLEX = 5;
    public static final int KDL_BOOL = 6;
    public static final int KDL_FLOAT8_E3M4 = 7;
    public static final int KDL_FLOAT8_E4M3 = 8;
    public static final int KDL_FLOAT8_E4M3B11FNUZ = 9;
    public static final int KDL_FLOAT8_E4M3FN = 10;
    public static final int KDL_FLOAT8_E4M3FNUZ = 11;
    public static final int KDL_FLOAT8_E5M2 = 12;
    public static final int KDL_FLOAT8_E5M2FNUZ = 13;
    public static final int KDL_FLOAT8_E8M0FNU = 14;
    public static final int KDL_FLOAT6_E2M3FN = 15;
    public static final int KDL_FLOAT6_E3M2FN = 16;
    public static final int KDL_FLOAT4_E2M1FN = 17;

    private static final String[] CODE_NAMES = {"int", "uint", "float", "opaque_handle", "bfloat", "complex", "bool",
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
        "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"};

    public static final DType INT8 = new DType(KDL_INT, 8, 1);
    public static final DType INT16 = new DType(KDL_INT, 16, 1);
    public static final DType INT32 = new DType(KDL_INT, 32, 1);
    public static final DType INT64 = new DType(KDL_INT, 64, 1);
    public static final DType UINT8 = new DType(KDL_UINT, 8, 1);
    public static final DType UINT16 = new DType(KDL_UINT, 16, 1);
    public static final DType UINT32 = new DType(KDL_UINT, 32, 1);
    public static final DType UINT64 = new DType(KDL_UINT, 64, 1);
    public static final DType FLOAT16 = new DType(KDL_FLOAT, 16, 1);
    public static final DType FLOAT32 = new DType(KDL_FLOAT, 32, 1);
    public static final DType FLOAT64 = new DType(KDL_FLOAT, 64, 1);
    public static final DType BFLOAT16 = new DType(KDL_BFLOAT, 16, 1);
    public static final DType COMPLEX32 = new DType(KDL_COMPLEX, 32, 1);
    public static final DType COMPLEX64 = new DType(KDL_COMPLEX, 64, 1);
    public static final DType COMPLEX128 = new DType(KDL_COMPLEX, 128, 1);
    /** One byte per boolean (PyTorch's and NumPy's layout); bit-packed booleans are not DLPack-addressable. */
    public static final DType BOOL = new DType(KDL_BOOL, 8, 1);
    public static final DType FLOAT8_E3M4 = new DType(KDL_FLOAT8_E3M4, 8, 1);
    public static final DType FLOAT8_E4M3 = new DType(KDL_FLOAT8_E4M3, 8, 1);
    public static final DType FLOAT8_E4M3B11FNUZ = new DType(KDL_FLOAT8_E4M3B11FNUZ, 8, 1);
    public static final DType FLOAT8_E4M3FN = new DType(KDL_FLOAT8_E4M3FN, 8, 1);
    public static final DType FLOAT8_E4M3FNUZ = new DType(KDL_FLOAT8_E4M3FNUZ, 8, 1);
    public static final DType FLOAT8_E5M2 = new DType(KDL_FLOAT8_E5M2, 8, 1);
    public static final DType FLOAT8_E5M2FNUZ = new DType(KDL_FLOAT8_E5M2FNUZ, 8, 1);
    public static final DType FLOAT8_E8M0FNU = new DType(KDL_FLOAT8_E8M0FNU, 8, 1);
    public static final DType FLOAT6_E2M3FN = new DType(KDL_FLOAT6_E2M3FN, 6, 1);
    public static final DType FLOAT6_E3M2FN = new DType(KDL_FLOAT6_E3M2FN, 6, 1);
    public static final DType FLOAT4_E2M1FN = new DType(KDL_FLOAT4_E2M1FN, 4, 1);

    /** Every type this library lays out, one per accepted (code, bits) pair. */
    public static final java.util.List<DType> SUPPORTED = java.util.List.of(INT8, INT16, INT32, INT64, UINT8, UINT16,
            UINT32, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, COMPLEX32, COMPLEX64, COMPLEX128, BOOL, FLOAT8_E3M4,
            FLOAT8_E4M3, FLOAT8_E4M3B11FNUZ, FLOAT8_E4M3FN, FLOAT8_E4M3FNUZ, FLOAT8_E5M2, FLOAT8_E5M2FNUZ,
            FLOAT8_E8M0FNU, FLOAT6_E2M3FN, FLOAT6_E3M2FN, FLOAT4_E2M1FN);

    /** The {@link #SUPPORTED} types by {@code code * 256 + bits}, for {@link #of(int, int, int, String)}. */
    private static final DType[] BY_CODE_AND_BITS = new DType[CODE_NAMES.length * 256];

    static {
        for (DType t : SUPPORTED) {
            BY_CODE_AND_BITS[t.code * 256 + t.bits] = t;
        }
    }

    /**
     * The type a struct describes ({@code code}, {@code bits}, {@code lanes} as read from it), checked as
     * {@link #check(String)} does; a supported type is the shared constant.
     */
    static DType of(int code, int bits, int lanes, String path) {
        if (lanes == 1 && code >= 0 && code < CODE_NAMES.length && bits >= 0 && bits < 256) {
            DType t = BY_CODE_AND_BITS[code * 256 + bits];
            if (t != null) {
                return t; // every SUPPORTED type passes check()
            }
        }
        DType t = new DType(code, bits, lanes);
        t.check(path);
        return t;
    }

    /**
     * Checks that each field fits its C type.
     *
     * @throws ValidationException {@code FORMAT} if a field does not fit its C type
     */
    public DType {
        if (code < 0 || code > 0xFF || bits < 0 || bits > 0xFF || lanes < 0 || lanes > 0xFFFF) {
            throw new ValidationException(Category.FORMAT, "dtype", String.format(Locale.ROOT,
                    "code %d, bits %d, lanes %d do not fit uint8/uint8/uint16", code, bits, lanes));
        }
    }

    /** {@return {@code true} for widths below one byte (float6, float4), which may be packed or padded to a byte each} */
    public boolean isSubByte() {
        return bits < 8;
    }

    /**
     * Bytes one element occupies when it is addressed by strides: {@code bits / 8} for byte-multiple widths,
     * 1 for a sub-byte type padded to a byte. Call {@link #check(String)} first.
     *
     * @return the element size in bytes
     */
    public long byteSize() {
        return isSubByte() ? 1 : (long) bits / 8 * lanes;
    }

    /**
     * Throws unless this library can lay out the type: lanes 1, a DLPack 1.3 code, and a width that code
     * defines. {@code path} prefixes the message (e.g. {@code dl_tensor.dtype}).
     *
     * @param path where the dtype sits, for the message
     * @throws ValidationException {@code FORMAT} for an unknown code, zero lanes or a width the code does not define
     * @throws UnsupportedFeatureException for vector lanes, opaque handles and bit-packed booleans
     */
    public void check(String path) {
        if (lanes == 0) {
            throw new ValidationException(Category.FORMAT, path + ".lanes", "expected at least 1 lane but found 0");
        }
        if (code >= CODE_NAMES.length) {
            throw new ValidationException(Category.FORMAT, path + ".code", "unknown DLDataTypeCode " + code);
        }
        if (lanes != 1) {
            throw new UnsupportedFeatureException(path + ".lanes", "vector types (lanes = " + lanes
                    + ") are not supported; expected 1 lane");
        }
        if (code == KDL_OPAQUE_HANDLE) {
            throw new UnsupportedFeatureException(path + ".code", "kDLOpaqueHandle has no defined memory layout");
        }
        if (code == KDL_BOOL && bits == 1) {
            throw new UnsupportedFeatureException(path, "bit-packed bool (bits = 1) is not supported; expected 8 bits");
        }
        boolean ok;
        if (code == KDL_INT || code == KDL_UINT) {
            ok = bits == 8 || bits == 16 || bits == 32 || bits == 64;
        } else if (code == KDL_FLOAT) {
            ok = bits == 16 || bits == 32 || bits == 64;
        } else if (code == KDL_BFLOAT) {
            ok = bits == 16;
        } else if (code == KDL_COMPLEX) {
            ok = bits == 32 || bits == 64 || bits == 128;
        } else if (code == KDL_FLOAT6_E2M3FN || code == KDL_FLOAT6_E3M2FN) {
            ok = bits == 6;
        } else if (code == KDL_FLOAT4_E2M1FN) {
            ok = bits == 4;
        } else {
            ok = bits == 8; // bool and the float8 family
        }
        if (!ok) {
            throw new ValidationException(Category.FORMAT, path + ".bits", "type " + CODE_NAMES[code]
                    + " with " + bits + " bits is not defined by DLPack");
        }
    }

    @Override
    public String toString() {
        String name = code < CODE_NAMES.length ? CODE_NAMES[code] : "code" + code;
        boolean named = code <= KDL_COMPLEX || code == KDL_BOOL;
        return (named ? name + bits : name) + (lanes == 1 ? "" : "x" + lanes);
    }
}
