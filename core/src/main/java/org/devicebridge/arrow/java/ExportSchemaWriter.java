package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;

/**
 * Fills an ArrowSchema tree from an Arrow Java {@link Schema} or {@link Field}: everything is computed
 * and checked first into the thread's reused {@link Plan}, then one malloc block receives the child
 * structs, child pointer arrays, strings and the node table, the tree is registered, and only then are
 * the structs written. A failure leaves the output untouched and holds nothing.
 */
final class ExportSchemaWriter {
    private static final long FORMAT = ArrowSchema.format$offset();
    private static final long NAME = ArrowSchema.name$offset();
    private static final long METADATA = ArrowSchema.metadata$offset();
    private static final long FLAGS = ArrowSchema.flags$offset();
    private static final long N_CHILDREN = ArrowSchema.n_children$offset();
    private static final long CHILDREN = ArrowSchema.children$offset();
    private static final long DICTIONARY = ArrowSchema.dictionary$offset();
    private static final long RELEASE = ArrowSchema.release$offset();
    private static final long PRIVATE = ArrowSchema.private_data$offset();
    private static final MemorySegment ALL = ExportRuntime.ALL;

    private static final ThreadLocal<Plan> PLANS = ThreadLocal.withInitial(Plan::new);

    private ExportSchemaWriter() {}

    /** One schema export, planned: per node its strings (ASCII {@code String}s or UTF-8 bytes), metadata and flags. */
    static final class Plan extends ExportPlan {
        Object[] format = new Object[16];
        Object[] name = new Object[16];
        byte[][] metadata = new byte[16][];
        long[] flags = new long[16];

        @Override
        void growNodes(int capacity) {
            format = Arrays.copyOf(format, capacity);
            name = Arrays.copyOf(name, capacity);
            metadata = Arrays.copyOf(metadata, capacity);
            flags = Arrays.copyOf(flags, capacity);
        }

        @Override
        void reset() {
            Arrays.fill(format, 0, nodes, null);
            Arrays.fill(name, 0, nodes, null);
            Arrays.fill(metadata, 0, nodes, null);
            super.reset();
        }
    }

    private static Plan plan() {
        Plan p = PLANS.get();
        if (p.busy) {
            return new Plan();
        }
        p.busy = true;
        return p;
    }

    /** Exports {@code schema} as the C interface has a record batch schema: a non-nullable struct with its metadata. */
    static void export(Schema schema, DictionaryProvider provider, MemorySegment out) {
        Plan p = plan();
        try {
            p.reserveRoot();
            List<Field> fields = schema.getFields();
            p.format[0] = text(ExportFormats.format(ArrowType.Struct.INSTANCE, fields.size(), p, 0));
            p.name[0] = "";
            p.metadata[0] = ExportFormats.encodeMetadata(schema.getCustomMetadata());
            p.flags[0] = 0;
            int first = p.reserveDependents(0, fields.size(), false);
            for (int i = 0; i < fields.size(); i++) {
                planField(p, first + i, fields.get(i), provider);
            }
            write(p, out);
        } finally {
            p.reset();
            p.busy = false;
        }
    }

    /** Exports one field (its type, name, flags, metadata, children and dictionary) into {@code out}. */
    static void export(Field field, DictionaryProvider provider, MemorySegment out) {
        Plan p = plan();
        try {
            p.reserveRoot();
            planField(p, 0, field, provider);
            write(p, out);
        } finally {
            p.reset();
            p.busy = false;
        }
    }

    private static void write(Plan p, MemorySegment out) {
        int nodes = p.nodes;
        long size = Math.multiplyExact(nodes - 1L, ExportRuntime.SCHEMA_SIZE);
        for (int i = 0; i < nodes; i++) {
            size = Math.addExact(size, 8L * p.childCount[i]);
            size = Math.addExact(size, ExportPlan.align8(length(p.format[i]) + 1L));
            size = Math.addExact(size, ExportPlan.align8(length(p.name[i]) + 1L));
            size = Math.addExact(size, ExportPlan.align8(p.metadata[i] == null ? 0 : p.metadata[i].length));
        }
        long table = size;
        size = Math.addExact(size, p.tableBytes());
        long base = Native.malloc(size).address();
        ExportRuntime.Tree tree = new ExportRuntime.Tree(ExportTree.SCHEMA, base, table, nodes, null);
        long privateData;
        try {
            privateData = tree.register();
        } catch (RuntimeException | Error e) {
            Native.free(MemorySegment.ofAddress(base));
            throw e;
        }
        // Registered: from here on nothing can fail, only memory is written.
        long cursor = base + (nodes - 1L) * ExportRuntime.SCHEMA_SIZE;
        long stub = ExportTree.SCHEMA.stub;
        for (int i = 0; i < nodes; i++) {
            int nc = p.childCount[i];
            long children = cursor;
            long format = children + 8L * nc;
            long name = format + ExportPlan.align8(length(p.format[i]) + 1L);
            long metadata = name + ExportPlan.align8(length(p.name[i]) + 1L);
            cursor = metadata + ExportPlan.align8(p.metadata[i] == null ? 0 : p.metadata[i].length);
            int firstChild = p.firstDependent[i];
            for (int c = 0; c < nc; c++) {
                ALL.set(ValueLayout.JAVA_LONG, children + 8L * c, tree.struct(firstChild + c));
            }
            writeText(p.format[i], format);
            writeText(p.name[i], name);
            if (p.metadata[i] != null) {
                MemorySegment.copy(p.metadata[i], 0, ALL, ValueLayout.JAVA_BYTE, metadata, p.metadata[i].length);
            }
            p.writeTableEntry(base + table, i, 0, 0);
            int dictionary = p.dictionaryOf(i);
            MemorySegment s = i == 0 ? out : ALL;
            long at = i == 0 ? 0 : tree.struct(i);
            s.set(ValueLayout.JAVA_LONG, at + FORMAT, format);
            s.set(ValueLayout.JAVA_LONG, at + NAME, name);
            s.set(ValueLayout.JAVA_LONG, at + METADATA, p.metadata[i] == null ? 0L : metadata);
            s.set(ValueLayout.JAVA_LONG, at + FLAGS, p.flags[i]);
            s.set(ValueLayout.JAVA_LONG, at + N_CHILDREN, nc);
            s.set(ValueLayout.JAVA_LONG, at + CHILDREN, nc == 0 ? 0L : children);
            s.set(ValueLayout.JAVA_LONG, at + DICTIONARY, dictionary < 0 ? 0L : tree.struct(dictionary));
            s.set(ValueLayout.JAVA_LONG, at + PRIVATE, privateData + i);
            s.set(ValueLayout.JAVA_LONG, at + RELEASE, stub);
        }
    }

