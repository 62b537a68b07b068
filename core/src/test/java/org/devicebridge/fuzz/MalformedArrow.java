package org.devicebridge.fuzz;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static org.devicebridge.arrow.ValidationLevel.DEFAULT;
import static org.devicebridge.arrow.ValidationLevel.FULL;
import static org.devicebridge.arrow.ValidationLevel.MINIMAL;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.fuzz.ArrowFuzz.Built;
import org.devicebridge.fuzz.ArrowFuzz.Nulls;
import org.devicebridge.fuzz.ArrowFuzz.Type;
import org.devicebridge.generated.arrow.ArrowArray;

/**
 * Malformed content at a known place: a valid tree ({@link ArrowFuzz#generateExact}) with exactly one
 * corruption from {@link Malformation}, the table of what is corrupted and the lowest validation level that
 * must reject it. The oracle imports each input at MINIMAL, DEFAULT and FULL and requires a typed rejection
 * at the row's level and every level above (and, where DEFAULT accepts it, that the Arrow Java bridge
 * rejects it typed or returns right values).
 */
final class MalformedArrow {
    private MalformedArrow() {}

    /** Which node a corruption needs. */
    private static final String[] LISTS = {"+l", "+L"};
    private static final String[] STRINGS = {"u", "U", "z", "Z"};
    private static final String[] UTF8 = {"u", "U"};
    private static final String[] VIEWS = {"vu", "vz"};
    private static final String[] SPARSE = {"+us:0,1"};
    private static final String[] DENSE = {"+ud:0,1"};
    private static final String[] DICTIONARY = {"dict:c", "dict:s", "dict:i", "dict:l"};
    private static final String[] RUN_END = {"+r"};
    private static final String[] LIST_VIEW = {"+vl"};
    private static final String[] STRUCT = {"+s"};
    private static final String[] FIXED_LIST = {"+w:2", "+w:3"};
    private static final String[] DECIMALS = {"d:9,2,32", "d:18,3,64", "d:10,2", "d:60,3,256"};
    private static final String[] WITH_VALIDITY = {"i", "l", "b", "U", "u", "+L", "+s", "w:3"};
    private static final String[] WITH_DATA = {"i", "l", "U", "u", "w:3", "d:10,2"};
    private static final String[] ANY = {"i", "b", "U", "u", "+L", "+l", "+s", "+w:2", "+us:0,1", "+ud:0,1", "vu", "+r", "dict:i"};

    /** A corruption of the target node; returns a short description, or null where it does not apply. */
    @FunctionalInterface
    interface Corrupt {
        String apply(Built n, SplittableRandom r);
    }

