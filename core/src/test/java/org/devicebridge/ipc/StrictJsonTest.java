package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;

/**
 * The one strict JSON reader and writer of the IPC messages: what it reads, and the category, path and
 * message of each refusal. No GPU needed.
 */
class StrictJsonTest {
    private static Map<String, Object> read(String json) {
        return StrictJson.object(json, 1 << 20);
    }

    private static ValidationException refused(String json, Category category, String path, String message) {
        ValidationException e = assertThrows(ValidationException.class, () -> read(json));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        assertEquals(message, e.getMessage());
        return e;
    }

    @Test
    void readsObjectsListsStringsWithEveryEscapeIntegersBooleansAndNull() {
        Map<String, Object> m = read(" {\"a\": [0, -0, 1, -2, 9223372036854775807, -9223372036854775808, true, false, null],"
                + " \"b\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\ud83d\\ude00\\u00e9\u00e9\", \"c\": {}}\r\n");
        assertEquals(Arrays.asList(0L, 0L, 1L, -2L, Long.MAX_VALUE, Long.MIN_VALUE, true, false, null), m.get("a"));
        assertEquals("q\"\\/\b\f\n\r\tA\ud83d\ude00\u00e9\u00e9", m.get("b"));
        assertEquals(Map.of(), m.get("c"));
        assertEquals(List.of("a", "b", "c"), List.copyOf(m.keySet()));
    }

    @Test
    void refusesTruncatedInputWhereItStops() {
        refused("", Category.FORMAT, "", "expected a JSON object at character 0");
        refused("{\"a\": 1", Category.FORMAT, "", "expected '}' at character 7");
        refused("{\"a\": ", Category.FORMAT, "a", "a: expected a value at character 6");
        refused("{\"a\": \"xy", Category.FORMAT, "a", "a: expected the end of the string at character 9");
        refused("{\"a\": \"x\\", Category.FORMAT, "a", "a: expected a JSON escape at character 8");
        refused("{\"a\": [1, ", Category.FORMAT, "a[1]", "a[1]: expected a value at character 10");
        refused("{\"a\"", Category.FORMAT, "a", "a: expected ':' at character 4");
        refused("{\"a\": -}", Category.FORMAT, "a", "a: expected a value (an ASCII digit, '-', '\"', '{', '[', true,"
                + " false or null) at character 7");
        refused("{\"a\": tru}", Category.FORMAT, "a", "a: expected a value at character 6");
    }

    @Test
    void refusesDuplicateKeysControlCharactersAndBadEscapesWithThePath() {
        refused("{\"a\": {\"k\": 1, \"k\": 2}}", Category.FORMAT, "a", "a: expected each key once but found \"k\" again at character 18");
        refused("{\"a\": \"\t\"}", Category.FORMAT, "a", "a: expected no raw control character in a string but found U+0009 at character 7");
        refused("{\"a\": \"\u0000\"}", Category.FORMAT, "a", "a: expected no raw control character in a string but found U+0000 at character 7");
        refused("{\"a\": \"\\x\"}", Category.FORMAT, "a", "a: expected a JSON escape at character 7");
        refused("{\"a\": \"\\u12\"}", Category.FORMAT, "a", "a: expected four ASCII hex digits at character 9");
        refused("{\"a\": \"\\u\u0661\u0662\u0663\u0664\"}", Category.FORMAT, "a", "a: expected four ASCII hex digits at character 9");
        refused("{\"a\": \"\\ud800\"}", Category.FORMAT, "a", "a: expected a well-formed surrogate pair at character 7");
        refused("{\"a\": \"\\ud800\\u0041\"}", Category.FORMAT, "a", "a: expected a well-formed surrogate pair at character 13");
        refused("{\"a\": \"\\udc00\"}", Category.FORMAT, "a", "a: expected a well-formed surrogate pair at character 7");
        refused("{\"a\": \"\ud800x\"}", Category.FORMAT, "a", "a: expected a well-formed surrogate pair at character 7");
    }

