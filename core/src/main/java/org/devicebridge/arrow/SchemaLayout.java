package org.devicebridge.arrow;

import java.util.List;

/**
 * A schema tree flattened in pre-order: a node, then its children in order (each with its own subtree),
 * then its dictionary. An array of this type has exactly this shape (the import checks {@code n_children}
 * and {@code dictionary} against the schema), so node {@code i} of an imported array is node {@code i}
 * here, and one layout serves every batch of the type. Field paths are built from it only when a message
 * or a caller needs one.
 */
final class SchemaLayout {
    private static final int DICTIONARY_EDGE = -1;

    private final SchemaNode[] nodes;
    private final int[] parent;
    private final int[] edge;        // node i is child edge[i] of its parent, or its DICTIONARY_EDGE
    private final int[] childStart;  // children of node i: childList[childStart[i] .. childStart[i] + count)
    private final int[] childList;
    private final int[] dictionary;  // node index of node i's dictionary, or -1
    private final int depth;         // nodes on the longest root-to-leaf path
    private final int buffers;       // buffers of an array of this type, counting 3 for each view node
    // node i's buffers are [bufferStart[i], bufferStart[i + 1]) of the whole tree's, in pre-order; null where a
    // view node (whose variadic buffers each array chooses) makes them vary from one array to the next
    private final int[] bufferStart;
    private final RecordBatchTemplate template; // null unless the type is a record batch of leaves it covers

    SchemaLayout(SchemaNode root) {
        int n = count(root);
        nodes = new SchemaNode[n];
        parent = new int[n];
        edge = new int[n];
        int[] depths = new int[n];
        collect(root, -1, DICTIONARY_EDGE, depths, 0);
        childStart = new int[n];
        dictionary = new int[n];
        int children = 0;
        int deepest = 0;
        int bufferCount = 0;
        int[] starts = new int[n + 1];
        boolean fixed = true;
        for (int i = 0; i < n; i++) {
            childStart[i] = children;
            children += nodes[i].children().size();
            dictionary[i] = -1;
            deepest = Math.max(deepest, depths[i]);
            starts[i] = bufferCount;
            bufferCount += BufferSizer.expectedBuffers(nodes[i].type().layout());
            fixed &= nodes[i].type().layout() != ArrowDataType.Layout.VIEW;
        }
        starts[n] = bufferCount;
        depth = deepest;
        buffers = bufferCount;
        bufferStart = fixed ? starts : null;
        childList = new int[children];
        for (int i = 1; i < n; i++) {
            int p = parent[i];
            if (edge[i] == DICTIONARY_EDGE) {
                dictionary[p] = i;
            } else {
                childList[childStart[p] + edge[i]] = i;
            }
        }
        template = RecordBatchTemplate.of(this);
    }

    private static int count(SchemaNode node) {
        int n = 1;
        for (SchemaNode c : node.children()) {
            n += count(c);
        }
        return node.dictionary() == null ? n : n + count(node.dictionary());
    }

    /**
     * Places {@code node} and its subtree in pre-order from index {@code self} on, with the depth of each in
     * {@code depths} (1 for the root, one more than its parent's for every other); returns the next free index.
     */
    private int collect(SchemaNode node, int parentIndex, int edgeIndex, int[] depths, int self) {
        nodes[self] = node;
        parent[self] = parentIndex;
        edge[self] = edgeIndex;
        depths[self] = parentIndex < 0 ? 1 : depths[parentIndex] + 1;
        int next = self + 1;
        List<SchemaNode> children = node.children();
        for (int i = 0; i < children.size(); i++) {
            next = collect(children.get(i), self, i, depths, next);
        }
        if (node.dictionary() != null) {
            next = collect(node.dictionary(), self, DICTIONARY_EDGE, depths, next);
        }
        return next;
    }

    /** The precomputed checks of a record batch of this type, or {@code null} where they do not cover it. */
    RecordBatchTemplate template() {
        return template;
    }

    /** Nodes on the longest path from the root to a leaf (1 for a leaf root). */
    int depth() {
        return depth;
    }

    /** Buffers of an array of this type (view nodes counted with their 3 fixed buffers only). */
    int bufferCount() {
        return buffers;
    }

    int size() {
        return nodes.length;
    }

    /** {@code true} if every array of this type has the same buffers per node (no view node): see {@link #bufferStart}. */
    boolean fixedBuffers() {
        return bufferStart != null;
    }

    /** Where node {@code node}'s buffers start among the tree's, in pre-order; only where {@link #fixedBuffers()}. */
    int bufferStart(int node) {
        return bufferStart[node];
    }

    /** The buffers of node {@code node}; only where {@link #fixedBuffers()}. */
    int bufferCount(int node) {
        return bufferStart[node + 1] - bufferStart[node];
    }

    SchemaNode schema(int node) {
        return nodes[node];
    }

    int childCount(int node) {
        return nodes[node].children().size();
    }

    /** The node index of child {@code i} of {@code node}. */
    int child(int node, int i) {
        return childList[childStart[node] + i];
    }

    /** The node index of the dictionary of {@code node}, or -1. */
    int dictionary(int node) {
        return dictionary[node];
    }

    /** The field path of {@code node} from the root of this layout, e.g. {@code children[2].dictionary}; empty for the root. */
    String path(int node) {
        if (node == 0) {
            return "";
        }
        String up = path(parent[node]);
        String here = edge[node] == DICTIONARY_EDGE ? "dictionary" : "children[" + edge[node] + "]";
        return up.isEmpty() ? here : up + "." + here;
    }

    /** {@code field} of {@code node}, e.g. {@code children[2].buffers[1]}. */
    String path(int node, String field) {
        return SchemaReader.join(path(node), field);
    }
}
