package org.devicebridge.arrow;

import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowDataType.Layout;

/**
 * The contents Arrow Java trusts without checking them, checked once over a validated host table before it
 * gets them (apart from {@link ArrayReader}, which checks structs as they arrive).
 */
final class TrustedContents {
    private TrustedContents() {}

    /**
     * Runs over {@code hostTable} (host memory validated at DEFAULT) the FULL content checks that Arrow Java
     * relies on without checking them itself: every offset of strings, binaries, lists and maps, views and
     * list views within bounds, union type ids and dense offsets, run ends strictly increasing, dictionary
     * indices in range. O(1) for a node without such contents (fixed-width values). Not UTF-8, decimal
     * precision, temporal ranges, view prefixes or padding, nor null counts against bitmaps: Arrow Java reads
     * those values as they are, and takes a declared null count as the C Data Interface defines it, so
     * none of them can make it read a wrong value or outside a buffer.
     *
     * @throws ValidationException with the category and field path of the first problem found
     */
    static void check(ArrayTable hostTable) {
        if (!hostTable.host) {
            throw new IllegalArgumentException("expected a view of host memory");
        }
        ContentChecks c = new ContentChecks(ValidationLevel.FULL, hostTable, null);
        SchemaLayout layout = hostTable.layout;
        for (int n = 0; n < hostTable.size(); n++) {
            ArrowDataType type = layout.schema(n).type();
            Layout kind = type.layout();
            int dictionary = layout.dictionary(n);
            boolean trustedContents = switch (kind) {
                case VARIABLE, LARGE_VARIABLE, LIST, LARGE_LIST, VIEW, LIST_VIEW, LARGE_LIST_VIEW, SPARSE_UNION,
                     DENSE_UNION, RUN_END_ENCODED -> true;
                default -> false;
            };
            if (!trustedContents && dictionary < 0) {
                continue; // nothing here that Arrow Java trusts (fixed-width values, bitmaps, struct lengths)
            }
            int count = hostTable.bufferCount(n);
            long[] addr = new long[count];
            long[] len = new long[count];
            for (int i = 0; i < count; i++) {
                addr[i] = hostTable.bufferAddress(n, i);
                len[i] = hostTable.bufferLength(n, i);
            }
            long length = hostTable.length(n);
            long offset = hostTable.offset(n);
            switch (kind) {
                case VARIABLE, LARGE_VARIABLE, LIST, LARGE_LIST -> {
                    if (len[1] != 0) {
                        c.checkOffsets(addr[1], offset, length, kind.offsetWidth(), n);
                    }
                }
                case VIEW -> c.checkViews(n, addr, len, count - 3, false);
                case LIST_VIEW, LARGE_LIST_VIEW -> c.checkListViews(n, addr);
                case SPARSE_UNION, DENSE_UNION -> c.checkUnion(n, addr);
                case RUN_END_ENCODED -> c.checkRunEnds(n, offset + length, length);
                default -> { }
            }
            if (dictionary >= 0) {
                c.checkDictionaryIndices(n, addr);
            }
        }
    }
}