    @Test
    void refusesNumbersOutsideTheSubsetAndOutsideInt64AsTypedErrors() {
        refused("{\"a\": 1.5}", Category.FORMAT, "a", "a: expected an integer (the format has no fractions or exponents) at character 7");
        refused("{\"a\": 1e3}", Category.FORMAT, "a", "a: expected an integer (the format has no fractions or exponents) at character 7");
        refused("{\"a\": 01}", Category.FORMAT, "a", "a: expected no leading zero at character 6");
        refused("{\"a\": -01}", Category.FORMAT, "a", "a: expected no leading zero at character 7");
        refused("{\"a\": \u0661}", Category.FORMAT, "a", "a: expected a value (an ASCII digit, '-', '\"', '{', '[', true,"
                + " false or null) at character 6");
        refused("{\"a\": 1\u0661}", Category.FORMAT, "", "expected '}' at character 7");
        refused("{\"a\": +1}", Category.FORMAT, "a", "a: expected a value (an ASCII digit, '-', '\"', '{', '[', true,"
                + " false or null) at character 6");
        refused("{\"a\": 9223372036854775808}", Category.SIZE, "a",
                "a: expected an integer in [-2^63, 2^63) but found 9223372036854775808 at character 6");
        refused("{\"a\": -9223372036854775809}", Category.SIZE, "a",
                "a: expected an integer in [-2^63, 2^63) but found -9223372036854775809 at character 6");
        refused("{\"x\": [{\"a\": " + "9".repeat(5000) + "}]}", Category.SIZE, "x[0].a",
                "x[0].a: expected an integer in [-2^63, 2^63) but found 5000 digits at character 13");
    }

    @Test
    void refusesOtherTopLevelsTrailingTextAndOtherWhitespace() {
        refused("[1]", Category.FORMAT, "", "expected a JSON object at character 0");
        refused("{\"a\": 1} x", Category.FORMAT, "", "expected the end of the text after the object at character 9");
        refused("{\"a\": 1}{}", Category.FORMAT, "", "expected the end of the text after the object at character 8");
        refused("{a: 1}", Category.FORMAT, "", "expected a string at character 1");
        refused("{\"a\": 1\u000B}", Category.FORMAT, "", "expected '}' at character 7");
        refused("{\"a\":\u00A01}", Category.FORMAT, "a", "a: expected a value (an ASCII digit, '-', '\"', '{', '[', true,"
                + " false or null) at character 5");
        refused("{\"a\": [1,]}", Category.FORMAT, "a[1]", "a[1]: expected a value (an ASCII digit, '-', '\"', '{', '[',"
                + " true, false or null) at character 9");
    }

    @Test
    void capsLengthBeforeReadingAndNestingBeforeEachDescent() {
        ValidationException e = assertThrows(ValidationException.class, () -> StrictJson.object("{\"a\": 12}", 8));
        assertEquals(Category.SIZE, e.category());
        assertEquals("expected at most 8 characters but found 9", e.getMessage());
        String deep = "{\"a\": " + "[".repeat(StrictJson.MAX_NESTING - 1) + "]".repeat(StrictJson.MAX_NESTING - 1) + "}";
        read(deep);
        int n = 500_000; // would exhaust any stack if read recursively without the cap
        e = assertThrows(ValidationException.class, () -> read("{\"a\": " + "[".repeat(n) + "]".repeat(n) + "}"));
        assertEquals(Category.DEPTH, e.category());
        assertEquals("a" + "[0]".repeat(StrictJson.MAX_NESTING - 1), e.path());
    }