    /** {@code s} as written into the block: itself when it is ASCII (one byte per char), else its UTF-8 bytes. */
    private static Object text(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                return s.getBytes(StandardCharsets.UTF_8);
            }
        }
        return s;
    }

    private static int length(Object text) {
        return text instanceof String s ? s.length() : ((byte[]) text).length;
    }

    /** Writes {@code text} and a NUL terminator at {@code address}. */
    private static void writeText(Object text, long address) {
        int n;
        if (text instanceof String s) {
            n = s.length();
            for (int i = 0; i < n; i++) {
                ALL.set(ValueLayout.JAVA_BYTE, address + i, (byte) s.charAt(i));
            }
        } else {
            byte[] b = (byte[]) text;
            n = b.length;
            MemorySegment.copy(b, 0, ALL, ValueLayout.JAVA_BYTE, address, n);
        }
        ALL.set(ValueLayout.JAVA_BYTE, address + n, (byte) 0);
    }

    /** Plans node {@code node} (already reserved) from {@code field}, then its dictionary and children. */
    private static void planField(Plan p, int node, Field field, DictionaryProvider provider) {
        if (p.depth(node) > FieldPath.MAX_DEPTH) {
            throw new ValidationException(ValidationException.Category.DEPTH, p.path(node),
                    "the schema nests deeper than " + FieldPath.MAX_DEPTH + " levels (or a dictionary refers back to itself)");
        }
        List<Field> children = field.getChildren() == null ? List.of() : field.getChildren();
        p.format[node] = text(ExportFormats.format(field.getType(), children.size(), p, node));
        p.name[node] = text(field.getName() == null ? "" : field.getName());
        Map<String, String> metadata = ExportFormats.metadata(field);
        p.metadata[node] = ExportFormats.encodeMetadata(metadata);
        p.flags[node] = ExportFormats.flags(field);
        DictionaryEncoding encoding = field.getDictionary();
        Dictionary dictionary = null;
        if (encoding != null) {
            checkIndexType(field, encoding, p.path(node));
            dictionary = lookup(provider, encoding, p.path(node));
        }
        int first = p.reserveDependents(node, children.size(), dictionary != null);
        if (dictionary != null) {
            planField(p, first + children.size(), VectorFields.of(dictionary.getVector()), provider);
        }
        for (int i = 0; i < children.size(); i++) {
            planField(p, first + i, children.get(i), provider);
        }
    }

    /** In Arrow Java's in-memory form, a dictionary-encoded field's type is its index type. */
    static void checkIndexType(Field field, DictionaryEncoding encoding, String path) {
        if (!(field.getType() instanceof ArrowType.Int)) {
            throw new ValidationException(ValidationException.Category.SCHEMA, path,
                    "a dictionary-encoded field must have an integer (index) type but found " + field.getType());
        }
        if (encoding.getIndexType() != null && !encoding.getIndexType().equals(field.getType())) {
            throw new ValidationException(ValidationException.Category.SCHEMA, path,
                    "expected index type " + encoding.getIndexType() + " but found " + field.getType());
        }
    }

    static Dictionary lookup(DictionaryProvider provider, DictionaryEncoding encoding, String path) {
        if (provider == null) {
            throw new ValidationException(ValidationException.Category.SCHEMA, path,
                    "dictionary-encoded (id " + encoding.getId() + ") but no DictionaryProvider was given");
        }
        Dictionary d = provider.lookup(encoding.getId());
        if (d == null || d.getVector() == null) {
            throw new ValidationException(ValidationException.Category.SCHEMA, path,
                    "dictionary id " + encoding.getId() + " not found in the DictionaryProvider");
        }
        return d;
    }
}