    /**
     * THE expectation table (one row per kind of malformed input; align it with
     * {@code core/src/test/resources/validation-parity.md} once that lands): the lowest level that must
     * reject the corruption. Until the parity table exists the rule is: content checks (offsets inside,
     * UTF-8, union type ids and offsets, dictionary indices, views, run ends, null counts) at FULL; the first
     * and last offsets and buffer sizes at DEFAULT; structure (buffer counts, lengths, NULL pointers) at
     * MINIMAL. {@code VALID} is the uncorrupted tree: accepted at every level with right values.
     */
    enum Malformation {
        VALID(null, ANY, 0, Nulls.RANDOM, (n, r) -> "none"),
        // ---- list offsets
        LIST_OFFSETS_NOT_MONOTONIC(FULL, LISTS, 3, Nulls.RANDOM, (n, r) -> offsets(n, childLength(n), Pattern.DIP)),
        LIST_INNER_OFFSET_BEYOND_CHILD(FULL, LISTS, 2, Nulls.RANDOM, (n, r) -> offsets(n, childLength(n), Pattern.INNER_BEYOND)),
        LIST_LAST_OFFSET_BEYOND_CHILD(DEFAULT, LISTS, 1, Nulls.RANDOM, (n, r) -> offsets(n, childLength(n), Pattern.LAST_BEYOND)),
        LIST_FIRST_OFFSET_NEGATIVE(DEFAULT, LISTS, 1, Nulls.RANDOM, (n, r) -> offsets(n, childLength(n), Pattern.FIRST_NEGATIVE)),
        LIST_LAST_OFFSET_BEFORE_FIRST(DEFAULT, LISTS, 1, Nulls.RANDOM, (n, r) -> offsets(n, childLength(n), Pattern.LAST_BEFORE_FIRST)),
        // ---- string / binary offsets and UTF-8 (a data buffer's size is the last offset: "beyond" it is undetectable)
        STRING_OFFSETS_NOT_MONOTONIC(FULL, STRINGS, 3, Nulls.RANDOM, (n, r) -> offsets(n, dataLength(n), Pattern.DIP)),
        STRING_FIRST_OFFSET_NEGATIVE(DEFAULT, STRINGS, 1, Nulls.RANDOM, (n, r) -> offsets(n, dataLength(n), Pattern.FIRST_NEGATIVE)),
        STRING_LAST_OFFSET_BEFORE_FIRST(DEFAULT, STRINGS, 1, Nulls.RANDOM, (n, r) -> offsets(n, dataLength(n), Pattern.LAST_BEFORE_FIRST)),
        STRING_BAD_UTF8(FULL, UTF8, 1, Nulls.NONE, MalformedArrow::badUtf8),
        // ---- unions
        SPARSE_UNION_TYPE_ID_UNDECLARED(FULL, SPARSE, 1, Nulls.RANDOM, (n, r) -> typeId(n, r)),
        DENSE_UNION_TYPE_ID_UNDECLARED(FULL, DENSE, 1, Nulls.RANDOM, (n, r) -> typeId(n, r)),
        DENSE_UNION_OFFSET_BEYOND_CHILD(FULL, DENSE, 1, Nulls.RANDOM, (n, r) -> denseOffset(n, r, false)),
        DENSE_UNION_OFFSET_NEGATIVE(FULL, DENSE, 1, Nulls.RANDOM, (n, r) -> denseOffset(n, r, true)),
        DENSE_UNION_OFFSETS_DECREASING(FULL, DENSE, 2, Nulls.RANDOM, MalformedArrow::denseDecreasing),
        // ---- dictionaries
        DICTIONARY_INDEX_BEYOND(FULL, DICTIONARY, 1, Nulls.NONE, (n, r) -> dictionaryIndex(n, r, false)),
        DICTIONARY_INDEX_NEGATIVE(FULL, DICTIONARY, 1, Nulls.NONE, (n, r) -> dictionaryIndex(n, r, true)),
        // ---- views
        VIEW_BUFFER_INDEX_BEYOND(FULL, VIEWS, 1, Nulls.NONE, (n, r) -> view(n, r, ViewFault.BUFFER_INDEX)),
        VIEW_BEYOND_VARIADIC_BUFFER(FULL, VIEWS, 1, Nulls.NONE, (n, r) -> view(n, r, ViewFault.BEYOND)),
        VIEW_NEGATIVE_LENGTH(FULL, VIEWS, 1, Nulls.NONE, (n, r) -> view(n, r, ViewFault.NEGATIVE_LENGTH)),
        VIEW_PREFIX_MISMATCH(FULL, VIEWS, 1, Nulls.NONE, (n, r) -> view(n, r, ViewFault.PREFIX)),
        // ---- run-end encoded
        RUN_ENDS_NOT_INCREASING(FULL, RUN_END, 3, Nulls.RANDOM, (n, r) -> runEnds(n, RunFault.REPEAT)),
        RUN_ENDS_FIRST_NOT_POSITIVE(FULL, RUN_END, 3, Nulls.RANDOM, (n, r) -> runEnds(n, RunFault.ZERO_FIRST)),
        RUN_ENDS_LAST_SHORT(DEFAULT, RUN_END, 1, Nulls.RANDOM, (n, r) -> runEnds(n, RunFault.SHORT)),
        // ---- list views
        LIST_VIEW_BEYOND_CHILD(FULL, LIST_VIEW, 1, Nulls.NONE, (n, r) -> listView(n, false)),
        LIST_VIEW_NEGATIVE_SIZE(FULL, LIST_VIEW, 1, Nulls.NONE, (n, r) -> listView(n, true)),
        // ---- fixed-width values
        DECIMAL_OUT_OF_PRECISION(FULL, DECIMALS, 1, Nulls.NONE, MalformedArrow::decimalTooWide),
        // ---- null counts
        NULL_COUNT_DIFFERS_FROM_BITMAP(FULL, WITH_VALIDITY, 2, Nulls.SOME, MalformedArrow::nullCountMismatch),
        NULL_COUNT_ABOVE_LENGTH(FULL, WITH_VALIDITY, 1, Nulls.SOME, (n, r) -> {
            ArrowArray.null_count(n.array(), n.length() + 1 + r.nextInt(3));
            return "null_count=" + ArrowArray.null_count(n.array());
        }),
        // ---- structure
        STRUCT_CHILD_TOO_SHORT(MINIMAL, STRUCT, 1, Nulls.RANDOM, (n, r) -> childTooShort(n, 1)),
        FIXED_SIZE_LIST_CHILD_TOO_SHORT(MINIMAL, FIXED_LIST, 1, Nulls.RANDOM, (n, r) -> childTooShort(n, fixedSize(n))),
        BUFFER_COUNT_WRONG(MINIMAL, ANY, 0, Nulls.RANDOM, (n, r) -> {
            if (n.type().format().startsWith("v")) {
                return null; // a view's buffer count is its variadic count: one more is a buffer without a size
            }
            long v = ArrowArray.n_buffers(n.array()) + (r.nextBoolean() ? 1 : -1);
            if (v < 0) {
                return null;
            }
            ArrowArray.n_buffers(n.array(), v);
            return "n_buffers=" + v;
        }),
        DATA_BUFFER_NULL(MINIMAL, WITH_DATA, 1, Nulls.RANDOM, (n, r) -> {
            n.bufferPointers().setAtIndex(java.lang.foreign.ValueLayout.ADDRESS, 1, MemorySegment.NULL);
            return "buffers[1]=NULL";
        }),
        LENGTH_NEGATIVE(MINIMAL, ANY, 0, Nulls.RANDOM, (n, r) -> {
            ArrowArray.length(n.array(), -1 - r.nextInt(3));
            return "length=" + ArrowArray.length(n.array());
        }),
        OFFSET_NEGATIVE(MINIMAL, ANY, 0, Nulls.RANDOM, (n, r) -> {
            ArrowArray.offset(n.array(), -1 - r.nextInt(3));
            return "offset=" + ArrowArray.offset(n.array());
        }),
        DICTIONARY_NULL(MINIMAL, DICTIONARY, 0, Nulls.RANDOM, (n, r) -> {
            ArrowArray.dictionary(n.array(), MemorySegment.NULL);
            return "dictionary=NULL";
        });

