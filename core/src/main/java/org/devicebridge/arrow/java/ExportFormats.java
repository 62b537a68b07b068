package org.devicebridge.arrow.java;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.devicebridge.internal.ArrowMetadata;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.SchemaNode;

/**
 * Arrow Java type -> C Data Interface format string, field flags and metadata blob (the export direction;
 * parsing format strings belongs to the import side).
 */
final class ExportFormats {
    private ExportFormats() {}

    /** The storage type of {@code type}: extension types are exported as their storage. */
    static ArrowType storage(ArrowType type) {
        ArrowType t = type;
        int guard = 0;
        while (t instanceof ArrowType.ExtensionType ext) {
            t = ext.storageType();
            if (++guard > 64) {
                throw new ValidationException(ValidationException.Category.DEPTH, "", "extension types nest deeper than 64");
            }
        }
        return t;
    }

    /**
     * The format string of {@code type} (its storage type for extension types). {@code nChildren} is used
     * for a union without explicit type ids (ids are then the child indices); errors name the path of
     * {@code node} in {@code plan} (built only then).
     */
    static String format(ArrowType type, int nChildren, ExportPlan plan, int node) {
        ArrowType t = storage(type);
        return switch (t.getTypeID()) {
            case Null -> "n";
            case Bool -> "b";
            case Int -> {
                ArrowType.Int i = (ArrowType.Int) t;
                String f = switch (i.getBitWidth()) {
                    case 8 -> "c";
                    case 16 -> "s";
                    case 32 -> "i";
                    case 64 -> "l";
                    default -> throw unsupported(plan.path(node), t);
                };
                yield i.getIsSigned() ? f : f.toUpperCase(Locale.ROOT);
            }
            case FloatingPoint -> switch (((ArrowType.FloatingPoint) t).getPrecision()) {
                case HALF -> "e";
                case SINGLE -> "f";
                case DOUBLE -> "g";
            };
            case Decimal -> {
                ArrowType.Decimal d = (ArrowType.Decimal) t;
                int bw = d.getBitWidth();
                if (bw != 32 && bw != 64 && bw != 128 && bw != 256) {
                    throw unsupported(plan.path(node), t);
                }
                yield bw == 128
                        ? String.format(Locale.ROOT, "d:%d,%d", d.getPrecision(), d.getScale())
                        : String.format(Locale.ROOT, "d:%d,%d,%d", d.getPrecision(), d.getScale(), bw);
            }
            case Date -> switch (((ArrowType.Date) t).getUnit()) {
                case DAY -> "tdD";
                case MILLISECOND -> "tdm";
            };
            case Time -> {
                ArrowType.Time tt = (ArrowType.Time) t;
                String f = switch (tt.getUnit()) {
                    case SECOND -> tt.getBitWidth() == 32 ? "tts" : null;
                    case MILLISECOND -> tt.getBitWidth() == 32 ? "ttm" : null;
                    case MICROSECOND -> tt.getBitWidth() == 64 ? "ttu" : null;
                    case NANOSECOND -> tt.getBitWidth() == 64 ? "ttn" : null;
                };
                if (f == null) {
                    throw unsupported(plan.path(node), t);
                }
                yield f;
            }
            case Timestamp -> {
                ArrowType.Timestamp ts = (ArrowType.Timestamp) t;
                String tz = ts.getTimezone() == null ? "" : ts.getTimezone();
                yield "ts" + unit(ts.getUnit()) + ":" + tz;
            }
            case Duration -> "tD" + unit(((ArrowType.Duration) t).getUnit());
            case Interval -> switch (((ArrowType.Interval) t).getUnit()) {
                case YEAR_MONTH -> "tiM";
                case DAY_TIME -> "tiD";
                case MONTH_DAY_NANO -> "tin";
            };
            case Binary -> "z";
            case LargeBinary -> "Z";
            case BinaryView -> "vz";
            case Utf8 -> "u";
            case LargeUtf8 -> "U";
            case Utf8View -> "vu";
            case FixedSizeBinary -> "w:" + ((ArrowType.FixedSizeBinary) t).getByteWidth();
            case List -> "+l";
            case LargeList -> "+L";
            case FixedSizeList -> "+w:" + ((ArrowType.FixedSizeList) t).getListSize();
            case ListView -> "+vl";
            case LargeListView -> "+vL";
            case Struct -> "+s";
            case Map -> "+m";
            case RunEndEncoded -> "+r";
            case Union -> {
                ArrowType.Union u = (ArrowType.Union) t;
                StringBuilder sb = new StringBuilder(switch (u.getMode()) {
                    case Sparse -> "+us:";
                    case Dense -> "+ud:";
                });
                int[] ids = u.getTypeIds();
                int n = ids == null ? nChildren : ids.length;
                if (ids != null && ids.length != nChildren) {
                    throw new ValidationException(ValidationException.Category.SCHEMA, plan.path(node),
                            "union declares " + ids.length + " type ids but has " + nChildren + " children");
                }
                for (int k = 0; k < n; k++) {
                    int id = ids == null ? k : ids[k];
                    if (id < 0 || id > 127) {
                        throw new ValidationException(ValidationException.Category.SCHEMA, plan.path(node),
                                "union type id " + id + " is outside 0..127");
                    }
                    if (k > 0) {
                        sb.append(',');
                    }
                    sb.append(id);
                }
                yield sb.toString();
            }
            default -> throw unsupported(plan.path(node), t);
        };
    }

    private static String unit(org.apache.arrow.vector.types.TimeUnit unit) {
        return switch (unit) {
            case SECOND -> "s";
            case MILLISECOND -> "m";
            case MICROSECOND -> "u";
            case NANOSECOND -> "n";
        };
    }

    private static UnsupportedFeatureException unsupported(String path, ArrowType t) {
        return new UnsupportedFeatureException(path, "the C Data Interface has no format for Arrow type " + t);
    }

    /** ARROW_FLAG_* bits of {@code field}. */
    static long flags(Field field) {
        long flags = 0;
        if (field.isNullable()) {
            flags |= SchemaNode.FLAG_NULLABLE;
        }
        if (field.getDictionary() != null && field.getDictionary().isOrdered()) {
            flags |= SchemaNode.FLAG_DICTIONARY_ORDERED;
        }
        if (storage(field.getType()) instanceof ArrowType.Map m && m.getKeysSorted()) {
            flags |= SchemaNode.FLAG_MAP_KEYS_SORTED;
        }
        return flags;
    }

    /** Field metadata, with the extension keys added for an extension type that lacks them. */
    static Map<String, String> metadata(Field field) {
        Map<String, String> md = field.getMetadata();
        if (field.getType() instanceof ArrowType.ExtensionType ext
                && (md == null || !md.containsKey(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME))) {
            Map<String, String> withExt = new LinkedHashMap<>();
            withExt.put(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME, ext.extensionName());
            withExt.put(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, ext.serialize());
            if (md != null) {
                withExt.putAll(md);
            }
            return withExt;
        }
        return md;
    }

    /**
     * The metadata blob: int32 pair count, then for each pair int32 key length, key bytes, int32 value
     * length, value bytes (native byte order, no terminator); {@code null} for no metadata (the spec wants
     * NULL, not an empty blob).
     */
    static byte[] encodeMetadata(Map<String, String> md) {
        try {
            return ArrowMetadata.encode(md);
        } catch (IllegalArgumentException e) {
            throw new ValidationException(ValidationException.Category.METADATA, "metadata", e.getMessage());
        }
    }
}
