package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** {@link SchemaNode#of} and its withers: fields made in Java, checked by the rules the schema import applies. */
class SchemaNodeOfTest {

    private static void refused(Category category, String path, Executable make) {
        ValidationException e = assertThrows(ValidationException.class, make);
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
    }

    private static SchemaNode leaf(String name, String format) {
        return SchemaNode.of(name, format, List.of());
    }

    @Test
    void theFormatIsParsedAsAnImportParsesIt() {
        SchemaNode n = leaf("t", "tsu:UTC");
        assertEquals(ArrowDataType.TypeId.TIMESTAMP, n.type().id());
        assertEquals("tsu:UTC", n.format());
        assertEquals("", n.path());
        assertEquals(0, n.flags());
        assertTrue(n.metadata().isEmpty());
        assertNull(n.dictionary());
        refused(Category.FORMAT, "format", () -> leaf("x", "q"));
        refused(Category.FORMAT, "format", () -> leaf("x", ""));
    }

    @Test
    void theChildCountIsTheFormats() {
        refused(Category.STRUCTURE, "n_children", () -> SchemaNode.of("l", "+l", List.of()));
        refused(Category.STRUCTURE, "n_children", () -> SchemaNode.of("i", "i", List.of(leaf("c", "i"))));
        refused(Category.STRUCTURE, "n_children", () -> SchemaNode.of("u", "+us:0,1", List.of(leaf("a", "i"))));
    }

    @Test
    void childrenArePlacedBelowTheNewNode() {
        SchemaNode inner = SchemaNode.of("s", "+s", List.of(leaf("a", "i"), leaf("b", "u")));
        assertEquals("children[1]", inner.children().get(1).path());
        SchemaNode outer = SchemaNode.of("o", "+s", List.of(leaf("z", "n"), inner));
        assertEquals("children[1]", outer.children().get(1).path());
        assertEquals("children[1].children[1]", outer.children().get(1).children().get(1).path());
        assertEquals("children[1]", inner.children().get(1).path(), "the inner tree is not changed");
        SchemaNode dict = leaf("d", "i").withDictionary(leaf("v", "u"));
        SchemaNode withDict = SchemaNode.of("o", "+s", List.of(dict));
        assertEquals("children[0].dictionary", withDict.children().get(0).dictionary().path());
    }

    @Test
    void theTypesChildRulesApply() {
        SchemaNode entries = SchemaNode.of("entries", "+s", List.of(leaf("key", "u"), leaf("value", "i")));
        SchemaNode map = SchemaNode.of("m", "+m", List.of(entries)).withFlags(SchemaNode.FLAG_MAP_KEYS_SORTED);
        assertEquals(SchemaNode.FLAG_MAP_KEYS_SORTED, map.flags());
        refused(Category.SCHEMA, "children[0].flags", () -> SchemaNode.of("m", "+m",
                List.of(entries.withFlags(SchemaNode.FLAG_NULLABLE))));
        refused(Category.SCHEMA, "children[0].format", () -> SchemaNode.of("r", "+r",
                List.of(leaf("run_ends", "u"), leaf("values", "i"))));
    }

    @Test
    void flagsAreCheckedAsAnImportChecksThem() {
        assertTrue(leaf("n", "l").withFlags(SchemaNode.FLAG_NULLABLE).nullable());
        refused(Category.SCHEMA, "flags", () -> leaf("n", "l").withFlags(8));
        refused(Category.SCHEMA, "flags", () -> leaf("n", "l").withFlags(SchemaNode.FLAG_MAP_KEYS_SORTED));
        refused(Category.SCHEMA, "flags", () -> leaf("n", "i").withFlags(SchemaNode.FLAG_DICTIONARY_ORDERED));
        SchemaNode ordered = leaf("d", "i").withDictionary(leaf(null, "u")).withFlags(SchemaNode.FLAG_DICTIONARY_ORDERED);
        assertEquals(SchemaNode.FLAG_DICTIONARY_ORDERED, ordered.flags());
    }

    @Test
    void aDictionaryNeedsAnIntegerIndexType() {
        refused(Category.SCHEMA, "format", () -> leaf("d", "u").withDictionary(leaf(null, "u")));
        SchemaNode d = leaf("d", "s").withDictionary(leaf(null, "u"));
        assertEquals(ArrowDataType.TypeId.INT16, d.type().id());
        assertEquals("dictionary", d.dictionary().path());
    }

    @Test
    void metadataKeepsItsOrderAndIsACopy() {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        m.put("z", "1");
        m.put("a", "2");
        SchemaNode n = leaf("n", "l").withMetadata(m);
        m.put("b", "3");
        assertEquals(List.of("z", "a"), List.copyOf(n.metadata().keySet()));
        assertThrows(UnsupportedOperationException.class, () -> n.metadata().put("c", "4"));
        Map<String, String> withNull = new HashMap<>();
        withNull.put("k", null);
        assertThrows(NullPointerException.class, () -> leaf("n", "l").withMetadata(withNull));
    }

    @Test
    void nestingDeeperThanTheImportsCapIsRefused() {
        SchemaNode n = leaf("leaf", "i");
        for (int i = 0; i < 64; i++) {
            n = SchemaNode.of("l" + i, "+l", List.of(n));
        }
        SchemaNode deepest = n; // 65 levels: root at 0, the leaf at 64
        refused(Category.DEPTH, "children[0]" + ".children[0]".repeat(64),
                () -> SchemaNode.of("top", "+l", List.of(deepest)));
    }
}