        /** The lowest level that must reject it; null for {@link #VALID}. */
        final ValidationLevel level;
        final String[] targets;
        final int minLength;
        final Nulls nulls;
        final Corrupt corrupt;

        Malformation(ValidationLevel level, String[] targets, int minLength, Nulls nulls, Corrupt corrupt) {
            this.level = level;
            this.targets = targets;
            this.minLength = minLength;
            this.nulls = nulls;
            this.corrupt = corrupt;
        }

        /** Whether an import at {@code at} must reject this corruption. */
        boolean mustReject(ValidationLevel at) {
            return level != null && at.compareTo(level) >= 0;
        }
    }

    /** One malformed input: the generated tree and what was done to it. */
    record Input(ArrowFuzz.Input arrow, Malformation malformation, String what) {}

    /**
     * The input of {@code mem}'s seed: a row of the table, a tree whose root (or, half the time, the first
     * field of a root struct) is of a type the row corrupts, and the corruption. A row whose corruption
     * does not apply to the tree drawn (rare: e.g. a dense union with all elements in different children)
     * yields the uncorrupted tree as {@link Malformation#VALID}.
     */
    static Input generate(Fuzz.Mem mem) {
        SplittableRandom r = mem.r;
        Malformation[] rows = Malformation.values();
        Malformation m = rows[r.nextInt(rows.length)];
        ArrowFuzz fuzz = new ArrowFuzz(mem);
        String format = m.targets[r.nextInt(m.targets.length)];
        Type target = type(format, fuzz, r).withNulls(m.nulls);
        boolean nested = r.nextBoolean();
        Type root = nested ? new Type("+s", List.of(target, fuzz.randomExactType(2)), null) : target;
        if (m == Malformation.VALID && r.nextBoolean()) {
            root = fuzz.randomExactType(0);
            nested = false;
        }
        long length = r.nextInt(Math.max(m.minLength, 1), 13);
        ArrowFuzz.Input in = fuzz.generateExact(root, m.minLength == 0 && r.nextInt(8) == 0 ? 0 : length);
        Built node = nested ? in.root.children().get(0) : in.root;
        String what = m.corrupt.apply(node, r);
        if (what == null) {
            return new Input(in, Malformation.VALID, m + " does not apply");
        }
        in.mutations.add(m + " at " + (nested ? "children[0]" : "root") + ": " + what);
        return new Input(in, m, what);
    }

