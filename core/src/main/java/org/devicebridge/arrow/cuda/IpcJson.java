package org.devicebridge.arrow.cuda;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.JsonCursor;

/**
 * Reads the JSON subset of the CUDA IPC batch descriptor: objects, arrays, strings (with the standard
 * escapes), integers, {@code true}, {@code false} and {@code null}; no fractions or exponents. Objects come
 * back as insertion-ordered maps, arrays as lists, integers as {@code Long}. Nesting is capped so a hostile
 * descriptor cannot exhaust the stack. Every failure is a {@link ValidationException} of category
 * {@link Category#FORMAT} (or {@link Category#STRUCTURE} for a missing key) naming the key path. The lexical
 * steps are {@link JsonCursor}'s (shared with the tensor descriptor's reader); the grammar is this class's.
 * Single-use, single-threaded.
 */
final class IpcJson extends JsonCursor {
    /** Deepest nesting of objects and arrays read (a node of the batch tree costs two levels). */
    static final int MAX_NESTING = 160;

    private int depth;

    private IpcJson(String s) {
        super(s);
    }

    /** Reads {@code text}, which must hold exactly one JSON object (surrounding whitespace allowed). */
    static Map<String, Object> object(String text) {
        IpcJson j = new IpcJson(text);
        j.ws();
        if (!j.peek('{')) {
            throw j.error("expected a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) j.value();
        j.expectEnd();
        return m;
    }

    private Object value() {
        ws();
        if (i >= s.length()) {
            throw error("expected a value");
        }
        char c = s.charAt(i);
        if (c == '{' || c == '[') {
            if (++depth > MAX_NESTING) {
                throw error("expected at most " + MAX_NESTING + " nested objects and arrays");
            }
            Object v = c == '{' ? obj() : arr();
            depth--;
            return v;
        }
        if (c == '"') {
            return str();
        }
        for (String word : new String[] {"null", "true", "false"}) {
            if (s.startsWith(word, i)) {
                i += word.length();
                return word.equals("null") ? null : Boolean.valueOf(word.equals("true"));
            }
        }
        return integer();
    }

    private Map<String, Object> obj() {
        expect('{');
        Map<String, Object> m = new LinkedHashMap<>();
        if (!peek('}')) {
            do {
                ws();
                String key = str();
                expect(':');
                if (m.containsKey(key)) {
                    throw error("expected each key once but found \"" + key + "\" again");
                }
                m.put(key, value());
            } while (skip(','));
        }
        expect('}');
        return Collections.unmodifiableMap(m);
    }

    private List<Object> arr() {
        expect('[');
        List<Object> l = new ArrayList<>();
        if (!peek(']')) {
            do {
                l.add(value());
            } while (skip(','));
        }
        expect(']');
        return Collections.unmodifiableList(l);
    }

    private Long integer() {
        int start = i;
        if (i < s.length() && s.charAt(i) == '-') {
            i++;
        }
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        if (i < s.length() && (s.charAt(i) == '.' || s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            throw error("expected an integer");
        }
        try {
            return Long.parseLong(s.substring(start, i));
        } catch (NumberFormatException e) {
            i = start;
            throw error("expected a value");
        }
    }

    private String str() {
        if (i >= s.length() || s.charAt(i) != '"') {
            throw error("expected a string");
        }
        i++;
        StringBuilder b = new StringBuilder();
        while (true) {
            if (i >= s.length()) {
                throw error("expected the end of the string");
            }
            char c = s.charAt(i++);
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw error("expected no control character in a string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (i >= s.length()) {
                throw error("expected an escape");
            }
            char e = s.charAt(i++);
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (i + 4 > s.length()) {
                        throw error("expected four hex digits");
                    }
                    try {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    } catch (NumberFormatException x) {
                        throw error("expected four hex digits");
                    }
                    i += 4;
                }
                default -> throw error("expected a JSON escape");
            }
        }
    }

    // ---- typed reads of one key, each failure naming the path ----

    static Object get(Map<String, Object> m, String key, String path) {
        if (!m.containsKey(key)) {
            throw new ValidationException(Category.STRUCTURE, path, "expected the key \"" + key + "\" but found none");
        }
        return m.get(key);
    }

    static long number(Map<String, Object> m, String key, String path) {
        return asLong(get(m, key, path), path);
    }

    static String string(Map<String, Object> m, String key, String path) {
        return asString(get(m, key, path), path);
    }

    static List<?> list(Map<String, Object> m, String key, String path) {
        if (get(m, key, path) instanceof List<?> l) {
            return l;
        }
        throw new ValidationException(Category.FORMAT, path, "expected a list but found " + m.get(key));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object v, String path) {
        if (v instanceof Map<?, ?> m) {
            return (Map<String, Object>) m;
        }
        throw new ValidationException(Category.FORMAT, path, "expected an object but found " + v);
    }

    /** Appends {@code s} as a JSON string (quotes and escapes). */
    static StringBuilder quote(StringBuilder b, String s) {
        b.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) {
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
