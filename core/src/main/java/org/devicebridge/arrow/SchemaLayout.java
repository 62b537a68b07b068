package org.devicebridge.arrow;

import java.util.ArrayList;
import java.util.List;

/**
 * A schema tree flattened in pre-order: a node, then its children in order (each with its own subtree),
 * then its dictionary. An array of this type has exactly this shape (the import checks {@code n_children}
 * and {@code dictionary} against the schema), so node {@code i} of an imported array is node {@code i}
 * here, and one layout serves every batch of the type. Field paths are built from it only when a message
 * or a caller needs one.
 */
final class SchemaLayout {
    private final SchemaNode[] nodes;
    private final int[] parent;
    private final String[] edge;
    private final int[] childStart;  // children of node i: childList[childStart[i] .. childStart[i] + count)
    private final int[] childList;
    private final int[] dictionary;  // node index of node i's dictionary, or -1
    private final int depth;         // nodes on the longest root-to-leaf path
    private final int buffers;       // buffers of an array of this type, counting 3 for each view node

    SchemaLayout(SchemaNode root) {
        List<SchemaNode> order = new ArrayList<>();
        List<Integer> parents = new ArrayList<>();
        List<String> edges = new ArrayList<>();
        collect(root, -1, "", order, parents, edges);
        int n = order.size();
        nodes = order.toArray(new SchemaNode[0]);
        parent = new int[n];
        edge = edges.toArray(new String[0]);
        childStart = new int[n];
        dictionary = new int[n];
        int children = 0;
        for (int i = 0; i < n; i++) {
            parent[i] = parents.get(i);
            childStart[i] = children;
            children += nodes[i].children().size();
            dictionary[i] = -1;
        }
        childList = new int[children];
        int deepest = 0;
        int bufferCount = 0;
        for (int i = 0; i < n; i++) {
            int d = 1;
            for (int p = parent[i]; p >= 0; p = parent[p]) {
                d++;
            }
            deepest = Math.max(deepest, d);
            bufferCount += ArrayReader.expectedBuffers(nodes[i].type().layout());
        }
        depth = deepest;
        buffers = bufferCount;
        int[] filled = new int[n];
        for (int i = 1; i < n; i++) {
            int p = parent[i];
            if (edge[i].equals("dictionary")) {
                dictionary[p] = i;
            } else {
                childList[childStart[p] + filled[p]++] = i;
            }
        }
    }

    private static void collect(SchemaNode node, int parentIndex, String edgeName, List<SchemaNode> order,
                                List<Integer> parents, List<String> edges) {
        int self = order.size();
        order.add(node);
        parents.add(parentIndex);
        edges.add(edgeName);
        List<SchemaNode> children = node.children();
        for (int i = 0; i < children.size(); i++) {
            collect(children.get(i), self, "children[" + i + "]", order, parents, edges);
        }
        if (node.dictionary() != null) {
            collect(node.dictionary(), self, "dictionary", order, parents, edges);
        }
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
        return up.isEmpty() ? edge[node] : up + "." + edge[node];
    }

    /** {@code field} of {@code node}, e.g. {@code children[2].buffers[1]}. */
    String path(int node, String field) {
        return SchemaReader.join(path(node), field);
    }
}
