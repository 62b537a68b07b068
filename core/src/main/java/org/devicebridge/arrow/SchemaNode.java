package org.devicebridge.arrow;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.ValidationException;

/**
 * One field of an {@code ArrowSchema}, parsed and validated: imported (plain Java data that stays usable
 * after the {@link ImportedSchema} it came from is closed) or made in Java with {@link #of}. Needs no Arrow Java.
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 */
public final class SchemaNode {
    /** {@code ARROW_FLAG_DICTIONARY_ORDERED}, as the ABI header defines it ({@code HeaderConstantsTest} pins it). */
    public static final long FLAG_DICTIONARY_ORDERED = 1;
    /** {@code ARROW_FLAG_NULLABLE}, as the ABI header defines it ({@code HeaderConstantsTest} pins it). */
    public static final long FLAG_NULLABLE = 2;
    /** {@code ARROW_FLAG_MAP_KEYS_SORTED}, as the ABI header defines it ({@code HeaderConstantsTest} pins it). */
    public static final long FLAG_MAP_KEYS_SORTED = 4;

    private final String path;
    private final String name;
    private final ArrowDataType type;
    private final long flags;
    private final Map<String, String> metadata;
    private final List<SchemaNode> children;
    private final SchemaNode dictionary;
    private volatile SchemaLayout layout; // the shape of arrays of this type, made on the first import

    /**
     * The fields of one {@code ArrowSchema} as the schema reader parsed and checked them ({@code name} may be
     * {@code null}; {@code dictionary} is {@code null} unless the field is dictionary-encoded).
     */
    record Fields(String name, ArrowDataType type, long flags, Map<String, String> metadata, List<SchemaNode> children,
                  SchemaNode dictionary) {}

    /** The node at field path {@code path} (empty for the root) with {@code fields}. */
    SchemaNode(String path, Fields fields) {
        this.path = path;
        this.name = fields.name();
        this.type = Objects.requireNonNull(fields.type());
        this.flags = fields.flags();
        this.metadata = fields.metadata();
        this.children = List.copyOf(fields.children());
        this.dictionary = fields.dictionary();
    }

    /**
     * A field made in Java, for {@link ArrowC#exportSchema} and {@link ArrowC#viewArray}: its format string
     * parsed and checked as an import checks it, with {@code children} as its children (their paths rebuilt
     * below this node), no flags, no metadata and no dictionary (see {@link #withFlags},
     * {@link #withMetadata} and {@link #withDictionary}).
     *
     * @param name the field name, or {@code null}
     * @param format the Arrow C Data format string, e.g. {@code "l"} or {@code "+s"}
     * @param children the child fields, as many as the format takes
     * @return the field, with path "" (the root of its own tree)
     * @throws ValidationException if the format is malformed, the children do not fit it, or the tree nests
     *     deeper than 64 levels
     */
    public static SchemaNode of(String name, String format, List<SchemaNode> children) {
        Objects.requireNonNull(format, "format");
        List<SchemaNode> kids = List.copyOf(Objects.requireNonNull(children, "children"));
        ArrowDataType type = ArrowFormat.parse(format, "");
        SchemaReader.checkChildCount(type, kids.size(), "");
        SchemaReader.checkChildren(type, kids, "");
        return new SchemaNode("", new Fields(name, type, 0, Map.of(), kids, null)).at("", 0);
    }

    /**
     * {@return this field with the flags {@code flags} ({@link #FLAG_NULLABLE}, and on a dictionary-encoded field
     * {@link #FLAG_DICTIONARY_ORDERED}, on a map {@link #FLAG_MAP_KEYS_SORTED})} Give a field its dictionary
     * before flagging it ordered.
     *
     * @param flags the {@code ArrowSchema} flags
     * @throws ValidationException {@link ValidationException.Category#SCHEMA} for an unknown flag or one the
     *     type does not allow
     */
    public SchemaNode withFlags(long flags) {
        SchemaReader.checkFlags(type, flags, path);
        SchemaReader.checkDictionary(type, flags, dictionary != null, path);
        return new SchemaNode(path, new Fields(name, type, flags, metadata, children, dictionary));
    }

