package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.foreign.OutStructs;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.ArrowMetadata;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Native;

/**
 * Writes the FFM-only exports: a checked {@link ArrayData} tree as {@code ArrowArray} structs, a
 * {@link SchemaNode} tree as {@code ArrowSchema} structs. Everything that can fail (the checks, the sizes, the
 * allocation, the registration) happens before anything is written, so a throw leaves the caller's struct
 * untouched and holds nothing; then one malloc block receives every struct but the root (the caller's) with its
 * pointer arrays and strings, and the root is written last. Released through {@link ExportTree}: nodes are
 * numbered in the pre-order of the schema's {@link SchemaLayout}, and the export's owner is closed once the
 * block is freed.
 */
final class FfmExportWriter {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    private static final MemorySegment ALL = ArrowArrayFields.BY_ADDRESS;

    private FfmExportWriter() {}

    /** One FFM-only export: dependents from its {@link SchemaLayout}, no buffers held, an optional owner. */
    private static final class Tree extends ExportTree {
        private final SchemaLayout layout;
        private final AutoCloseable owner;

        Tree(Kind kind, long base, SchemaLayout layout, AutoCloseable owner) {
            super(kind, base, layout.size());
            this.layout = layout;
            this.owner = owner;
        }

        /** Writes the addresses of node {@code i}'s children's structs, in order, at {@code at}. */
        void writeChildPointers(int i, long at) {
            for (int c = 0; c < layout.childCount(i); c++) {
                ALL.set(ValueLayout.JAVA_LONG, at + 8L * c, struct(layout.child(i, c)));
            }
        }

        @Override
        protected int dependentCount(int i) {
            return layout.childCount(i) + (layout.dictionary(i) < 0 ? 0 : 1);
        }

        @Override
        protected int dependent(int i, int k) {
            return k < layout.childCount(i) ? layout.child(i, k) : layout.dictionary(i);
        }

        @Override
        protected void releaseHeld(int i) {
            // the buffers are the owner's: it is closed once, in freed()
        }

