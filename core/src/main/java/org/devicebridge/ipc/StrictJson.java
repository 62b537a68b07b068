package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The one JSON reader and writer of the library's cross-process messages (the CUDA IPC batch and tensor
 * descriptors and their close messages; format in {@code docs/ipc-format.md}). It reads a strict subset of
 * RFC 8259: one top-level object; objects, arrays, strings, integers, {@code true}, {@code false},
 * {@code null}; JSON's four whitespace characters only. It refuses:
 * <ul>
 *   <li>text longer than the caller's cap (checked before anything is read) and nesting deeper than
 *       {@link #MAX_NESTING} (checked before each descent, so no input can exhaust the stack);</li>
 *   <li>a key repeated in one object;</li>
 *   <li>raw control characters (below U+0020) in strings, unknown escapes, {@code \}{@code u} escapes without
 *       four ASCII hex digits, and unpaired surrogates (escaped or raw);</li>
 *   <li>numbers with fractions, exponents, leading zeros, a lone {@code -}, non-ASCII digits, and integers
 *       outside the int64 range ({@code SIZE}, never an {@link ArithmeticException});</li>
 *   <li>anything but whitespace after the object.</li>
 * </ul>
 * Objects come back as unmodifiable insertion-ordered maps, arrays as unmodifiable lists, integers as
 * {@code Long}. Every refusal is a {@link ValidationException} whose path names where the reader stood
 * (e.g. {@code array.children[1].length}) and whose message gives the character position.
 *
 * <p>{@link #quote} writes a string so that this reader gives it back: quotes, backslashes, control
 * characters and every character above U+007E are escaped, so the output is plain ASCII.
 *
 * <p>Stateless and thread-safe (each read uses its own cursor); it owns nothing.
 */
final class StrictJson {
    /** Deepest nesting of objects and arrays read (a node of a batch tree costs two levels). */
    static final int MAX_NESTING = 160;

    private final String s;
    private int i;
    private int depth;
    /** The key, or {@code null} for an array element, at each level above the current position. */
    private final String[] keys = new String[MAX_NESTING + 1];
    private final int[] indices = new int[MAX_NESTING + 1];

    private StrictJson(String s) {
        this.s = s;
    }

    /**
     * Reads {@code text}, which must hold exactly one JSON object (whitespace around it allowed).
     *
     * @param text the text
     * @param maxChars the longest text accepted, in UTF-16 code units
     * @return the object
     * @throws ValidationException {@code SIZE} for text longer than {@code maxChars} or an integer outside
     *         int64, {@code DEPTH} for nesting deeper than {@link #MAX_NESTING}, {@code FORMAT} for anything
     *         else the class comment lists
     */
    static Map<String, Object> object(String text, int maxChars) {
        if (text.length() > maxChars) {
            throw new ValidationException(Category.SIZE, "", "expected at most " + maxChars
                    + " characters but found " + text.length());
        }
        StrictJson j = new StrictJson(text);
        j.ws();
        if (j.i >= text.length() || text.charAt(j.i) != '{') {
            throw j.error(Category.FORMAT, "expected a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) j.value();
        j.ws();
        if (j.i != text.length()) {
            throw j.error(Category.FORMAT, "expected the end of the text after the object");
        }
        return m;
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            i++;
        }
    }

    private void expect(char c) {
        ws();
        if (i >= s.length() || s.charAt(i) != c) {
            throw error(Category.FORMAT, "expected '" + c + "'");
        }
        i++;
    }

    /** Skips whitespace; {@return whether {@code c} follows, consuming it if so} */
    private boolean skip(char c) {
        ws();
        if (i < s.length() && s.charAt(i) == c) {
            i++;
            return true;
        }
        return false;
    }

    private Object value() {
        ws();
        if (i >= s.length()) {
            throw error(Category.FORMAT, "expected a value");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{', '[' -> {
                if (depth == MAX_NESTING) { // before the descent: the stack stays bounded
                    throw error(Category.DEPTH, "expected at most " + MAX_NESTING + " nested objects and arrays");
                }
                depth++;
                Object v = c == '{' ? obj() : arr();
                depth--;
                return v;
            }
            case '"' -> {
                return str();
            }
            case 't' -> {
                return literal("true", Boolean.TRUE);
            }
            case 'f' -> {
                return literal("false", Boolean.FALSE);
            }
            case 'n' -> {
                return literal("null", null);
            }
            default -> {
                return integer();
            }
        }
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) {
            throw error(Category.FORMAT, "expected a value");
        }
        i += word.length();
        return v;
    }

    private Map<String, Object> obj() {
        i++; // '{'
        Map<String, Object> m = new LinkedHashMap<>();
        indices[depth] = -1;
        if (!skip('}')) {
            do {
                ws();
                keys[depth] = null;
                String key = str();
                if (m.containsKey(key)) {
                    throw error(Category.FORMAT, "expected each key once but found \"" + printable(key) + "\" again");
                }
                keys[depth] = key;
                expect(':');
                m.put(key, value());
                keys[depth] = null;
            } while (skip(','));
            expect('}');
        }
        keys[depth] = null;
        return Collections.unmodifiableMap(m);
    }

    private List<Object> arr() {
        i++; // '['
        List<Object> l = new ArrayList<>();
        keys[depth] = null;
        indices[depth] = -1;
        if (!skip(']')) {
            do {
                indices[depth] = l.size();
                l.add(value());
                indices[depth] = -1;
            } while (skip(','));
            expect(']');
        }
        indices[depth] = -1;
        return Collections.unmodifiableList(l);
    }

    private Long integer() {
        int start = i;
        if (s.charAt(i) == '-') {
            i++;
        }
        int digits = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        if (i == digits) {
            throw error(Category.FORMAT, "expected a value (an ASCII digit, '-', '\"', '{', '[', true, false or null)");
        }
        if (s.charAt(digits) == '0' && i - digits > 1) {
            i = digits;
            throw error(Category.FORMAT, "expected no leading zero");
        }
        if (i < s.length() && (s.charAt(i) == '.' || s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            throw error(Category.FORMAT, "expected an integer (the format has no fractions or exponents)");
        }
        if (i - digits > 19) { // bounded work and no ArithmeticException: longer is out of range anyway
            int count = i - digits;
            i = start;
            throw error(Category.SIZE, "expected an integer in [-2^63, 2^63) but found " + count + " digits");
        }
        try {
            return Long.parseLong(s, start, i, 10);
        } catch (NumberFormatException e) {
            int end = i;
            i = start;
            throw error(Category.SIZE, "expected an integer in [-2^63, 2^63) but found " + s.substring(start, end));
        }
    }

    private String str() {
        if (i >= s.length() || s.charAt(i) != '"') {
            throw error(Category.FORMAT, "expected a string");
        }
        i++;
        StringBuilder b = null;
        int run = i;
        while (true) {
            if (i >= s.length()) {
                throw error(Category.FORMAT, "expected the end of the string");
            }
            char c = s.charAt(i);
            if (c == '"') {
                String v = b == null ? s.substring(run, i) : b.append(s, run, i).toString();
                i++;
                return v;
            }
            if (c < 0x20) {
                throw error(Category.FORMAT, "expected no raw control character in a string but found U+"
                        + String.format(Locale.ROOT, "%04X", (int) c));
            }
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i += 2;
                    continue;
                }
                throw error(Category.FORMAT, "expected a well-formed surrogate pair");
            }
            if (c != '\\') {
                i++;
                continue;
            }
            if (b == null) {
                b = new StringBuilder();
            }
            b.append(s, run, i);
            i++;
            char e = i < s.length() ? s.charAt(i) : 0;
            i++;
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    char u = hex4();
                    if (Character.isHighSurrogate(u) && s.startsWith("\\u", i)) {
                        i += 2;
                        char low = hex4();
                        if (!Character.isLowSurrogate(low)) {
                            i -= 6;
                            throw error(Category.FORMAT, "expected a well-formed surrogate pair");
                        }
                        b.append(u).append(low);
                    } else if (Character.isSurrogate(u)) {
                        i -= 6;
                        throw error(Category.FORMAT, "expected a well-formed surrogate pair");
                    } else {
                        b.append(u);
                    }
                }
                default -> {
                    i -= 2;
                    throw error(Category.FORMAT, "expected a JSON escape");
                }
            }
            run = i;
        }
    }

    private char hex4() {
        int v = 0;
        for (int k = 0; k < 4; k++) {
            char h = i + k < s.length() ? s.charAt(i + k) : 0;
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) {
                throw error(Category.FORMAT, "expected four ASCII hex digits");
            }
            v = v * 16 + d;
        }
        i += 4;
        return (char) v;
    }

    /** The failure at the current position, its path built from the keys and indices above it. */
    private ValidationException error(Category category, String what) {
        StringBuilder p = new StringBuilder();
        for (int d = 1; d <= depth; d++) {
            if (keys[d] != null) {
                if (!p.isEmpty()) {
                    p.append('.');
                }
                p.append(printable(keys[d]));
            } else if (indices[d] >= 0) {
                p.append('[').append(indices[d]).append(']');
            }
        }
        return new ValidationException(category, p.toString(), what + " at character " + Math.min(i, s.length()));
    }

    /** {@code key} with what is not printable ASCII escaped, cut after 64 characters (for messages). */
    private static String printable(String key) {
        String k = key.length() > 64 ? key.substring(0, 64) + "..." : key;
        StringBuilder b = new StringBuilder(k.length());
        for (int n = 0; n < k.length(); n++) {
            char c = k.charAt(n);
            if (c < 0x20 || c > 0x7E) {
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /**
     * Appends {@code v} as a JSON string: quotes, backslashes, control characters and every character above
     * U+007E escaped, so the output is ASCII and {@link #object} reads back {@code v} for every string without
     * unpaired surrogates.
     *
     * @param b where to append
     * @param v the string
     * @return {@code b}
     */
    static StringBuilder quote(StringBuilder b, String v) {
        b.append('"');
        for (int k = 0; k < v.length(); k++) {
            char c = v.charAt(k);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\t' -> b.append("\\t");
                case '\r' -> b.append("\\r");
                default -> {
                    if (c < 0x20 || c > 0x7E) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"');
    }
}
