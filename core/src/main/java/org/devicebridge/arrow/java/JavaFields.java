package org.devicebridge.arrow.java;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.IntervalUnit;
import org.apache.arrow.vector.types.UnionMode;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.arrow.ArrowDataType;
import org.devicebridge.arrow.ArrowDataType.TypeId;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.SchemaNode;

/**
 * Maps parsed schemas ({@link SchemaNode}) to Arrow Java {@link Field}s. Dictionary ids are assigned in
 * depth-first order from a first id. The mapping of a schema without dictionaries is cached per thread
 * ({@link #of}): importing the same schema again, or an equal one (the schema exported with every batch),
 * reuses its fields (Arrow Java's fields are immutable) instead of building them again.
 *
 * <p>The fields are plain {@link Field}s, as arrow-c-data makes them (Arrow Java's {@code Field} is not made
 * for subclassing: a subclass serialises to other JSON and is another class to whoever inspects it). What the
 * mapping reuses is kept here, beside the fields; a field's hash code is Arrow Java's, recomputed where
 * Arrow Java asks for it. A field whose {@code ARROW:extension:name} is registered in Arrow Java's
 * {@link ExtensionTypeRegistry} gets that extension type, as arrow-c-data's import gives it; an unregistered
 * name keeps the storage type and the metadata. A dictionary-encoded field keeps its index type and its
 * metadata: Arrow Java has no extension type over a dictionary.
 */
final class JavaFields {
    /** The last dictionary-free mapping made on this thread (one entry: a stream imports one schema). */
    private static final ThreadLocal<Mapping> LAST = new ThreadLocal<>();

    private long nextDictionaryId;
    /** The value field of each dictionary, as mapped with the ids of the whole tree. */
    private final IdentityHashMap<SchemaNode, Field> dictionaryValueFields = new IdentityHashMap<>();
    /** Every extension name looked up while mapping, and what the registry gave for it ({@code null}: none). */
    private final List<String> extensionNames = new ArrayList<>(0);
    private final List<ArrowType.ExtensionType> extensionTypes = new ArrayList<>(0);

    private JavaFields(long firstDictionaryId) {
        this.nextDictionaryId = firstDictionaryId;
    }

    /**
     * The Arrow Java fields of one schema tree: the root's field, the value field of each dictionary (keyed by
     * the dictionary's node of {@link #schema}), and facts the importer asks of every batch.
     */
    static final class Mapping {
        final SchemaNode schema;
        final long firstDictionaryId;
        /** The exact field of the schema: names, metadata and type ids as the producer declared them. */
        final Field root;
        /** The field the root vector is made from ({@link VectorFields#build}): {@link #root} where Arrow Java holds it. */
        final Field buildRoot;
        /** The fields the vectors of a record batch (the root's children) are made from. */
        final List<Field> buildChildren;
        final Map<SchemaNode, Field> dictionaryValueFields;
        /** The fields the dictionaries' value vectors are made from, keyed as {@link #dictionaryValueFields}. */
        final Map<SchemaNode, Field> dictionaryBuildFields;
        final boolean hasDictionary;
        final boolean hasRunEndEncoded;
        /** The extension names the mapping looked up, and the registry's answer for each when it was made. */
        private final String[] extensionNames;
        private final ArrowType.ExtensionType[] extensionTypes;
        /** The root's children as a schema (a record batch's), made on first use. */
        private Schema childSchema;

        private Mapping(SchemaNode schema, long firstDictionaryId, Field root, Map<SchemaNode, Field> dictionaryValueFields,
                        JavaFields mapper) {
            this.schema = schema;
            this.extensionNames = mapper.extensionNames.toArray(new String[0]);
            this.extensionTypes = mapper.extensionTypes.toArray(new ArrowType.ExtensionType[0]);
            this.firstDictionaryId = firstDictionaryId;
            this.root = root;
            this.buildRoot = VectorFields.build(root);
            List<Field> children = new ArrayList<>(root.getChildren().size());
            for (Field c : root.getChildren()) {
                children.add(VectorFields.build(c));
            }
            this.buildChildren = children;
            this.dictionaryValueFields = dictionaryValueFields;
            if (dictionaryValueFields.isEmpty()) {
                this.dictionaryBuildFields = Map.of();
            } else {
                IdentityHashMap<SchemaNode, Field> build = new IdentityHashMap<>();
                dictionaryValueFields.forEach((node, field) -> build.put(node, VectorFields.build(field)));
                this.dictionaryBuildFields = build;
            }
            this.hasDictionary = !dictionaryValueFields.isEmpty();
            this.hasRunEndEncoded = hasRunEndEncoded(schema);
        }

        /** {@code true} while Arrow Java's extension registry gives what it gave when this mapping was made. */
        boolean registryUnchanged() {
            for (int i = 0; i < extensionNames.length; i++) {
                if (ExtensionTypeRegistry.lookup(extensionNames[i]) != extensionTypes[i]) {
                    return false;
                }
            }
            return true;
        }