    /**
     * {@return this field with the key-value metadata {@code metadata}, in its iteration order (replacing any)}
     *
     * @param metadata the keys and values (no {@code null} among them); copied
     */
    public SchemaNode withMetadata(Map<String, String> metadata) {
        Objects.requireNonNull(metadata, "metadata");
        Map<String, String> copy = new LinkedHashMap<>();
        metadata.forEach((k, v) -> copy.put(Objects.requireNonNull(k, "metadata key"),
                Objects.requireNonNull(v, "metadata value")));
        return new SchemaNode(path, new Fields(name, type, flags, Collections.unmodifiableMap(copy), children,
                dictionary));
    }

    /**
     * {@return this field dictionary-encoded: its type is the index type and {@code dictionary} the type of the
     * values (its path rebuilt below this node)}
     *
     * @param dictionary the value field
     * @throws ValidationException {@link ValidationException.Category#SCHEMA} if this field's type is not an
     *     integer type; {@link ValidationException.Category#DEPTH} if the tree nests deeper than 64 levels
     */
    public SchemaNode withDictionary(SchemaNode dictionary) {
        Objects.requireNonNull(dictionary, "dictionary");
        SchemaReader.checkDictionary(type, flags, true, path);
        return new SchemaNode(path, new Fields(name, type, flags, metadata, children, dictionary)).at(path, 0);
    }

    /**
     * This subtree rebuilt at field path {@code path}, {@code depth} levels below the root it is checked from
     * (the cap is the import's): a field made in Java may have been the root of another tree before.
     */
    private SchemaNode at(String path, int depth) {
        if (depth > SchemaReader.MAX_DEPTH) {
            throw new ValidationException(ValidationException.Category.DEPTH, path, "expected nesting of at most "
                    + SchemaReader.MAX_DEPTH + " levels but found more");
        }
        List<SchemaNode> kids = new ArrayList<>(children.size());
        for (int i = 0; i < children.size(); i++) {
            kids.add(children.get(i).at(SchemaReader.join(path, "children[" + i + "]"), depth + 1));
        }
        SchemaNode d = dictionary == null ? null : dictionary.at(SchemaReader.join(path, "dictionary"), depth + 1);
        return new SchemaNode(path, new Fields(name, type, flags, metadata, kids, d));
    }

    /** {@return the field path of this node from the root, e.g. {@code children[1].dictionary}; empty for the root} */
    public String path() {
        return path;
    }

    /** {@return the field name; {@code null} where the producer gave a NULL name} */
    public String name() {
        return name;
    }

    /** {@return the format string} */
    public String format() {
        return type.format();
    }

    /** {@return the parsed type (for a dictionary-encoded field: the index type; see {@link #dictionary()})} */
    public ArrowDataType type() {
        return type;
    }

    /** {@return the raw flags} */
    public long flags() {
        return flags;
    }

    /** {@return whether {@code ARROW_FLAG_NULLABLE} is set} */
    public boolean nullable() {
        return (flags & FLAG_NULLABLE) != 0;
    }

    /** {@return the key-value metadata in producer order (unmodifiable, possibly empty)} */
    public Map<String, String> metadata() {
        return metadata;
    }

    /** {@return the extension type name ({@code ARROW:extension:name} metadata), or {@code null}} */
    public String extensionName() {
        return metadata.get("ARROW:extension:name");
    }

    /** {@return the child fields, in producer order (unmodifiable)} */
    public List<SchemaNode> children() {
        return children;
    }

    /** {@return the value type of a dictionary-encoded field, or {@code null}} */
    public SchemaNode dictionary() {
        return dictionary;
    }

    /** This tree in pre-order, computed once and reused by every import of this type (racing first calls build equal ones). */
    SchemaLayout layout() {
        SchemaLayout l = layout;
        if (l == null) {
            l = new SchemaLayout(this);
            layout = l;
        }
        return l;
    }

    @Override
    public String toString() {
        return (name == null ? "<null>" : name) + ": " + type + (dictionary == null ? "" : " dictionary " + dictionary);
    }
}
