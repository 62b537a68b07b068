package org.devicebridge.fuzz;

import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.fuzz.FuzzOracle.FuzzFailure;
import org.devicebridge.fuzz.FuzzOracle.Kind;
import org.devicebridge.fuzz.MalformedArrow.Malformation;

/**
 * Library defects the fuzzer finds that other work of issue 13 is fixing right now, each with the branch
 * that fixes it. A failure one of them explains is counted and its first seeds printed, and it fails the
 * run only under {@code -Ddevicebridge.fuzz.strict=true}; every other failure fails it. This is not an
 * excuse list: once the named branch is merged, run strict, and delete the row (a row that matched nothing
 * in a run is printed as such). The expected rejection levels themselves stay in the one table,
 * {@link Malformation}.
 */
enum KnownGaps {
    /** FULL does not compare null_count with the validity bitmap, nor with the length (branch validate). */
    FULL_MISSES_NULL_COUNTS("validate", Kind.LEVEL_TABLE, null,
            Set.of(Malformation.NULL_COUNT_DIFFERS_FROM_BITMAP, Malformation.NULL_COUNT_ABOVE_LENGTH)),
    /** FULL does not require a dense union's offsets into each child to increase (branch validate). */
    FULL_MISSES_DENSE_UNION_ORDER("validate", Kind.LEVEL_TABLE, null, Set.of(Malformation.DENSE_UNION_OFFSETS_DECREASING)),
    /** FULL does not compare a view's inline prefix with its data (branch validate). */
    FULL_MISSES_VIEW_PREFIX("validate", Kind.LEVEL_TABLE, null, Set.of(Malformation.VIEW_PREFIX_MISMATCH)),
    /**
     * The bridge at DEFAULT trusts what only FULL checks (inner offsets, union ids and offsets, dictionary
     * indices, views, run ends, list views): unreadable vectors, values where there are none, untyped
     * errors (branch validate, issue item 2: the bridge's own content check).
     */
    BRIDGE_TRUSTS_DEFAULT_CONTENTS("validate", Kind.BRIDGE, ValidationLevel.DEFAULT, null),
    /**
     * The bridge fails on valid unions: dense unions whose children differ in type, unions nested in
     * unions or lists (branch bridge). Matched by a bridge failure at FULL in a tree that holds a union.
     */
    BRIDGE_UNIONS("bridge", Kind.BRIDGE, ValidationLevel.FULL, null),
    /**
     * Found by this fuzzer, not yet routed: a struct whose fields share a name fails in the bridge with an
     * untyped IndexOutOfBoundsException or NullPointerException (Arrow Java's StructVector keeps one child
     * per name), e.g. arrow seeds 64212 ({@code +s<U,b>}) and 83864. Matched by a bridge failure at FULL in a
     * tree with duplicate field names.
     */
    BRIDGE_DUPLICATE_FIELD_NAMES("none yet (reported)", Kind.BRIDGE, ValidationLevel.FULL, null),
    /**
     * Found by this fuzzer, not yet routed: a fixed-size binary of width 0 ({@code w:0}, valid) makes Arrow
     * Java's FixedSizeBinaryVector constructor divide by zero: an untyped error where an
     * UnsupportedFeatureException belongs (e.g. arrow seed 301236). Matched by a bridge failure at FULL in a
     * tree with a {@code w:0} field.
     */
    BRIDGE_ZERO_WIDTH_BINARY("none yet (reported)", Kind.BRIDGE, ValidationLevel.FULL, null);

    private static final java.util.regex.Pattern ZERO_WIDTH = java.util.regex.Pattern.compile("(^|[<,{])w:0($|[<>,{}])");

    final String branch;
    private final Kind kind;
    private final ValidationLevel level;
    private final Set<Malformation> rows;

    KnownGaps(String branch, Kind kind, ValidationLevel level, Set<Malformation> rows) {
        this.branch = branch;
        this.kind = kind;
        this.level = level;
        this.rows = rows;
    }

    /** Whether known gaps fail the run too. */
    static final boolean STRICT = Boolean.getBoolean("devicebridge.fuzz.strict");

    /** The gap that explains {@code f}, or null. */
    static KnownGaps of(FuzzFailure f) {
        for (KnownGaps g : values()) {
            if (g.kind != f.kind || (g.level != null && g.level != f.level)) {
                continue;
            }
            if (g.rows != null && !g.rows.contains(f.check.malformation)) {
                continue;
            }
            if ((g == BRIDGE_UNIONS && !f.check.unions) || (g == BRIDGE_DUPLICATE_FIELD_NAMES && !f.check.duplicateNames)
                    || (g == BRIDGE_ZERO_WIDTH_BINARY && (f.check.shape == null || !ZERO_WIDTH.matcher(f.check.shape).find()))) {
                continue;
            }
            return g;
        }
        return null;
    }

    /** Counts of known-gap hits, and the first seeds of each. */
    static final class Tally {
        final Map<KnownGaps, long[]> hits = new EnumMap<>(KnownGaps.class);
        final Map<KnownGaps, StringBuilder> seeds = new EnumMap<>(KnownGaps.class);

        /** Records {@code f} if a known gap explains it (and the run is not strict); false if it is a failure. */
        synchronized boolean tolerate(FuzzFailure f) {
            KnownGaps g = of(f);
            if (g == null || STRICT) {
                return false;
            }
            long n = ++hits.computeIfAbsent(g, x -> new long[1])[0];
            if (n <= 3) {
                seeds.computeIfAbsent(g, x -> new StringBuilder()).append(n > 1 ? ", " : "")
                        .append(f.check.target()).append(' ').append(f.check.seed());
            }
            return true;
        }

        synchronized String summary() {
            StringBuilder sb = new StringBuilder("fuzz: known gaps (tolerated; -Ddevicebridge.fuzz.strict=true fails on them):");
            for (KnownGaps g : values()) {
                long n = hits.containsKey(g) ? hits.get(g)[0] : 0;
                sb.append(String.format(java.util.Locale.ROOT, "%n  %-32s (branch %s) %,9d%s", g, g.branch, n,
                        n == 0 ? "  not seen: once its branch is merged, delete the row" : "  e.g. " + seeds.get(g)));
            }
            return sb.toString();
        }
    }
}
