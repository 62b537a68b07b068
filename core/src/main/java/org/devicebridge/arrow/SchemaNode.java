package org.devicebridge.arrow;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.ValidationException;

/**
 * One field of an imported {@code ArrowSchema}, parsed and validated: plain Java data that stays usable
 * after the {@link ImportedSchema} it came from is closed. Needs no Arrow Java.
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
     * below this node), no flags, no metadata and no dictionary.
     *
     * @param name the field name, or {@code null}
     * @param format the Arrow C Data format string, e.g. {@code "l"} or {@code "+s"}
     * @param children the child fields, as many as the format takes
     * @return the field
     * @throws ValidationException if the format is malformed or the children do not fit it
     */
    public static SchemaNode of(String name, String format, List<SchemaNode> children) {
        throw new UnsupportedOperationException("SchemaNode.of: not built yet");
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
