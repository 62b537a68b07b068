package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;

/**
 * The JSON reader of the CUDA IPC batch descriptor on its own: what it reads, and the exact category, path and
 * message of each refusal (truncated input, bad escapes, wrong types, missing and repeated keys). No GPU needed.
 */
class IpcJsonTest {
    private static ValidationException refused(String json) {
        return assertThrows(ValidationException.class, () -> IpcJson.object(json));
    }

    private static void refused(String json, String message) {
        ValidationException e = refused(json);
        assertEquals(Category.FORMAT, e.category(), e.getMessage());
        assertEquals("", e.path(), e.getMessage());
        assertEquals(message, e.getMessage());
    }

    @Test
    void readsObjectsListsStringsWithEscapesIntegersBooleansAndNull() {
        Map<String, Object> m = IpcJson.object(" {\"a\": [1, -2, true, false, null], \"b\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\","
                + " \"c\": {}}\n");
        assertEquals(java.util.Arrays.asList(1L, -2L, true, false, null), m.get("a"));
        assertEquals("q\"\\/\b\f\n\r\tA", m.get("b"));
        assertEquals(Map.of(), m.get("c"));
        assertEquals(List.of("a", "b", "c"), List.copyOf(m.keySet()));
    }

    @Test
    void refusesTruncatedInputWhereItStops() {
        refused("", "expected a JSON object at character 0 of ");
        refused("{\"a\": 1", "expected '}' at character 7 of {\"a\": 1");
        refused("{\"a\": ", "expected a value at character 6 of {\"a\": ");
        refused("{\"a\": \"xy", "expected the end of the string at character 9 of {\"a\": \"xy");
        refused("{\"a\": \"x\\", "expected an escape at character 9 of {\"a\": \"x\\");
        refused("{\"a\": [1, ", "expected a value at character 10 of {\"a\": [1, ");
        refused("{\"a\"", "expected ':' at character 4 of {\"a\"");
    }

    @Test
    void refusesBadEscapesAndControlCharacters() {
        refused("{\"a\": \"\\x\"}", "expected a JSON escape at character 9 of {\"a\": \"\\x\"}");
        refused("{\"a\": \"\\u12\"}", "expected four hex digits at character 9 of {\"a\": \"\\u12\"}");
        refused("{\"a\": \"\\u12g4\"}", "expected four hex digits at character 9 of {\"a\": \"\\u12g4\"}");
        refused("{\"a\": \"\t\"}", "expected no control character in a string at character 8 of {\"a\": \"\t\"}");
    }

    @Test
    void refusesWhatIsNotTheSubset() {
        refused("[1]", "expected a JSON object at character 0 of [1]");
        refused("{\"a\": 1.5}", "expected an integer at character 7 of {\"a\": 1.5}");
        refused("{\"a\": 1e3}", "expected an integer at character 7 of {\"a\": 1e3}");
        refused("{\"a\": 99999999999999999999}", "expected a value at character 6 of {\"a\": 99999999999999999999}");
        refused("{\"a\": 1, \"a\": 2}", "expected each key once but found \"a\" again at character 13 of {\"a\": 1, \"a\": 2}");
        refused("{\"a\": 1} x", "expected the end of the object at character 9 of {\"a\": 1} x");
        refused("{a: 1}", "expected a string at character 1 of {a: 1}");
        refused("{\"a\": 1\u000B}", "expected '}' at character 7 of {\"a\": 1\u000B}");
    }

    @Test
    void cutsLongTextInMessagesAt200Characters() {
        String text = "{\"a\": \"" + "x".repeat(300) + "\"";
        refused(text, "expected '}' at character " + text.length() + " of " + text.substring(0, 200) + "...");
    }

    @Test
    void typedReadsNameThePathAndTheValueFound() {
        Map<String, Object> m = IpcJson.object("{\"n\": 1, \"s\": \"v\", \"l\": [], \"o\": {}}");
        assertEquals(1L, IpcJson.number(m, "n", "p.n"));
        assertEquals("v", IpcJson.string(m, "s", "p.s"));
        assertEquals(List.of(), IpcJson.list(m, "l", "p.l"));
        assertEquals(Map.of(), IpcJson.object(m.get("o"), "p.o"));
        ValidationException e = assertThrows(ValidationException.class, () -> IpcJson.number(m, "x", "p.x"));
        assertEquals(Category.STRUCTURE, e.category());
        assertEquals("p.x: expected the key \"x\" but found none", e.getMessage());
        e = assertThrows(ValidationException.class, () -> IpcJson.number(m, "s", "p.s"));
        assertEquals(Category.FORMAT, e.category());
        assertEquals("p.s: expected an integer but found v", e.getMessage());
        e = assertThrows(ValidationException.class, () -> IpcJson.string(m, "n", "p.n"));
        assertEquals("p.n: expected a string but found 1", e.getMessage());
        e = assertThrows(ValidationException.class, () -> IpcJson.list(m, "n", "p.n"));
        assertEquals("p.n: expected a list but found 1", e.getMessage());
        e = assertThrows(ValidationException.class, () -> IpcJson.object(1L, "p.n"));
        assertEquals("p.n: expected an object but found 1", e.getMessage());
    }
}