        /**
         * The schema of a record batch of this struct type: the root's children, exactly as declared (names,
         * type ids), and the root's metadata as the schema's, as Arrow Java's IPC reader keeps them.
         */
        Schema childSchema() {
            Schema s = childSchema;
            if (s == null) {
                s = new Schema(root.getChildren(), root.getMetadata());
                childSchema = s;
            }
            return s;
        }
    }

    /** The field of {@code schema}, dictionary ids from 0. */
    static Field field(SchemaNode schema) {
        return new JavaFields(0).field0(schema);
    }

    /**
     * The mapping of {@code schema} with dictionary ids from {@code firstDictionaryId}: this thread's last
     * one when it was made for this schema or an equal one without dictionaries, else a new one. Every type
     * maps (what Arrow Java cannot then hold exactly is refused when the vectors are loaded).
     */
    static Mapping of(SchemaNode schema, long firstDictionaryId) {
        Mapping last = LAST.get();
        if (last != null && (last.schema == schema || sameShape(last.schema, schema)) && last.registryUnchanged()) {
            return last;
        }
        JavaFields mapper = new JavaFields(firstDictionaryId);
        Field root = mapper.field0(schema);
        Mapping m = new Mapping(schema, firstDictionaryId,
                root, mapper.dictionaryValueFields.isEmpty() ? Map.of() : mapper.dictionaryValueFields, mapper);
        if (!m.hasDictionary) {
            LAST.set(m);
        }
        return m;
    }

    /**
     * {@code true} if {@code a} and {@code b} map to the same Arrow Java fields: equal names, formats, flags
     * and metadata all the way down, and no dictionary anywhere (dictionary ids depend on the import).
     */
    private static boolean sameShape(SchemaNode a, SchemaNode b) {
        if (a.dictionary() != null || b.dictionary() != null || a.flags() != b.flags()
                || !Objects.equals(a.name(), b.name()) || !a.format().equals(b.format())
                || !a.metadata().equals(b.metadata())) {
            return false;
        }
        List<SchemaNode> ac = a.children();
        List<SchemaNode> bc = b.children();
        if (ac.size() != bc.size()) {
            return false;
        }
        for (int i = 0; i < ac.size(); i++) {
            if (!sameShape(ac.get(i), bc.get(i))) {
                return false;
            }
        }
        return true;
    }

    private static boolean hasRunEndEncoded(SchemaNode s) {
        if (s.type().id() == TypeId.RUN_END_ENCODED) {
            return true;
        }
        if (s.dictionary() != null && hasRunEndEncoded(s.dictionary())) {
            return true;
        }
        List<SchemaNode> children = s.children();
        for (int i = 0; i < children.size(); i++) {
            if (hasRunEndEncoded(children.get(i))) {
                return true;
            }
        }
        return false;
    }

    private Field field0(SchemaNode s) {
        List<Field> children = new ArrayList<>();
        DictionaryEncoding encoding = null;
        ArrowType type = type(s);
        if (s.dictionary() != null) {
            // Arrow Java's convention for an encoded vector: the index type plus the encoding; the
            // dictionary's value field is mapped (and checked) here and again when it is loaded.
            encoding = new DictionaryEncoding(nextDictionaryId++,
                    (s.flags() & SchemaNode.FLAG_DICTIONARY_ORDERED) != 0, (ArrowType.Int) type);
            dictionaryValueFields.put(s.dictionary(), field0(s.dictionary()));
        }
        for (SchemaNode c : s.children()) {
            children.add(field0(c));
        }
        Map<String, String> metadata = s.metadata().isEmpty() ? null : s.metadata();
        if (encoding == null && metadata != null) {
            type = extension(s, type, metadata);
        }
        return new Field(s.name() == null ? "" : s.name(), new FieldType(s.nullable(), type, encoding, metadata),
                children);
    }

    /**
     * {@code storage}, or the extension type Arrow Java has registered under the field's
     * {@code ARROW:extension:name} (deserialized with its {@code ARROW:extension:metadata}), as arrow-c-data's
     * import makes it. An unregistered name keeps the storage type and the metadata, as Arrow does. Each name
     * looked up is noted with what the registry gave, so that a cached mapping is reused only while the
     * registry still gives the same.
     */
    private ArrowType extension(SchemaNode s, ArrowType storage, Map<String, String> metadata) {
        String name = metadata.get(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_NAME);
        if (name == null) {
            return storage;
        }
        ArrowType.ExtensionType registered = ExtensionTypeRegistry.lookup(name);
        extensionNames.add(name);
        extensionTypes.add(registered);
        if (registered == null) {
            return storage;
        }
        String serialized = metadata.getOrDefault(ArrowType.ExtensionType.EXTENSION_METADATA_KEY_METADATA, "");
        ArrowType type;
        String refusal;
        try {
            type = registered.deserialize(storage, serialized);
            refusal = "it returned null";
        } catch (RuntimeException e) {
            type = null;
            refusal = String.valueOf(e.getMessage());
        }
        if (type == null) {
            throw new UnsupportedFeatureException(s.path(), "expected storage and metadata the extension type '" + name
                    + "' registered in Arrow Java accepts but found " + storage + " with metadata '" + serialized
                    + "': " + refusal);
        }
        return type;
    }

