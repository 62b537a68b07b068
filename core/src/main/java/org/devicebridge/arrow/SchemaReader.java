package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowDataType.Layout;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.FieldPath;
import org.devicebridge.internal.Native;

/** Reads and validates an {@code ArrowSchema} tree into {@link SchemaNode}s. Never retains struct pointers. */
final class SchemaReader {
    /** Deepest nesting accepted (children and dictionaries), as a cap against hostile input. */
    static final int MAX_DEPTH = FieldPath.MAX_DEPTH;
    private static final long KNOWN_FLAGS = SchemaNode.FLAG_DICTIONARY_ORDERED | SchemaNode.FLAG_NULLABLE
            | SchemaNode.FLAG_MAP_KEYS_SORTED;
    /** Upper bound on one metadata blob, so a corrupt count cannot make the reader walk memory for long. */
    private static final long MAX_METADATA_BYTES = 1L << 30;

    private final Set<Long> ancestors = new HashSet<>();

    private SchemaReader() {}

    /**
     * @param schema the (moved) root struct
     * @param originalAddress the producer's address of the root, so a child pointing back at it is a cycle
     */
    static SchemaNode read(MemorySegment schema, long originalAddress) {
        SchemaReader r = new SchemaReader();
        r.ancestors.add(originalAddress);
        return r.node(schema, "", 0);
    }

    private SchemaNode node(MemorySegment s, String path, int depth) {
        if (depth > MAX_DEPTH) {
            throw new ValidationException(Category.DEPTH, path, "expected nesting of at most " + MAX_DEPTH
                    + " levels but found more");
        }
        if ((s.address() & (ValueLayout.ADDRESS.byteAlignment() - 1)) != 0) {
            // Children and dictionaries are read in place through aligned accessors (only the root is moved).
            throw new ValidationException(Category.ALIGNMENT, path, String.format(java.util.Locale.ROOT,
                    "expected an ArrowSchema aligned to %d bytes but found address 0x%x",
                    ValueLayout.ADDRESS.byteAlignment(), s.address()));
        }
        if (!ancestors.add(s.address())) {
            throw new ValidationException(Category.DEPTH, path,
                    "expected a tree but found a cycle (this ArrowSchema is its own ancestor)");
        }
        try {
            if (ArrowSchema.release(s).equals(MemorySegment.NULL)) {
                throw new ValidationException(Category.RELEASED, path, "expected a live ArrowSchema but found a released one");
            }
            MemorySegment formatPtr = ArrowSchema.format(s);
            if (formatPtr.equals(MemorySegment.NULL)) {
                throw new ValidationException(Category.NULL_POINTER, join(path, "format"),
                        "expected a format string but found NULL");
            }
            String format = Native.string(formatPtr);
            ArrowDataType type = ArrowFormat.parse(format, path);
            String name = Native.string(ArrowSchema.name(s));
            long flags = ArrowSchema.flags(s);
            checkFlags(type, flags, path);
            Map<String, String> metadata = metadata(ArrowSchema.metadata(s), join(path, "metadata"));

            long n = ArrowSchema.n_children(s);
            checkChildCount(type, n, path);
            List<SchemaNode> children = new ArrayList<>((int) n);
            if (n > 0) {
                MemorySegment ptrs = ArrowSchema.children(s);
                if (ptrs.equals(MemorySegment.NULL)) {
                    throw new ValidationException(Category.NULL_POINTER, join(path, "children"),
                            "expected " + n + " child pointers but found NULL");
                }
                ptrs = ptrs.reinterpret(Math.multiplyExact(n, ValueLayout.ADDRESS.byteSize()));
                for (int i = 0; i < n; i++) {
                    String cp = join(path, "children[" + i + "]");
                    MemorySegment c = ptrs.getAtIndex(ValueLayout.ADDRESS_UNALIGNED, i);
                    if (c.equals(MemorySegment.NULL)) {
                        throw new ValidationException(Category.NULL_POINTER, cp, "expected an ArrowSchema but found NULL");
                    }
                    children.add(node(c.reinterpret(ArrowSchema.sizeof()), cp, depth + 1));
                }
            }
            SchemaNode dictionary = null;
            MemorySegment d = ArrowSchema.dictionary(s);
            checkDictionary(type, flags, !d.equals(MemorySegment.NULL), path);
            if (!d.equals(MemorySegment.NULL)) {
                dictionary = node(d.reinterpret(ArrowSchema.sizeof()), join(path, "dictionary"), depth + 1);
            }
            checkChildren(type, children, path);
            return new SchemaNode(path, new SchemaNode.Fields(name, type, flags, metadata, children, dictionary));
        } finally {
            ancestors.remove(s.address());
        }
    }

    // The rules of one field, shared by this reader and by the fields Java code makes (SchemaNode.of and its withers).

    /** Only known flags, and {@code ARROW_FLAG_MAP_KEYS_SORTED} only on a map. */
    static void checkFlags(ArrowDataType type, long flags, String path) {
        if ((flags & ~KNOWN_FLAGS) != 0) {
            throw new ValidationException(Category.SCHEMA, join(path, "flags"),
                    String.format(java.util.Locale.ROOT, "expected only known flags (0x7) but found 0x%x", flags));
        }
        if ((flags & SchemaNode.FLAG_MAP_KEYS_SORTED) != 0 && type.id() != TypeId.MAP) {
            throw new ValidationException(Category.SCHEMA, join(path, "flags"),
                    "expected ARROW_FLAG_MAP_KEYS_SORTED only on a map but found it on " + type.format());
        }
    }

