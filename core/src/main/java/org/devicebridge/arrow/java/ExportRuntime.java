package org.devicebridge.arrow.java;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.apache.arrow.memory.ArrowBuf;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.ArrowArrayFields;

/**
 * What the Arrow Java exports hold beyond the release machinery every export shares ({@link ExportTree}): the
 * node table of their blocks and the Arrow buffers their nodes retain.
 *
 * <p>Block layout: the structs of nodes {@code 1..n-1} first ({@code (i - 1) * structSize}), node 0 being
 * the caller's struct; the node table at {@link Tree#table}, 16 bytes per node ({@code int} first retained
 * buffer, {@code int} end of its retained buffers, {@code int} first dependent, {@code int} number of
 * dependents). A node's dependents (children, then the dictionary) have consecutive indices. A node holds
 * one reference to each Arrow buffer it exports and drops it in its release.
 */
final class ExportRuntime {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    /** Bytes of one node table entry. */
    static final long TABLE_ENTRY = 16;

    /** Every address, for reading and writing our own structs and blocks by address. */
    static final MemorySegment ALL = ArrowArrayFields.BY_ADDRESS;

    static final long SCHEMA_SIZE = ArrowSchema.sizeof();
    static final long ARRAY_SIZE = ArrowArray.sizeof();

    /** 64 zero bytes: the target of every exported buffer that has no bytes (never NULL, see the spec's note). */
    static final MemorySegment ZEROS = Arena.global().allocate(64, 64);

    private ExportRuntime() {}

    /** One exported Arrow Java tree: its dependents and retained buffers read from the node table in its block. */
    static final class Tree extends ExportTree {
        /** Offset of the node table in the block. */
        final long table;
        /** The Arrow buffers the nodes hold, node by node (ranges in the node table); {@code null} for none. */
        private final ArrowBuf[] retained;

        Tree(ExportTree.Kind kind, long base, long table, int nodes, ArrowBuf[] retained) {
            super(kind, base, nodes);
            this.table = table;
            this.retained = retained;
        }

        private long entry(int i) {
            return base + table + TABLE_ENTRY * i;
        }

        @Override
        protected int dependentCount(int i) {
            return ALL.get(ValueLayout.JAVA_INT, entry(i) + 12);
        }

        @Override
        protected int dependent(int i, int k) {
            return ALL.get(ValueLayout.JAVA_INT, entry(i) + 8) + k;
        }

        @Override
        protected void releaseHeld(int i) {
            if (retained == null) {
                return;
            }
            long entry = entry(i);
            int from = ALL.get(ValueLayout.JAVA_INT, entry);
            int to = ALL.get(ValueLayout.JAVA_INT, entry + 4);
            for (int b = from; b < to; b++) {
                try {
                    retained[b].getReferenceManager().release();
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: dropping an exported Arrow buffer failed", t);
                }
            }
        }
    }
}
