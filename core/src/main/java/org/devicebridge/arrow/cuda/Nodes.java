package org.devicebridge.arrow.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.foreign.Access;
import org.devicebridge.foreign.ArrowAccess;

/**
 * Walks and copies trees of {@link ArrayNode}s for device batches. (Replaced by the flat view (lead): the
 * tree copies go once the import view is flat.)
 */
final class Nodes {
    private static final ArrowAccess ARROW = Access.arrow();

    private Nodes() {}

    /** Every node of the tree, depth first: a node, its children, then its dictionary. */
    static List<ArrayNode> collect(ArrayNode root) {
        List<ArrayNode> out = new ArrayList<>();
        collect(root, out);
        return out;
    }

    private static void collect(ArrayNode n, List<ArrayNode> out) {
        out.add(n);
        for (ArrayNode c : n.children()) {
            collect(c, out);
        }
        if (n.dictionary() != null) {
            collect(n.dictionary(), out);
        }
    }

    /** The device address of buffer {@code i} of {@code n} (0 for a NULL buffer). */
    static long address(ArrayNode n, int i) {
        return n.bufferPointer(i).address();
    }

    /** A copy of the tree with the buffer addresses in {@code placed}, as device memory (not host-readable). */
    static ArrayNode relocate(ArrayNode n, Map<ArrayNode, long[]> placed) {
        return ARROW.relocated(n, placed, Map.of());
    }
}
