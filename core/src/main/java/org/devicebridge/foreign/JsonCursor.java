package org.devicebridge.foreign;

import java.util.Locale;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The lexical half of the library's small JSON readers (the CUDA IPC batch and tensor descriptors), written
 * once: a position in the text, whitespace, looking at, skipping and expecting one character, the end of the
 * text, the one error form, and the typed reads of a value whose messages the readers share. The grammar (which
 * values, how strings and numbers are read) is the subclass's: each descriptor format keeps its own, so each
 * keeps what it accepts and refuses.
 *
 * <p>Every lexical failure is a {@link ValidationException} of category {@link Category#FORMAT} with an empty
 * path and the message {@code "<what> at character <position> of <text>"}, the text cut after 200 characters.
 * Single-use, single-threaded; it owns nothing.
 */
public abstract class JsonCursor {
    /** The text read. */
    protected final String s;
    /** The position of the next character to read. */
    protected int i;

    /**
     * A cursor at the start of {@code s}.
     *
     * @param s the text to read
     */
    protected JsonCursor(String s) {
        this.s = s;
    }

    /**
     * {@return whether {@code c} is whitespace between tokens}; JSON's four (space, tab, line feed, carriage
     * return) unless a subclass says otherwise
     *
     * @param c a character of the text
     */
    protected boolean isWhitespace(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    }

    /** Skips whitespace. */
    protected final void ws() {
        while (i < s.length() && isWhitespace(s.charAt(i))) {
            i++;
        }
    }

    /**
     * {@return whether the next character after whitespace is {@code c}} (the whitespace is skipped)
     *
     * @param c the character looked for
     */
    protected final boolean peek(char c) {
        ws();
        return i < s.length() && s.charAt(i) == c;
    }

    /**
     * {@return whether the next character after whitespace was {@code c}}; if so it is skipped too
     *
     * @param c the character looked for
     */
    protected final boolean skip(char c) {
        if (peek(c)) {
            i++;
            return true;
        }
        return false;
    }

    /**
     * Skips whitespace and {@code c}.
     *
     * @param c the character required
     * @throws ValidationException if the next character after whitespace is not {@code c}
     */
    protected final void expect(char c) {
        if (!skip(c)) {
            throw error("expected '" + c + "'");
        }
    }

    /**
     * Skips whitespace and requires the end of the text (after the one top-level object).
     *
     * @throws ValidationException if anything but whitespace follows
     */
    protected final void expectEnd() {
        ws();
        if (i != s.length()) {
            throw error("expected the end of the object");
        }
    }

    /**
     * {@return the failure {@code what} at the current position}
     *
     * @param what what was expected, e.g. {@code "expected a value"}
     */
    protected final ValidationException error(String what) {
        return new ValidationException(Category.FORMAT, "", String.format(Locale.ROOT, "%s at character %d of %s",
                what, i, s.length() > 200 ? s.substring(0, 200) + "..." : s));
    }

    /**
     * {@return {@code v} as an integer}
     *
     * @param v a value read (a {@code Long} for a JSON integer)
     * @param path the path to name in the failure
     * @throws ValidationException ({@code FORMAT}, at {@code path}) if {@code v} is not an integer
     */
    public static long asLong(Object v, String path) {
        if (v instanceof Long n) {
            return n;
        }
        throw new ValidationException(Category.FORMAT, path, "expected an integer but found " + v);
    }

    /**
     * {@return {@code v} as a string}
     *
     * @param v a value read
     * @param path the path to name in the failure
     * @throws ValidationException ({@code FORMAT}, at {@code path}) if {@code v} is not a string
     */
    public static String asString(Object v, String path) {
        if (v instanceof String t) {
            return t;
        }
        throw new ValidationException(Category.FORMAT, path, "expected a string but found " + v);
    }
}