    private static Type type(String format, ArrowFuzz fuzz, SplittableRandom r) {
        if (format.startsWith("dict:")) {
            return new Type(format.substring(5), List.of(), Type.leaf(new String[] {"i", "U", "g", "b"}[r.nextInt(4)]));
        }
        return switch (format) {
            case "+l", "+L", "+vl", "+w:2", "+w:3" -> new Type(format, List.of(fuzz.randomExactType(2)), null);
            case "+s" -> new Type(format, List.of(fuzz.randomExactType(2), fuzz.randomExactType(2)), null);
            case "+us:0,1", "+ud:0,1" -> new Type(format, List.of(fuzz.randomExactType(2), fuzz.randomExactType(2)), null);
            case "+r" -> new Type(format, List.of(Type.leaf(new String[] {"s", "i", "l"}[r.nextInt(3)]).withNulls(Nulls.NONE),
                    fuzz.randomExactType(2)), null);
            default -> Type.leaf(format);
        };
    }

    // ------------------------------------------------------------------------------------------ corruptions

    private enum Pattern { DIP, INNER_BEYOND, LAST_BEYOND, FIRST_NEGATIVE, LAST_BEFORE_FIRST }

    private static long childLength(Built n) {
        return n.children().get(0).length();
    }

    private static long dataLength(Built n) {
        MemorySegment offs = n.buffers().get(1);
        long end = n.offset() + n.length();
        return n.offsetWidth() == 4 ? offs.getAtIndex(JAVA_INT_UNALIGNED, end) : offs.getAtIndex(JAVA_LONG_UNALIGNED, end);
    }

    /**
     * Rewrites the offsets of elements [offset, offset + length] over {@code size} child elements (or data
     * bytes) in a pattern: {@code DIP} = 0, size, 0, ..., 0, size (inner offsets in range but decreasing);
     * {@code INNER_BEYOND} = 0, size + 1, ..., size + 1, size; {@code LAST_BEYOND} = 0, 1, ..., size + 1;
     * {@code FIRST_NEGATIVE} = -1, 0, ..., size; {@code LAST_BEFORE_FIRST} = size, ..., size, 0.
     */
    private static String offsets(Built n, long size, Pattern p) {
        long o = n.offset();
        long len = n.length();
        if ((p == Pattern.DIP && size < 1) || (p == Pattern.LAST_BEFORE_FIRST && size < 1)) {
            return null;
        }
        MemorySegment offs = n.buffers().get(1);
        int w = n.offsetWidth();
        long[] v = new long[(int) len + 1];
        for (int i = 0; i <= len; i++) {
            v[i] = Math.min(i, size);
        }
        v[(int) len] = size;
        switch (p) {
            case DIP -> {
                v[0] = 0;
                v[1] = size;
                for (int i = 2; i < len; i++) {
                    v[i] = 0;
                }
            }
            case INNER_BEYOND -> {
                v[0] = 0;
                for (int i = 1; i < len; i++) {
                    v[i] = size + 1;
                }
            }
            case LAST_BEYOND -> v[(int) len] = size + 1;
            case FIRST_NEGATIVE -> v[0] = -1;
            case LAST_BEFORE_FIRST -> {
                for (int i = 0; i < len; i++) {
                    v[i] = size;
                }
                v[(int) len] = 0;
            }
            default -> throw new IllegalStateException();
        }
        for (int i = 0; i < o; i++) {
            ArrowFuzz.writeInt(offs, i, w, 0);
        }
        for (int i = 0; i <= len; i++) {
            ArrowFuzz.writeInt(offs, o + i, w, v[i]);
        }
        return java.util.Arrays.toString(v) + " over " + size;
    }