    @Test
    void quoteWritesAsciiThatReadsBackForEveryStringWithoutUnpairedSurrogates() {
        StringBuilder all = new StringBuilder();
        for (char c = 0; c < 0xD800; c++) {
            all.append(c);
        }
        for (int c = 0xE000; c <= 0xFFFF; c++) {
            all.append((char) c);
        }
        all.append("\ud83d\ude00\"\\/");
        String quoted = StrictJson.quote(new StringBuilder("{\"id\": "), all.toString()).append('}').toString();
        assertEquals(true, quoted.chars().allMatch(c -> c >= 0x20 && c <= 0x7E), "ASCII only");
        assertEquals(all.toString(), read(quoted).get("id"));
        assertEquals("\"a\\\"b\\\\c\\n\\u0001\\u00e9\"", StrictJson.quote(new StringBuilder(), "a\"b\\c\n\u0001\u00e9").toString());
    }

    @Test
    void typedReadsNameThePathAndCheckRanges() {
        Map<String, Object> m = read("{\"n\": 4294967296, \"s\": \"v\", \"l\": [1, 2], \"o\": {}, \"h\": \"0aFf\"}");
        assertEquals(4294967296L, JsonFields.integer(m, "n", "p", JsonFields.NON_NEGATIVE, Category.SIZE));
        ValidationException e = assertThrows(ValidationException.class,
                () -> JsonFields.integer(m, "n", "p", JsonFields.range(0, Integer.MAX_VALUE), Category.DEVICE));
        assertEquals(Category.DEVICE, e.category());
        assertEquals("p.n: expected an integer in [0, 2147483647] but found 4294967296", e.getMessage());
        e = assertThrows(ValidationException.class, () -> JsonFields.integer(m, "x", "p", JsonFields.range(0, 1), Category.SIZE));
        assertEquals(Category.STRUCTURE, e.category());
        assertEquals("p.x: expected the key \"x\" but found none", e.getMessage());
        e = assertThrows(ValidationException.class, () -> JsonFields.integer(m, "s", "p", JsonFields.range(0, 1), Category.SIZE));
        assertEquals("p.s: expected an integer but found \"v\"", e.getMessage());
        assertEquals(Category.SIZE, assertThrows(ValidationException.class, () -> JsonFields.list(m.get("l"), "l", 1)).category());
        assertEquals(Category.FORMAT, assertThrows(ValidationException.class, () -> JsonFields.object(m.get("l"), "l")).category());
        assertArrayEquals(new byte[] {0x0a, (byte) 0xff}, JsonFields.hex(m.get("h"), "h", 2));
        assertEquals(Category.STRUCTURE, assertThrows(ValidationException.class, () -> JsonFields.hex(m.get("h"), "h", 3)).category());
        assertEquals(Category.FORMAT, assertThrows(ValidationException.class, () -> JsonFields.hex("0\u0661", "h", 1)).category());
        assertEquals(Category.SIZE, assertThrows(ValidationException.class, () -> JsonFields.text("", "id", 4)).category());
        assertEquals(Category.FORMAT, assertThrows(ValidationException.class, () -> JsonFields.text("a\udc00", "id", 4)).category());
    }

    @Test
    void closeMessagesRoundTripAnyLegalIdAndRefuseOthers() {
        for (String id : new String[] {"x", "a\"b", "\\", "\u0000\n", "\u00e9\ud83d\ude00", "q".repeat(Acknowledgement.MAX_ID_LENGTH)}) {
            assertEquals(id, Acknowledgement.closedId(Acknowledgement.closeMessage(id)));
        }
        assertEquals(Category.STRUCTURE, assertThrows(ValidationException.class, () -> Acknowledgement.closedId("{\"a\": 1}")).category());
        assertEquals(Category.SIZE, assertThrows(ValidationException.class,
                () -> Acknowledgement.closedId(Acknowledgement.closeMessage("q".repeat(Acknowledgement.MAX_ID_LENGTH + 1)))).category());
        assertEquals(Category.SIZE, assertThrows(ValidationException.class, () -> Acknowledgement.checkId("")).category());
    }
}