    /** {@code n} children, as many as the type takes, and few enough to index. */
    static void checkChildCount(ArrowDataType type, long n, String path) {
        int expected = expectedChildren(type);
        if (n < 0 || (expected >= 0 && n != expected)) {
            throw new ValidationException(n < 0 ? Category.SIZE : Category.STRUCTURE, join(path, "n_children"),
                    "expected " + (expected >= 0 ? expected : "a non-negative number of") + " children for format '"
                            + type.format() + "' but found " + n);
        }
        if (n > Integer.MAX_VALUE / 8) {
            throw new ValidationException(Category.SIZE, join(path, "n_children"), "expected at most "
                    + Integer.MAX_VALUE / 8 + " children but found " + n);
        }
    }

    /** A dictionary only on an integer (index) type, and {@code ARROW_FLAG_DICTIONARY_ORDERED} only with one. */
    static void checkDictionary(ArrowDataType type, long flags, boolean hasDictionary, String path) {
        if (hasDictionary && !type.id().isInteger()) {
            throw new ValidationException(Category.SCHEMA, join(path, "format"),
                    "expected an integer dictionary index type but found '" + type.format() + "'");
        }
        if (!hasDictionary && (flags & SchemaNode.FLAG_DICTIONARY_ORDERED) != 0) {
            throw new ValidationException(Category.SCHEMA, join(path, "flags"),
                    "expected ARROW_FLAG_DICTIONARY_ORDERED only on a dictionary-encoded field but found no dictionary");
        }
    }

    /** Fixed child count of a type, or -1 where any number is allowed (struct). */
    private static int expectedChildren(ArrowDataType type) {
        return switch (type.layout()) {
            case LIST, LARGE_LIST, LIST_VIEW, LARGE_LIST_VIEW, FIXED_SIZE_LIST -> 1;
            case RUN_END_ENCODED -> 2;
            case SPARSE_UNION, DENSE_UNION -> type.unionTypeIds().size();
            case STRUCT -> -1;
            default -> 0;
        };
    }

    /** The rules a type sets for its children (map entries, run ends). */
    static void checkChildren(ArrowDataType type, List<SchemaNode> children, String path) {
        if (type.id() == TypeId.MAP) {
            SchemaNode entries = children.get(0);
            if (entries.type().id() != TypeId.STRUCT || entries.children().size() != 2) {
                throw new ValidationException(Category.SCHEMA, join(path, "children[0]"),
                        "expected a map entries struct with 2 children but found " + entries.type()
                                + " with " + entries.children().size());
            }
            if (entries.nullable()) {
                throw new ValidationException(Category.SCHEMA, join(path, "children[0].flags"),
                        "expected non-nullable map entries but found ARROW_FLAG_NULLABLE");
            }
            if (entries.children().get(0).nullable()) {
                throw new ValidationException(Category.SCHEMA, join(path, "children[0].children[0].flags"),
                        "expected a non-nullable map key field but found ARROW_FLAG_NULLABLE");
            }
        }
        if (type.layout() == Layout.RUN_END_ENCODED) {
            TypeId r = children.get(0).type().id();
            if (r != TypeId.INT16 && r != TypeId.INT32 && r != TypeId.INT64) {
                throw new ValidationException(Category.SCHEMA, join(path, "children[0].format"),
                        "expected run ends of type int16, int32 or int64 but found " + children.get(0).type());
            }
            if (children.get(0).nullable()) {
                throw new ValidationException(Category.SCHEMA, join(path, "children[0].flags"),
                        "expected non-nullable run ends but found ARROW_FLAG_NULLABLE");
            }
        }
    }

    /** Parses the metadata blob: int32 count, then (int32 length, bytes) for each key and value. */
    static Map<String, String> metadata(MemorySegment p, String path) {
        if (p.equals(MemorySegment.NULL)) {
            return Map.of();
        }
        MemorySegment m = p.reinterpret(4);
        int count = m.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        if (count < 0) {
            throw new ValidationException(Category.METADATA, path, "expected a non-negative entry count but found " + count);
        }
        long pos = 4;
        Map<String, String> out = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            long[] cursor = {pos};
            String key = string(p, cursor, path, "key " + i);
            String value = string(p, cursor, path, "value " + i);
            pos = cursor[0];
            if (out.putIfAbsent(key, value) != null) {
                throw new ValidationException(Category.METADATA, path, "expected distinct keys but found '" + key + "' twice");
            }
        }
        return Collections.unmodifiableMap(out);
    }

    private static String string(MemorySegment base, long[] cursor, String path, String what) {
        long pos = cursor[0];
        long lenEnd = Math.addExact(pos, 4);
        if (lenEnd > MAX_METADATA_BYTES) {
            throw new ValidationException(Category.METADATA, path, "expected at most " + MAX_METADATA_BYTES
                    + " bytes of metadata but found more");
        }
        int len = base.reinterpret(lenEnd).get(ValueLayout.JAVA_INT_UNALIGNED, pos);
        if (len < 0) {
            throw new ValidationException(Category.METADATA, path,
                    "expected a non-negative length of " + what + " but found " + len);
        }
        long end = Math.addExact(lenEnd, len);
        if (end > MAX_METADATA_BYTES) {
            throw new ValidationException(Category.METADATA, path, "expected at most " + MAX_METADATA_BYTES
                    + " bytes of metadata but found " + what + " ending at byte " + end);
        }
        byte[] bytes = base.reinterpret(end).asSlice(lenEnd, len).toArray(ValueLayout.JAVA_BYTE);
        cursor[0] = end;
        return new String(bytes, StandardCharsets.UTF_8);
    }

    static String join(String path, String field) {
        return FieldPath.join(path, field);
    }
}
