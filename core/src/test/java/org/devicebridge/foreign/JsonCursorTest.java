package org.devicebridge.foreign;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;

/**
 * The lexical steps shared by the IPC descriptors' JSON readers: whitespace (JSON's four by default, a
 * subclass's own otherwise), peek/skip/expect, the end of the text, the error form, and the typed reads. The
 * readers' grammars are tested with them ({@code IpcJsonTest}, {@code IpcTensorJsonTest}). No GPU needed.
 */
class JsonCursorTest {
    /** A cursor over {@code s}, with JSON's whitespace or any Java whitespace. */
    private static final class Cursor extends JsonCursor {
        private final boolean javaWhitespace;

        Cursor(String s, boolean javaWhitespace) {
            super(s);
            this.javaWhitespace = javaWhitespace;
        }

        @Override
        protected boolean isWhitespace(char c) {
            return javaWhitespace ? Character.isWhitespace(c) : super.isWhitespace(c);
        }
    }

    private static void assertFormat(String message, ValidationException e) {
        assertEquals(Category.FORMAT, e.category(), e.getMessage());
        assertEquals("", e.path());
        assertEquals(message, e.getMessage());
    }

    @Test
    void peekSkipsWhitespaceOnlySkipConsumesAndExpectRefusesWhereItStands() {
        Cursor c = new Cursor(" \t\r\n{ }", false);
        assertFalse(c.peek('}'));
        assertEquals(4, c.i);
        assertTrue(c.peek('{'));
        assertEquals(4, c.i);
        assertTrue(c.skip('{'));
        c.expect('}');
        c.expectEnd();
        assertFormat("expected ':' at character 7 of  \t\r\n{ }", assertThrows(ValidationException.class,
                () -> c.expect(':')));
    }

    @Test
    void jsonWhitespaceIsTheFourCharactersUnlessTheSubclassSaysOtherwise() {
        String text = "{}\u000B\u2003";
        Cursor json = new Cursor(text, false);
        json.expect('{');
        json.expect('}');
        assertFormat("expected the end of the object at character 2 of " + text,
                assertThrows(ValidationException.class, json::expectEnd));
        Cursor java = new Cursor(text, true);
        java.expect('{');
        java.expect('}');
        java.expectEnd();
        assertEquals(text.length(), java.i);
    }

    @Test
    void truncatedTextIsRefusedAtItsEndAndLongTextIsCutInTheMessage() {
        assertFormat("expected '{' at character 0 of ", assertThrows(ValidationException.class,
                () -> new Cursor("", false).expect('{')));
        String text = "y".repeat(250);
        Cursor c = new Cursor(text, false);
        assertFormat("expected a value at character 0 of " + "y".repeat(200) + "...", c.error("expected a value"));
    }

    @Test
    void typedReadsReturnTheValueOrNameThePathAndWhatWasFound() {
        assertEquals(7L, JsonCursor.asLong(7L, "n"));
        assertEquals("v", JsonCursor.asString("v", "s"));
        ValidationException e = assertThrows(ValidationException.class, () -> JsonCursor.asLong("7", "a.n"));
        assertEquals(Category.FORMAT, e.category());
        assertEquals("a.n", e.path());
        assertEquals("a.n: expected an integer but found 7", e.getMessage());
        e = assertThrows(ValidationException.class, () -> JsonCursor.asString(null, "a.s"));
        assertEquals("a.s: expected a string but found null", e.getMessage());
        e = assertThrows(ValidationException.class, () -> JsonCursor.asLong(true, "a.b"));
        assertEquals("a.b: expected an integer but found true", e.getMessage());
    }
}