    private static ArrowType type(SchemaNode s) {
        ArrowDataType t = s.type();
        return switch (t.id()) {
            case NULL -> ArrowType.Null.INSTANCE;
            case BOOL -> ArrowType.Bool.INSTANCE;
            case INT8 -> new ArrowType.Int(8, true);
            case UINT8 -> new ArrowType.Int(8, false);
            case INT16 -> new ArrowType.Int(16, true);
            case UINT16 -> new ArrowType.Int(16, false);
            case INT32 -> new ArrowType.Int(32, true);
            case UINT32 -> new ArrowType.Int(32, false);
            case INT64 -> new ArrowType.Int(64, true);
            case UINT64 -> new ArrowType.Int(64, false);
            case FLOAT16 -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF);
            case FLOAT32 -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case FLOAT64 -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            // Arrow Java 19 holds decimal32/64 as its own readers do: the declared type over a 16-byte
            // DecimalVector (the loader widens the values exactly).
            case DECIMAL32 -> new ArrowType.Decimal(t.precision(), t.scale(), 32);
            case DECIMAL64 -> new ArrowType.Decimal(t.precision(), t.scale(), 64);
            case DECIMAL128 -> new ArrowType.Decimal(t.precision(), t.scale(), 128);
            case DECIMAL256 -> new ArrowType.Decimal(t.precision(), t.scale(), 256);
            case DATE32 -> new ArrowType.Date(DateUnit.DAY);
            case DATE64 -> new ArrowType.Date(DateUnit.MILLISECOND);
            case TIME32 -> new ArrowType.Time(unit(t), 32);
            case TIME64 -> new ArrowType.Time(unit(t), 64);
            case TIMESTAMP -> new ArrowType.Timestamp(unit(t), t.timezone().isEmpty() ? null : t.timezone());
            case DURATION -> new ArrowType.Duration(unit(t));
            case INTERVAL_MONTHS -> new ArrowType.Interval(IntervalUnit.YEAR_MONTH);
            case INTERVAL_DAY_TIME -> new ArrowType.Interval(IntervalUnit.DAY_TIME);
            case INTERVAL_MONTH_DAY_NANO -> new ArrowType.Interval(IntervalUnit.MONTH_DAY_NANO);
            case BINARY -> ArrowType.Binary.INSTANCE;
            case UTF8 -> ArrowType.Utf8.INSTANCE;
            case LARGE_BINARY -> ArrowType.LargeBinary.INSTANCE;
            case LARGE_UTF8 -> ArrowType.LargeUtf8.INSTANCE;
            case BINARY_VIEW -> ArrowType.BinaryView.INSTANCE;
            case UTF8_VIEW -> ArrowType.Utf8View.INSTANCE;
            case FIXED_SIZE_BINARY -> {
                // valid Arrow (Arrow C++ accepts w:0), but Arrow Java's FixedSizeBinaryVector divides by the width
                if (t.fixedSize() == 0) {
                    throw new UnsupportedFeatureException(s.path(),
                            "fixed-size binary of width 0: Arrow Java's FixedSizeBinaryVector cannot hold it");
                }
                yield new ArrowType.FixedSizeBinary(t.fixedSize());
            }
            case LIST -> ArrowType.List.INSTANCE;
            case LARGE_LIST -> ArrowType.LargeList.INSTANCE;
            case LIST_VIEW -> ArrowType.ListView.INSTANCE;
            case LARGE_LIST_VIEW -> ArrowType.LargeListView.INSTANCE;
            case FIXED_SIZE_LIST -> new ArrowType.FixedSizeList(t.fixedSize());
            case STRUCT -> ArrowType.Struct.INSTANCE;
            case MAP -> new ArrowType.Map((s.flags() & SchemaNode.FLAG_MAP_KEYS_SORTED) != 0);
            case SPARSE_UNION -> new ArrowType.Union(UnionMode.Sparse, ids(t));
            case DENSE_UNION -> new ArrowType.Union(UnionMode.Dense, ids(t));
            case RUN_END_ENCODED -> ArrowType.RunEndEncoded.INSTANCE;
        };
    }

    private static int[] ids(ArrowDataType t) {
        return t.unionTypeIds().stream().mapToInt(Integer::intValue).toArray();
    }

    private static org.apache.arrow.vector.types.TimeUnit unit(ArrowDataType t) {
        return switch (t.unit()) {
            case SECONDS -> org.apache.arrow.vector.types.TimeUnit.SECOND;
            case MILLIS -> org.apache.arrow.vector.types.TimeUnit.MILLISECOND;
            case MICROS -> org.apache.arrow.vector.types.TimeUnit.MICROSECOND;
            case NANOS -> org.apache.arrow.vector.types.TimeUnit.NANOSECOND;
            // the format parser makes only these four
            default -> throw new IllegalStateException("time unit " + t.unit());
        };
    }
}
