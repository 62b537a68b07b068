package org.devicebridge.arrow.cuda;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.foreign.CudaStructs;

/**
 * Walks, relocates and writes out trees of {@link ArrayNode}s for device batches.
 */
final class Nodes {
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
        Map<ArrayNode, List<MemorySegment>> pointers = new HashMap<>();
        placed.forEach((node, addresses) -> {
            List<MemorySegment> list = new ArrayList<>(addresses.length);
            for (long a : addresses) {
                list.add(MemorySegment.ofAddress(a));
            }
            pointers.put(node, list);
        });
        return n.relocated(pointers);
    }

    /** Gives the address of buffer {@code i} of a node in the written tree. */
    interface Addresses {
        long address(ArrayNode node, int i);
    }

    /**
     * Writes the tree of {@code root} into {@code out} (an {@code ArrowArray}, zero or garbage) with buffer
     * addresses from {@code addresses}. After a return the tree owns {@code onFree} (run once when the last
     * node is released); after a throw {@code out} is untouched and {@code onFree} was not run.
     */
    static void write(ArrayNode root, Addresses addresses, MemorySegment out, Runnable onFree) {
        CudaStructs.write(root, new CudaStructs.Shape<ArrayNode>() {
            @Override
            public long length(ArrayNode n) {
                return n.length();
            }

            @Override
            public long nullCount(ArrayNode n) {
                return n.nullCount();
            }

            @Override
            public long offset(ArrayNode n) {
                return n.offset();
            }

            @Override
            public int bufferCount(ArrayNode n) {
                return n.bufferCount();
            }

            @Override
            public long address(ArrayNode n, int i) {
                return addresses.address(n, i);
            }

            @Override
            public List<ArrayNode> children(ArrayNode n) {
                return n.children();
            }

            @Override
            public ArrayNode dictionary(ArrayNode n) {
                return n.dictionary();
            }
        }, out, onFree);
    }
}