        @Override
        protected void freed() {
            if (owner == null) {
                return;
            }
            try {
                owner.close();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "devicebridge: closing the owner of an exported "
                        + kind.name + " failed (on the consumer's release)", t);
            }
        }
    }

    /** {@link ArrowC#exportArray}: its arguments checked for NULL, nothing else. */
    static void exportArray(SchemaNode schema, ArrayData data, MemorySegment out, AutoCloseable owner) {
        MemorySegment root = OutStructs.sized(out, ArrowArray.sizeof(), "out");
        ArrayTable t = ArrayDataReader.read(schema, data, ValidationLevel.MINIMAL, false);
        SchemaLayout layout = t.layout;
        int nodes = layout.size();
        long size = Math.multiplyExact(nodes - 1L, ExportTree.ARRAY.size);
        for (int i = 0; i < nodes; i++) {
            size = Math.addExact(size, 8L * Math.max(1, t.bufferCount(i))); // buffers is never NULL, even for none
            size = Math.addExact(size, 8L * layout.childCount(i));
        }
        Tree tree = register(ExportTree.ARRAY, size, layout, owner);
        // Registered: from here on nothing can fail, only memory is written.
        long cursor = tree.base + (nodes - 1L) * ExportTree.ARRAY.size;
        for (int i = nodes - 1; i >= 0; i--) { // the root, the caller's struct, last
            int nb = t.bufferCount(i);
            int nc = layout.childCount(i);
            long buffers = cursor;
            long children = buffers + 8L * Math.max(1, nb);
            cursor = children + 8L * nc;
            ALL.set(ValueLayout.JAVA_LONG, buffers, 0L);
            for (int b = 0; b < nb; b++) {
                ALL.set(ValueLayout.JAVA_LONG, buffers + 8L * b, t.bufferAddress(i, b));
            }
            tree.writeChildPointers(i, children);
            int dictionary = layout.dictionary(i);
            long s = i == 0 ? root.address() : tree.struct(i);
            set(s, ArrowArrayFields.LENGTH, t.length(i));
            set(s, ArrowArrayFields.NULL_COUNT, t.nullCount(i));
            set(s, ArrowArrayFields.OFFSET, t.offset(i));
            set(s, ArrowArrayFields.N_BUFFERS, nb);
            set(s, ArrowArrayFields.N_CHILDREN, nc);
            set(s, ArrowArrayFields.BUFFERS, buffers);
            set(s, ArrowArrayFields.CHILDREN, nc == 0 ? 0L : children);
            set(s, ArrowArrayFields.DICTIONARY, dictionary < 0 ? 0L : tree.struct(dictionary));
            set(s, ArrowArrayFields.PRIVATE_DATA, tree.privateData(i));
            set(s, ArrowArrayFields.RELEASE, ExportTree.ARRAY.stub);
        }
    }

    /** {@link ArrowC#exportSchema}: its arguments checked for NULL, nothing else. */
    static void exportSchema(SchemaNode schema, MemorySegment out) {
        MemorySegment root = OutStructs.sized(out, ArrowSchema.sizeof(), "out");
        SchemaLayout layout = schema.layout();
        int nodes = layout.size();
        byte[][] format = new byte[nodes][];
        byte[][] name = new byte[nodes][];
        byte[][] metadata = new byte[nodes][];
        long size = Math.multiplyExact(nodes - 1L, ExportTree.SCHEMA.size);
        for (int i = 0; i < nodes; i++) {
            SchemaNode n = layout.schema(i);
            format[i] = n.format().getBytes(StandardCharsets.UTF_8);
            name[i] = n.name() == null ? null : n.name().getBytes(StandardCharsets.UTF_8);
            metadata[i] = metadata(n);
            size = Math.addExact(size, 8L * layout.childCount(i));
            size = Math.addExact(size, align8(format[i].length + 1L));
            size = Math.addExact(size, name[i] == null ? 0 : align8(name[i].length + 1L));
            size = Math.addExact(size, metadata[i] == null ? 0 : align8(metadata[i].length));
        }
        Tree tree = register(ExportTree.SCHEMA, size, layout, null);
        // Registered: from here on nothing can fail, only memory is written.
        long cursor = tree.base + (nodes - 1L) * ExportTree.SCHEMA.size;
        for (int i = nodes - 1; i >= 0; i--) { // the root, the caller's struct, last
            SchemaNode n = layout.schema(i);
            int nc = layout.childCount(i);
            long children = cursor;
            long formatAt = children + 8L * nc;
            long nameAt = formatAt + align8(format[i].length + 1L);
            long metadataAt = nameAt + (name[i] == null ? 0 : align8(name[i].length + 1L));
            cursor = metadataAt + (metadata[i] == null ? 0 : align8(metadata[i].length));
            tree.writeChildPointers(i, children);
            writeString(format[i], formatAt);
            if (name[i] != null) {
                writeString(name[i], nameAt);
            }
            if (metadata[i] != null) {
                MemorySegment.copy(metadata[i], 0, ALL, ValueLayout.JAVA_BYTE, metadataAt, metadata[i].length);
            }
            int dictionary = layout.dictionary(i);
            long s = i == 0 ? root.address() : tree.struct(i);
            set(s, ArrowSchema.format$offset(), formatAt);
            set(s, ArrowSchema.name$offset(), name[i] == null ? 0L : nameAt);
            set(s, ArrowSchema.metadata$offset(), metadata[i] == null ? 0L : metadataAt);
            set(s, ArrowSchema.flags$offset(), n.flags());
            set(s, ArrowSchema.n_children$offset(), nc);
            set(s, ArrowSchema.children$offset(), nc == 0 ? 0L : children);
            set(s, ArrowSchema.dictionary$offset(), dictionary < 0 ? 0L : tree.struct(dictionary));
            set(s, ArrowSchema.private_data$offset(), tree.privateData(i));
            set(s, ArrowSchema.release$offset(), ExportTree.SCHEMA.stub);
        }
    }

    /** Allocates the block and registers its tree; on a throw nothing is left allocated or registered. */
    private static Tree register(ExportTree.Kind kind, long size, SchemaLayout layout, AutoCloseable owner) {
        long base = Native.malloc(size).address();
        Tree tree = new Tree(kind, base, layout, owner);
        try {
            tree.register();
        } catch (RuntimeException | Error e) {
            Native.free(MemorySegment.ofAddress(base));
            throw e;
        }
        return tree;
    }

    private static void set(long struct, long field, long value) {
        ALL.set(ValueLayout.JAVA_LONG, struct + field, value);
    }

    private static void writeString(byte[] bytes, long address) {
        MemorySegment.copy(bytes, 0, ALL, ValueLayout.JAVA_BYTE, address, bytes.length);
        ALL.set(ValueLayout.JAVA_BYTE, address + bytes.length, (byte) 0);
    }

    private static long align8(long n) {
        return Math.addExact(n, 7) & ~7L;
    }

    /** The node's metadata encoded, or {@code null}; a refusal is the schema export's own error. */
    private static byte[] metadata(SchemaNode n) {
        try {
            return ArrowMetadata.encode(n.metadata());
        } catch (IllegalArgumentException e) {
            throw new ValidationException(ValidationException.Category.METADATA, n.path(), e.getMessage());
        }
    }
}
