package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;

/**
 * The reader of the tensor IPC descriptor and of close messages, on malformed text: the exact category, path
 * and message of each refusal (truncated input, escapes, wrong types, missing keys), and the whitespace it
 * accepts. No GPU needed.
 */
class IpcTensorJsonTest {
    private static final String GOOD = "{\"devicebridge_ipc\": 1, \"kind\": \"tensor\", \"id\": \"x\", \"device\": 0,"
            + " \"mem_handle\": \"" + "ab".repeat(64) + "\", \"offset\": 0, \"nbytes\": 4, \"dtype\": [0, 32, 1],"
            + " \"typestr\": \"<i4\", \"shape\": [1], \"strides\": [1], \"event_handle\": null}";

    private static void refused(String json, Category category, String path, String message) {
        ValidationException e = assertThrows(ValidationException.class, () -> IpcTensorDescriptor.parse(json));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        assertEquals(message, e.getMessage());
    }

    private static void refusedAsText(String json, String message) {
        refused(json, Category.FORMAT, "", message);
    }

    @Test
    void refusesTruncatedInputWhereItStops() {
        refusedAsText("", "expected '{' at character 0 of ");
        refusedAsText("{\"a\": 1", "expected '}' at character 7 of {\"a\": 1");
        refusedAsText("{\"a\": \"xy", "expected '\"' at character 9 of {\"a\": \"xy");
        refusedAsText("{\"a\": ", "expected a value at character 6 of {\"a\": ");
        refusedAsText("{\"a\": [1, ", "expected a value at character 10 of {\"a\": [1, ");
        refusedAsText("{\"a\"", "expected ':' at character 4 of {\"a\"");
    }

    @Test
    void refusesEscapesWhichTheFormatDoesNotUse() {
        refusedAsText("{\"a\": \"x\\n\"}", "escapes are not used by the format at character 8 of {\"a\": \"x\\n\"}");
    }

    @Test
    void refusesValuesOutsideTheFormat() {
        refusedAsText("{\"a\": true}", "expected a value at character 6 of {\"a\": true}");
        refusedAsText("{\"a\": {}}", "expected a value at character 6 of {\"a\": {}}");
        refusedAsText("{\"a\": [\"x\"]}", "expected an integer in a list at character 10 of {\"a\": [\"x\"]}");
        refusedAsText("{\"a\": 1.5}", "expected '}' at character 7 of {\"a\": 1.5}");
        refusedAsText("{\"a\": 1} x", "expected the end of the object at character 9 of {\"a\": 1} x");
        String text = "{\"a\": \"" + "x".repeat(300) + "\"";
        refusedAsText(text, "expected '}' at character " + text.length() + " of " + text.substring(0, 200) + "...");
    }

    @Test
    void refusesWrongTypesAndMissingKeysByKey() {
        refused(GOOD.replace("\"device\": 0", "\"device\": \"0\""), Category.FORMAT, "device",
                "device: expected an integer but found 0");
        refused(GOOD.replace("\"id\": \"x\"", "\"id\": 7"), Category.FORMAT, "id", "id: expected a string but found 7");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": 1"), Category.FORMAT, "shape",
                "shape: expected a list of integers but found 1");
        refused(GOOD.replace("\"mem_handle\": \"ab", "\"mem_handle\": \"zz"), Category.FORMAT, "mem_handle",
                "mem_handle: expected hex digits but found zz" + "ab".repeat(63));
        refused(GOOD.replace("\"nbytes\": 4, ", ""), Category.STRUCTURE, "nbytes", "nbytes: expected the key but found none");
    }

    @Test
    void acceptsRepeatedKeysLastWinsAndAnyJavaWhitespace() {
        IpcTensorDescriptor d = IpcTensorDescriptor.parse(GOOD.replace("\"offset\": 0", "\"offset\": 8, \"offset\": 0")
                .replace(", ", ",\u000B\u2003"));
        assertEquals(0, d.offset());
        assertArrayEquals(new long[] {1}, d.shape());
    }

    @Test
    void closeMessagesAreReadBackAndOthersRefusedByKey() {
        assertEquals("x", IpcTensorDescriptor.closedId(" {\"devicebridge_ipc_closed\": \"x\"} "));
        ValidationException e = assertThrows(ValidationException.class, () -> IpcTensorDescriptor.closedId("{\"other\": \"x\"}"));
        assertEquals(Category.STRUCTURE, e.category());
        assertEquals("devicebridge_ipc_closed: expected the key but found none", e.getMessage());
        e = assertThrows(ValidationException.class, () -> IpcTensorDescriptor.closedId("{\"devicebridge_ipc_closed\": 1}"));
        assertEquals("devicebridge_ipc_closed: expected a string but found 1", e.getMessage());
        e = assertThrows(ValidationException.class, () -> IpcTensorDescriptor.closedId("[]"));
        assertEquals("expected '{' at character 0 of []", e.getMessage());
    }
}