    private static String badUtf8(Built n, SplittableRandom r) {
        MemorySegment offs = n.buffers().get(1);
        long p = n.offset() + r.nextInt((int) n.length());
        long from = n.offsetWidth() == 4 ? offs.getAtIndex(JAVA_INT_UNALIGNED, p) : offs.getAtIndex(JAVA_LONG_UNALIGNED, p);
        long to = n.offsetWidth() == 4 ? offs.getAtIndex(JAVA_INT_UNALIGNED, p + 1) : offs.getAtIndex(JAVA_LONG_UNALIGNED, p + 1);
        if (to <= from) {
            return null;
        }
        byte b = new byte[] {(byte) 0xff, (byte) 0x80, (byte) 0xc3}[r.nextInt(3)];
        n.buffers().get(2).set(JAVA_BYTE, to - 1, b);
        return String.format(java.util.Locale.ROOT, "byte 0x%02x at the end of element %d", b & 0xff, p - n.offset());
    }

    private static String typeId(Built n, SplittableRandom r) {
        long p = n.offset() + r.nextInt((int) n.length());
        byte id = (byte) new int[] {2, 5, 127, -1}[r.nextInt(4)];
        n.buffers().get(0).set(JAVA_BYTE, p, id);
        return "type id " + id + " at element " + (p - n.offset());
    }

    /** One decimal of precision p set to +-(10^p + 0..2): one digit too many. */
    private static String decimalTooWide(Built n, SplittableRandom r) {
        String f = n.type().format();
        int precision = Integer.parseInt(f.substring(2, f.indexOf(',')));
        long p = n.offset() + r.nextInt((int) n.length());
        java.math.BigInteger v = java.math.BigInteger.TEN.pow(precision).add(java.math.BigInteger.valueOf(r.nextInt(3)));
        if (r.nextBoolean()) {
            v = v.negate();
        }
        ArrowFuzz.writeDecimal(n.buffers().get(1), p, ArrowFuzz.fixedWidth(f), v);
        return "value " + v + " at element " + (p - n.offset());
    }

    private static String denseOffset(Built n, SplittableRandom r, boolean negative) {
        long p = n.offset() + r.nextInt((int) n.length());
        int child = n.buffers().get(0).get(JAVA_BYTE, p);
        int v = negative ? -1 - r.nextInt(3) : (int) n.children().get(child).length() + r.nextInt(3);
        n.buffers().get(1).setAtIndex(JAVA_INT_UNALIGNED, p, v);
        return "offset " + v + " at element " + (p - n.offset());
    }

    /** Two elements of one child whose offsets both point into it, swapped so that they decrease. */
    private static String denseDecreasing(Built n, SplittableRandom r) {
        MemorySegment ids = n.buffers().get(0);
        MemorySegment offs = n.buffers().get(1);
        for (long i = n.offset(); i < n.offset() + n.length(); i++) {
            for (long j = i + 1; j < n.offset() + n.length(); j++) {
                int a = offs.getAtIndex(JAVA_INT_UNALIGNED, i);
                int b = offs.getAtIndex(JAVA_INT_UNALIGNED, j);
                if (ids.get(JAVA_BYTE, i) == ids.get(JAVA_BYTE, j) && a < b) {
                    offs.setAtIndex(JAVA_INT_UNALIGNED, i, b);
                    offs.setAtIndex(JAVA_INT_UNALIGNED, j, a);
                    return "offsets of elements " + (i - n.offset()) + " and " + (j - n.offset()) + " swapped";
                }
            }
        }
        return null;
    }

    private static String dictionaryIndex(Built n, SplittableRandom r, boolean negative) {
        if (negative && n.type().format().equals("C")) {
            return null;
        }
        long p = n.offset() + r.nextInt((int) n.length());
        long v = negative ? -1 : n.dictionary().length() + r.nextInt(3);
        ArrowFuzz.writeInt(n.buffers().get(1), p, ArrowFuzz.fixedWidth(n.type().format()), v);
        return "index " + v + " at element " + (p - n.offset());
    }

    private enum ViewFault { BUFFER_INDEX, BEYOND, NEGATIVE_LENGTH, PREFIX }

