package org.devicebridge.arrow.java;

import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import org.devicebridge.internal.FieldPath;

/**
 * The shape of one export's struct tree while it is planned, in flat arrays reused from one export to
 * the next on the same thread (so an export makes no per-node Java object). Nodes are numbered as the
 * block lays them out: node 0 is the root (the caller's struct), and the dependents of a node (its
 * children, then its dictionary) get consecutive numbers when the node is planned, before any of them
 * is. A node's field path is rebuilt from its parent links only for an error message.
 */
abstract class ExportPlan {
    /** Nodes planned (or reserved) so far. */
    int nodes;
    private int[] parent;
    /** Index among the parent's children, or -1 for the parent's dictionary. */
    private int[] position;
    /** Levels below the root (a dictionary is one below the node it encodes), for the depth cap. */
    private int[] depth;
    int[] firstDependent;
    int[] childCount;
    int[] dependentCount;
    /** Set while a thread's plan is in use (an export inside an export gets a plan of its own). */
    boolean busy;

    ExportPlan() {
        allocate(16);
    }

    private void allocate(int capacity) {
        parent = new int[capacity];
        position = new int[capacity];
        depth = new int[capacity];
        firstDependent = new int[capacity];
        childCount = new int[capacity];
        dependentCount = new int[capacity];
    }

    /** Node capacity of the per-node arrays. */
    final int capacity() {
        return parent.length;
    }

    /** Grows the per-node arrays of the subclass to {@code capacity}. */
    abstract void growNodes(int capacity);

    /** Forgets the last export (dropping references it held), keeping the arrays. */
    void reset() {
        nodes = 0;
    }

    /** Reserves the root, node 0. */
    final void reserveRoot() {
        reset();
        ensureNodes(1);
        nodes = 1;
        parent[0] = -1;
        position[0] = 0;
        depth[0] = 0;
    }

    /**
     * Reserves the dependents of {@code node}: {@code children} children, then a dictionary if
     * {@code dictionary}; returns the number of the first.
     */
    final int reserveDependents(int node, int children, boolean dictionary) {
        int count = children + (dictionary ? 1 : 0);
        int first = nodes;
        ensureNodes(Math.addExact(first, count));
        for (int j = 0; j < count; j++) {
            parent[first + j] = node;
            position[first + j] = j < children ? j : -1;
            depth[first + j] = depth[node] + 1;
        }
        nodes = first + count;
        firstDependent[node] = first;
        childCount[node] = children;
        dependentCount[node] = count;
        return first;
    }

    /** Levels between {@code node} and the root: 0 for the root, 1 for its children and its dictionary. */
    final int depth(int node) {
        return depth[node];
    }

    /** The node that is {@code node}'s dictionary, or -1. */
    final int dictionaryOf(int node) {
        return dependentCount[node] > childCount[node] ? firstDependent[node] + childCount[node] : -1;
    }

    private void ensureNodes(int n) {
        if (n > parent.length) {
            int capacity = Math.max(n, parent.length * 2);
            parent = Arrays.copyOf(parent, capacity);
            position = Arrays.copyOf(position, capacity);
            depth = Arrays.copyOf(depth, capacity);
            firstDependent = Arrays.copyOf(firstDependent, capacity);
            childCount = Arrays.copyOf(childCount, capacity);
            dependentCount = Arrays.copyOf(dependentCount, capacity);
            growNodes(capacity);
        }
    }

    /** The field path of {@code node}, e.g. {@code children[2].dictionary}; empty for the root. */
    final String path(int node) {
        if (node <= 0) {
            return "";
        }
        return FieldPath.join(path(parent[node]),
                position[node] < 0 ? "dictionary" : "children[" + position[node] + "]");
    }

    /** {@code part} below {@code node}'s path, e.g. {@code children[1].buffers[0]}. */
    final String path(int node, String part) {
        return FieldPath.join(path(node), part);
    }

    /** Bytes of the node table ({@link ExportRuntime.Tree}), 16 per node. */
    final long tableBytes() {
        return Math.multiplyExact((long) nodes, ExportRuntime.TABLE_ENTRY);
    }

    /** Writes node {@code node}'s table entry at {@code table} (the table's address). */
    final void writeTableEntry(long table, int node, int retainFrom, int retainTo) {
        long e = table + ExportRuntime.TABLE_ENTRY * node;
        ExportRuntime.ALL.set(ValueLayout.JAVA_INT, e, retainFrom);
        ExportRuntime.ALL.set(ValueLayout.JAVA_INT, e + 4, retainTo);
        ExportRuntime.ALL.set(ValueLayout.JAVA_INT, e + 8, firstDependent[node]);
        ExportRuntime.ALL.set(ValueLayout.JAVA_INT, e + 12, dependentCount[node]);
    }

    static long align8(long n) {
        return Math.addExact(n, 7L) & ~7L;
    }
}
