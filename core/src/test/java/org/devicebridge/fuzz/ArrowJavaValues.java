package org.devicebridge.fuzz;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.Decimal256Vector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.complex.DenseUnionVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.complex.LargeListViewVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.ListViewVector;
import org.apache.arrow.vector.complex.RunEndEncodedVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.UnionVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.util.Text;

/**
 * The values Arrow Java returns for a vector, row by row, in the canonical form of {@link ReferenceDecoder}:
 * read through Arrow Java's own accessors (element start and end indices, type ids, run-end lookups,
 * {@code getObject}, its data buffers at its own indices), so that a comparison with the reference decode
 * shows any value the bridge got wrong. Any exception Arrow Java throws while reading propagates: reading
 * a vector the bridge handed back must not fail. Stateless.
 */
final class ArrowJavaValues {
    private static final HexFormat HEX = HexFormat.of();

    private ArrowJavaValues() {}

    /** The canonical values of every row of {@code v}. */
    static List<String> of(ValueVector v, DictionaryProvider dictionaries) {
        int n = v.getValueCount();
        List<String> rows = new ArrayList<>(n);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.setLength(0);
            value(v, i, dictionaries, sb);
            rows.add(sb.toString());
        }
        return rows;
    }

    private static void value(ValueVector v, int i, DictionaryProvider dictionaries, StringBuilder out) {
        if (i < 0 || i >= v.getValueCount()) {
            throw new IndexOutOfBoundsException("element " + i + " of a vector of " + v.getValueCount() + ": " + v.getField());
        }
        DictionaryEncoding encoding = v.getField().getDictionary();
        if (encoding != null) {
            if (v.isNull(i)) {
                out.append('N');
                return;
            }
            long index = ((BaseIntVector) v).getValueAsLong(i);
            Dictionary d = dictionaries.lookup(encoding.getId());
            value(d.getVector(), Math.toIntExact(index), dictionaries, out);
            return;
        }
        switch (v) {
            case UnionVector u -> {
                // the child UnionVector itself reads for this type id (getObject's own lookup); its field's type
                // ids are minor-type numbers, not the declared ids the type buffer holds
                int typeId = u.getTypeValue(i);
                int child = sparseChild(u, typeId);
                out.append('U').append(child).append(':');
                value(u.getChildrenFromFields().get(child), i, dictionaries, out);
            }
            case DenseUnionVector u -> {
                byte typeId = u.getTypeId(i);
                int child = childIndex(((ArrowType.Union) u.getField().getType()).getTypeIds(), typeId);
                out.append('U').append(child).append(':');
                value(u.getVectorByType(typeId), u.getOffset(i), dictionaries, out);
            }
            case RunEndEncodedVector r -> value(r.getValuesVector(), r.getPhysicalIndex(i), dictionaries, out);
            case NullVector ignored -> out.append('N');
            default -> {
                if (v.isNull(i)) {
                    out.append('N');
                } else {
                    nonNull(v, i, dictionaries, out);
                }
            }
        }
    }

    private static void nonNull(ValueVector v, int i, DictionaryProvider dictionaries, StringBuilder out) {
        switch (v) {
            case BitVector b -> out.append(b.get(i) != 0 ? 'T' : 'F');
            case DecimalVector d -> out.append('D').append(d.getObject(i).unscaledValue());
            case Decimal256Vector d -> out.append('D').append(d.getObject(i).unscaledValue());
            case BaseFixedWidthVector f -> {
                int w = f.getTypeWidth();
                byte[] bytes = new byte[w];
                f.getDataBuffer().getBytes((long) i * w, bytes);
                out.append(HEX.formatHex(bytes));
            }
            case ListVector l -> list(l.getDataVector(), l.getElementStartIndex(i), l.getElementEndIndex(i), dictionaries, out);
            case LargeListVector l -> list(l.getDataVector(), l.getElementStartIndex(i), l.getElementEndIndex(i), dictionaries, out);
            case FixedSizeListVector l -> list(l.getDataVector(), l.getElementStartIndex(i), l.getElementEndIndex(i), dictionaries, out);
            case ListViewVector l -> list(l.getDataVector(), l.getElementStartIndex(i), l.getElementEndIndex(i), dictionaries, out);
            case LargeListViewVector l -> {
                ArrowBuf offsets = l.getOffsetBuffer();
                ArrowBuf sizes = l.getSizeBuffer();
                long from = offsets.getLong((long) i * 8);
                list(l.getDataVector(), from, from + sizes.getLong((long) i * 8), dictionaries, out);
            }
            case StructVector s -> {
                out.append('{');
                List<org.apache.arrow.vector.FieldVector> children = s.getChildrenFromFields();
                for (int c = 0; c < children.size(); c++) {
                    if (c > 0) {
                        out.append(',');
                    }
                    value(children.get(c), i, dictionaries, out);
                }
                out.append('}');
            }
            default -> {
                Object o = v.getObject(i);
                byte[] bytes = switch (o) {
                    case Text t -> java.util.Arrays.copyOf(t.getBytes(), (int) t.getLength());
                    case byte[] b -> b;
                    default -> throw new IllegalStateException("no canonical form for " + v.getClass().getSimpleName()
                            + " value " + o);
                };
                out.append('B').append(HEX.formatHex(bytes));
            }
        }
    }

    private static void list(ValueVector child, long from, long to, DictionaryProvider dictionaries, StringBuilder out) {
        out.append('[');
        for (long k = from; k < to; k++) {
            if (k > from) {
                out.append(',');
            }
            value(child, Math.toIntExact(k), dictionaries, out);
        }
        out.append(']');
    }

    /**
     * The position among its children of the vector a sparse union reads type id {@code typeId} from
     * ({@code getVectorByType}, as {@code getObject} does); a NULL child is looked up as null, so null means
     * the one NullVector child.
     */
    private static int sparseChild(UnionVector u, int typeId) {
        ValueVector found = u.getVectorByType(typeId);
        List<org.apache.arrow.vector.FieldVector> children = u.getChildrenFromFields();
        int match = -1;
        for (int c = 0; c < children.size(); c++) {
            ValueVector child = children.get(c);
            if (found == null ? child instanceof NullVector : child == found) {
                if (match >= 0) {
                    throw new IllegalStateException("type id " + typeId + " reads more than one child of " + u.getField());
                }
                match = c;
            }
        }
        if (match < 0) {
            throw new IllegalStateException("type id " + typeId + " reads " + found + ", no child of " + u.getField());
        }
        return match;
    }

    private static int childIndex(int[] typeIds, int typeId) {
        if (typeIds == null) {
            return typeId;
        }
        for (int c = 0; c < typeIds.length; c++) {
            if (typeIds[c] == typeId) {
                return c;
            }
        }
        throw new IllegalStateException("type id " + typeId + " not among " + java.util.Arrays.toString(typeIds));
    }
}