    private static String view(Built n, SplittableRandom r, ViewFault f) {
        MemorySegment views = n.buffers().get(1);
        int variadic = n.buffers().size() - 3;
        List<Long> longViews = new ArrayList<>();
        for (long p = n.offset(); p < n.offset() + n.length(); p++) {
            if (views.get(JAVA_INT_UNALIGNED, p * 16) > 12) {
                longViews.add(p);
            }
        }
        if (f == ViewFault.NEGATIVE_LENGTH) {
            long p = n.offset() + r.nextInt((int) n.length());
            views.set(JAVA_INT_UNALIGNED, p * 16, -1 - r.nextInt(3));
            return "view " + (p - n.offset()) + " of length " + views.get(JAVA_INT_UNALIGNED, p * 16);
        }
        if (longViews.isEmpty()) {
            return null;
        }
        long p = longViews.get(r.nextInt(longViews.size()));
        long at = p * 16;
        switch (f) {
            case BUFFER_INDEX -> views.set(JAVA_INT_UNALIGNED, at + 8, variadic + r.nextInt(3));
            case BEYOND -> {
                int b = views.get(JAVA_INT_UNALIGNED, at + 8);
                long declared = n.buffers().get(n.buffers().size() - 1).getAtIndex(JAVA_LONG_UNALIGNED, b);
                int size = views.get(JAVA_INT_UNALIGNED, at);
                views.set(JAVA_INT_UNALIGNED, at + 12, (int) (declared - size + 1 + r.nextInt(3)));
            }
            case PREFIX -> views.set(JAVA_BYTE, at + 4 + r.nextInt(4), (byte) '!');
            default -> throw new IllegalStateException();
        }
        return f + " in view " + (p - n.offset());
    }

    private enum RunFault { REPEAT, ZERO_FIRST, SHORT }

    private static String runEnds(Built n, RunFault f) {
        Built ends = n.children().get(0);
        long runs = ends.length();
        int w = ArrowFuzz.fixedWidth(ends.type().format());
        MemorySegment b = ends.buffers().get(1);
        long base = ends.offset();
        switch (f) {
            case REPEAT -> {
                if (runs < 2) {
                    return null;
                }
                ArrowFuzz.writeInt(b, base + runs - 2, w, readInt(b, base + runs - 1, w));
            }
            case ZERO_FIRST -> {
                if (runs < 2) {
                    return null;
                }
                ArrowFuzz.writeInt(b, base, w, 0);
            }
            case SHORT -> {
                long need = n.offset() + n.length();
                long prev = runs < 2 ? 0 : readInt(b, base + runs - 2, w);
                if (need - 1 <= prev) {
                    return null;
                }
                ArrowFuzz.writeInt(b, base + runs - 1, w, need - 1);
            }
            default -> throw new IllegalStateException();
        }
        return f + " in " + runs + " run ends";
    }

    private static long readInt(MemorySegment b, long i, int w) {
        return switch (w) {
            case 2 -> b.getAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i);
            case 4 -> b.getAtIndex(JAVA_INT_UNALIGNED, i);
            default -> b.getAtIndex(JAVA_LONG_UNALIGNED, i);
        };
    }

    private static String listView(Built n, boolean negative) {
        long p = n.offset();
        long child = n.children().get(0).length();
        MemorySegment offs = n.buffers().get(1);
        MemorySegment sizes = n.buffers().get(2);
        int o = offs.getAtIndex(JAVA_INT_UNALIGNED, p);
        int s = negative ? -1 : (int) (child - o + 1);
        sizes.setAtIndex(JAVA_INT_UNALIGNED, p, s);
        return "list view 0 at offset " + o + " of size " + s + " over " + child;
    }

    private static String nullCountMismatch(Built n, SplittableRandom r) {
        MemorySegment validity = n.buffers().get(0);
        if (validity.address() == 0) {
            return null;
        }
        long nulls = 0;
        for (long p = n.offset(); p < n.offset() + n.length(); p++) {
            if ((validity.get(JAVA_BYTE, p >>> 3) & (1 << (p & 7))) == 0) {
                nulls++;
            }
        }
        long v = nulls > 0 && (nulls == n.length() || r.nextBoolean()) ? nulls - 1 : nulls + 1;
        ArrowArray.null_count(n.array(), v);
        return "null_count=" + v + " but " + nulls + " null bits";
    }

    private static String childTooShort(Built n, long perElement) {
        Built child = n.children().get(0);
        long need = (n.offset() + n.length()) * perElement;
        long v = need - child.offset() - 1;
        if (v < 0) {
            return null;
        }
        ArrowArray.length(child.array(), v);
        return "child length " + v + " for " + need + " elements";
    }

    private static long fixedSize(Built n) {
        return Long.parseLong(n.type().format().substring(3));
    }
}
