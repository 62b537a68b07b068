package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.DType;
import org.junit.jupiter.api.Test;

/**
 * The tensor IPC descriptor as specified in docs/ipc-format.md, read by the one strict reader: every numeric
 * field range-checked before it is narrowed, and the hostile inputs that once got through (a device above int
 * range, deep nesting, an id with a quote, repeated keys, truncated dtype numbers, Unicode digits, raw control
 * characters) each refused with a category and a path. No GPU needed.
 */
class IpcTensorJsonTest {
    private static final String GOOD = "{\"devicebridge_ipc\": 1, \"kind\": \"tensor\", \"id\": \"x\", \"device\": 0,"
            + " \"mem_handle\": \"" + "ab".repeat(64) + "\", \"offset\": 0, \"nbytes\": 4, \"dtype\": [0, 32, 1],"
            + " \"typestr\": \"<i4\", \"shape\": [1], \"strides\": [1], \"event_handle\": null}";

    private static ValidationException refused(String json, Category category, String path) {
        ValidationException e = assertThrows(ValidationException.class, () -> IpcTensorDescriptor.parse(json));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        return e;
    }

    @Test
    void readsTheSpecifiedFormatWithJsonWhitespaceAndUnknownKeys() {
        IpcTensorDescriptor d = IpcTensorDescriptor.parse(GOOD.replace(", ", ",\n\t ").replace("\"event_handle\": null",
                "\"event_handle\": null, \"producer\": {\"name\": \"cupy\", \"v\": [13]}"));
        assertEquals(4, d.nbytes());
        assertArrayEquals(new long[] {1}, d.shape());
    }

    @Test
    void deviceOutsideIntRangeIsADeviceErrorNotAnArithmeticException() {
        refused(GOOD.replace("\"device\": 0", "\"device\": 2147483648"), Category.DEVICE, "device");
        refused(GOOD.replace("\"device\": 0", "\"device\": -1"), Category.DEVICE, "device");
        refused(GOOD.replace("\"device\": 0", "\"device\": 99999999999999999999"), Category.SIZE, "device");
    }

    @Test
    void deepNestingIsRefusedBeforeTheStackIsExhausted() {
        int n = 20_000;
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": " + "[".repeat(n) + "]".repeat(n)), Category.DEPTH,
                "shape" + "[0]".repeat(159));
    }

    @Test
    void idsWithQuotesEscapesAndNonAsciiRoundTrip() {
        for (String id : new String[] {"a\"b", "\\\"}", "\u0000\t\u001f", "\u00e9\ud83d\ude00", "\u2028"}) {
            IpcTensorDescriptor d = new IpcTensorDescriptor(id, 0, new byte[64], 0, 4, DType.INT32, new long[] {1},
                    new long[] {1}, null);
            assertEquals(d, IpcTensorDescriptor.parse(d.toJson()));
            assertEquals(id, IpcTensorDescriptor.closedId(d.closeMessage()));
        }
        refused(GOOD.replace("\"id\": \"x\"", "\"id\": \"\\ud800\""), Category.FORMAT, "id");
        refused(GOOD.replace("\"id\": \"x\"", "\"id\": \"\""), Category.SIZE, "id");
    }

    @Test
    void duplicateKeysControlCharactersAndUnicodeDigitsAreRefused() {
        refused(GOOD.replace("\"offset\": 0", "\"offset\": 8, \"offset\": 0"), Category.FORMAT, "");
        refused(GOOD.replace("\"id\": \"x\"", "\"id\": \"x\ty\""), Category.FORMAT, "id");
        refused(GOOD.replace("\"nbytes\": 4", "\"nbytes\": \u0664"), Category.FORMAT, "nbytes");
        refused(GOOD.replace("\"nbytes\": 4", "\"nbytes\": 04"), Category.FORMAT, "nbytes");
        refused(GOOD.replace(", ", ",\u2003"), Category.FORMAT, "");
    }

    @Test
    void dtypeNumbersAreCheckedBeforeTheyAreNarrowed() {
        refused(GOOD.replace("[0, 32, 1]", "[4294967296, 32, 1]"), Category.FORMAT, "dtype[0]");
        refused(GOOD.replace("[0, 32, 1]", "[0, 4294967328, 1]"), Category.FORMAT, "dtype[1]");
        refused(GOOD.replace("[0, 32, 1]", "[0, 32, 65537]"), Category.FORMAT, "dtype[2]");
        refused(GOOD.replace("[0, 32, 1]", "[0, 32]"), Category.FORMAT, "dtype");
        refused(GOOD.replace("[0, 32, 1]", "[0, 32, 1.0]"), Category.FORMAT, "dtype[2]");
        refused(GOOD.replace("\"<i4\"", "\"<f4\""), Category.FORMAT, "typestr");
        refused(GOOD.replace("\"<i4\"", "null"), Category.FORMAT, "typestr");
    }

    @Test
    void offsetsSizesShapesAndStridesAreConsistentWithExactArithmetic() {
        refused(GOOD.replace("\"offset\": 0", "\"offset\": -1"), Category.SIZE, "offset");
        refused(GOOD.replace("\"offset\": 0", "\"offset\": 9223372036854775807"), Category.SIZE, "nbytes");
        refused(GOOD.replace("\"nbytes\": 4", "\"nbytes\": 3"), Category.LENGTH, "nbytes");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": [-1]"), Category.SIZE, "shape[0]");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": [" + "1, ".repeat(64) + "1]")
                .replace("\"strides\": [1]", "\"strides\": [" + "1, ".repeat(64) + "1]"), Category.SIZE, "shape");
        refused(GOOD.replace("\"strides\": [1]", "\"strides\": [1, 1]"), Category.STRUCTURE, "strides");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": [2]").replace("\"strides\": [1]", "\"strides\": [-1]")
                .replace("\"nbytes\": 4", "\"nbytes\": 8"), Category.SIZE, "strides");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": [3037000500, 3037000500]")
                .replace("\"strides\": [1]", "\"strides\": [1, 1]"), Category.SIZE, "shape[1]");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": [2]").replace("\"strides\": [1]",
                "\"strides\": [4611686018427387904]"), Category.SIZE, "strides");
    }

    @Test
    void wrongTypesMissingKeysVersionsAndKindsAreRefusedByKey() {
        refused(GOOD.replace("\"device\": 0", "\"device\": \"0\""), Category.FORMAT, "device");
        refused(GOOD.replace("\"id\": \"x\"", "\"id\": 7"), Category.FORMAT, "id");
        refused(GOOD.replace("\"shape\": [1]", "\"shape\": 1"), Category.FORMAT, "shape");
        refused(GOOD.replace("\"mem_handle\": \"ab", "\"mem_handle\": \"zz"), Category.FORMAT, "mem_handle");
        refused(GOOD.replace("\"mem_handle\": \"ab", "\"mem_handle\": \""), Category.STRUCTURE, "mem_handle");
        refused(GOOD.replace("\"nbytes\": 4, ", ""), Category.STRUCTURE, "nbytes");
        refused(GOOD.replace("\"devicebridge_ipc\": 1", "\"devicebridge_ipc\": 2"), Category.VERSION, "devicebridge_ipc");
        refused(GOOD.replace("\"tensor\"", "\"arrow_batch\""), Category.FORMAT, "kind");
        refused(GOOD + " x", Category.FORMAT, "");
        refused(GOOD.substring(0, GOOD.length() - 1), Category.FORMAT, "");
        refused("x".repeat(IpcTensorDescriptor.MAX_JSON_CHARS + 1), Category.SIZE, "");
    }
}
