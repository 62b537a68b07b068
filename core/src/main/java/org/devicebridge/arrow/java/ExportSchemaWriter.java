package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.ValidationException;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;

/**
 * Fills an ArrowSchema tree from an Arrow Java {@link Field}: everything is computed and checked first,
 * then one malloc block receives the child structs, child pointer arrays and strings, and only then is
 * the root struct written. A failure leaves the output untouched and holds nothing.
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

    private ExportSchemaWriter() {}

    private static final class Plan {
        byte[] format;
        byte[] name;
        byte[] metadata;
        long flags;
        final List<Plan> children = new ArrayList<>();
        Plan dictionary;
        long structOff = -1; // -1: the root, in the caller's struct
        long childrenOff;
        long formatOff;
        long nameOff;
        long metadataOff;
    }

    /** The record batch schema as the C interface has it: a non-nullable struct with the schema's metadata. */
    static Field asStructField(Schema schema) {
        return new Field("", new FieldType(false, ArrowType.Struct.INSTANCE, null, schema.getCustomMetadata()),
                schema.getFields());
    }

    static void export(Field field, DictionaryProvider provider, MemorySegment out) {
        List<Plan> all = new ArrayList<>();
        Plan root = plan(field, provider, "", 0, all);
        long size = 0;
        for (Plan p : all) {
            if (p != root) {
                p.structOff = size;
                size += ExportRuntime.SCHEMA_SIZE;
            }
            p.childrenOff = size;
            size = Math.addExact(size, 8L * p.children.size());
            p.formatOff = size;
            size = Math.addExact(size, align8(p.format.length + 1L));
            p.nameOff = size;
            size = Math.addExact(size, align8(p.name.length + 1L));
            p.metadataOff = size;
            size = Math.addExact(size, align8(p.metadata == null ? 0 : p.metadata.length));
        }
        MemorySegment block = Native.malloc(size);
        long base = block.address();
        ExportRuntime.Block owner = new ExportRuntime.Block(base, all.size());
        long[] keys = new long[all.size()];
        // Strings and pointer arrays first; registration last, so nothing can fail after a key exists.
        for (int i = 0; i < all.size(); i++) {
            Plan p = all.get(i);
            MemorySegment.copy(p.format, 0, block, ValueLayout.JAVA_BYTE, p.formatOff, p.format.length);
            block.set(ValueLayout.JAVA_BYTE, p.formatOff + p.format.length, (byte) 0);
            MemorySegment.copy(p.name, 0, block, ValueLayout.JAVA_BYTE, p.nameOff, p.name.length);
            block.set(ValueLayout.JAVA_BYTE, p.nameOff + p.name.length, (byte) 0);
            if (p.metadata != null) {
                MemorySegment.copy(p.metadata, 0, block, ValueLayout.JAVA_BYTE, p.metadataOff, p.metadata.length);
            }
            for (int c = 0; c < p.children.size(); c++) {
                block.set(ValueLayout.JAVA_LONG, p.childrenOff + 8L * c, base + p.children.get(c).structOff);
            }
        }
        for (int i = 0; i < all.size(); i++) {
            Plan p = all.get(i);
            long[] dependents = new long[p.children.size() + (p.dictionary == null ? 0 : 1)];
            for (int c = 0; c < p.children.size(); c++) {
                dependents[c] = base + p.children.get(c).structOff;
            }
            if (p.dictionary != null) {
                dependents[dependents.length - 1] = base + p.dictionary.structOff;
            }
            keys[i] = ExportRuntime.SCHEMAS.register(new ExportRuntime.Node(owner, null, dependents));
        }
        for (int i = 0; i < all.size(); i++) {
            Plan p = all.get(i);
            MemorySegment s = p == root ? out : block.asSlice(p.structOff, ExportRuntime.SCHEMA_SIZE);
            write(s, p, base, keys[i]);
        }
    }

    private static void write(MemorySegment s, Plan p, long base, long key) {
        s.set(ValueLayout.JAVA_LONG, FORMAT, base + p.formatOff);
        s.set(ValueLayout.JAVA_LONG, NAME, base + p.nameOff);
        s.set(ValueLayout.JAVA_LONG, METADATA, p.metadata == null ? 0L : base + p.metadataOff);
        s.set(ValueLayout.JAVA_LONG, FLAGS, p.flags);
        s.set(ValueLayout.JAVA_LONG, N_CHILDREN, p.children.size());
        s.set(ValueLayout.JAVA_LONG, CHILDREN, p.children.isEmpty() ? 0L : base + p.childrenOff);
        s.set(ValueLayout.JAVA_LONG, DICTIONARY, p.dictionary == null ? 0L : base + p.dictionary.structOff);
        s.set(ValueLayout.JAVA_LONG, PRIVATE, key);
        s.set(ValueLayout.JAVA_LONG, RELEASE, ExportRuntime.RELEASE_SCHEMA.address());
    }

    private static long align8(long n) {
        return Math.addExact(n, 7L) & ~7L;
    }

    private static Plan plan(Field field, DictionaryProvider provider, String path, int depth, List<Plan> all) {
        if (depth > FieldPath.MAX_DEPTH) {
            throw new ValidationException(ValidationException.Category.DEPTH, path,
                    "the schema nests deeper than " + FieldPath.MAX_DEPTH + " levels (or a dictionary refers back to itself)");
        }
        Plan p = new Plan();
        all.add(p);
        List<Field> children = field.getChildren() == null ? List.of() : field.getChildren();
        p.format = ExportFormats.format(field.getType(), children.size(), path)
                .getBytes(StandardCharsets.UTF_8);
        p.name = (field.getName() == null ? "" : field.getName()).getBytes(StandardCharsets.UTF_8);
        p.metadata = ExportFormats.encodeMetadata(ExportFormats.metadata(field));
        p.flags = ExportFormats.flags(field);
        DictionaryEncoding encoding = field.getDictionary();
        if (encoding != null) {
            checkIndexType(field, encoding, path);
            Dictionary dictionary = lookup(provider, encoding, path);
            p.dictionary = plan(dictionary.getVector().getField(), provider, FieldPath.join(path, "dictionary"), depth + 1, all);
        }
        for (int i = 0; i < children.size(); i++) {
            p.children.add(plan(children.get(i), provider, FieldPath.join(path, "children[" + i + "]"), depth + 1, all));
        }
        return p;
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
