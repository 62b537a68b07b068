package org.devicebridge.ipc;

import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.FieldPath;

/**
 * Typed, range-checked reads of the values {@link StrictJson} gives back, each failure a
 * {@link ValidationException} naming the key path: a missing key is {@code STRUCTURE}, a value of the wrong
 * JSON type {@code FORMAT}, a number outside its range the caller's category. Stateless.
 */
final class JsonFields {
    private static final HexFormat HEX = HexFormat.of();
    /** Every {@code long}. */
    static final Range ANY = new Range(Long.MIN_VALUE, Long.MAX_VALUE);
    /** From 0 to {@code Long.MAX_VALUE}. */
    static final Range NON_NEGATIVE = new Range(0, Long.MAX_VALUE);

    /**
     * The integers an {@link #integer} read accepts: {@code [min, max]}, empty where {@code max < min} (a list of
     * no handles admits no index).
     *
     * @param min the least value accepted
     * @param max the greatest value accepted
     */
    record Range(long min, long max) {
        boolean contains(long n) {
            return n >= min && n <= max;
        }
    }

    private JsonFields() {}

    /**
     * {@return the value of {@code key} (possibly {@code null} for JSON null)}
     *
     * @param m an object read
     * @param key the key
     * @param path the object's path (empty for the top level)
     * @throws ValidationException {@code STRUCTURE} if the key is missing
     */
    static Object get(Map<String, Object> m, String key, String path) {
        if (!m.containsKey(key)) {
            throw new ValidationException(Category.STRUCTURE, FieldPath.join(path, key), "expected the key \"" + key
                    + "\" but found none");
        }
        return m.get(key);
    }

    /**
     * {@return the range {@code [min, max]}}
     *
     * @param min the least value accepted
     * @param max the greatest value accepted
     */
    static Range range(long min, long max) {
        return new Range(min, max);
    }

    /**
     * {@return {@code v} as an integer in {@code range}}
     *
     * @param v a value read
     * @param path its path
     * @param range the values accepted
     * @param category the category of an out-of-range refusal
     * @throws ValidationException {@code FORMAT} for a value that is no integer, {@code category} for one
     *         outside the range
     */
    static long integer(Object v, String path, Range range, Category category) {
        if (!(v instanceof Long n)) {
            throw new ValidationException(Category.FORMAT, path, "expected an integer but found " + describe(v));
        }
        if (!range.contains(n)) {
            throw new ValidationException(category, path, "expected an integer in [" + range.min() + ", " + range.max()
                    + "] but found " + n);
        }
        return n;
    }

    /**
     * {@return the integer at {@code key}, in {@code range}}: {@link #get} then {@link #integer(Object, String,
     * Range, Category)}
     *
     * @param m an object read
     * @param key the key
     * @param path the object's path
     * @param range the values accepted
     * @param category the category of an out-of-range refusal
     */
    static long integer(Map<String, Object> m, String key, String path, Range range, Category category) {
        return integer(get(m, key, path), FieldPath.join(path, key), range, category);
    }

    /**
     * {@return {@code v} as a string}
     *
     * @param v a value read
     * @param path its path
     * @throws ValidationException {@code FORMAT} if it is not a string
     */
    static String string(Object v, String path) {
        if (v instanceof String t) {
            return t;
        }
        throw new ValidationException(Category.FORMAT, path, "expected a string but found " + describe(v));
    }

    /**
     * {@return the string at {@code key}}
     *
     * @param m an object read
     * @param key the key
     * @param path the object's path
     */
    static String string(Map<String, Object> m, String key, String path) {
        return string(get(m, key, path), FieldPath.join(path, key));
    }

    /**
     * {@return {@code v} as a list of at most {@code maxSize} elements}
     *
     * @param v a value read
     * @param path its path
     * @param maxSize the most elements accepted
     * @throws ValidationException {@code FORMAT} if it is not a list, {@code SIZE} if it is longer
     */
    static List<?> list(Object v, String path, int maxSize) {
        if (!(v instanceof List<?> l)) {
            throw new ValidationException(Category.FORMAT, path, "expected a list but found " + describe(v));
        }
        if (l.size() > maxSize) {
            throw new ValidationException(Category.SIZE, path, "expected at most " + maxSize + " elements but found "
                    + l.size());
        }
        return l;
    }

    /**
     * {@return {@code v} as an object}
     *
     * @param v a value read
     * @param path its path
     * @throws ValidationException {@code FORMAT} if it is not an object
     */
    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object v, String path) {
        if (v instanceof Map<?, ?> m) {
            return (Map<String, Object>) m;
        }
        throw new ValidationException(Category.FORMAT, path, "expected an object but found " + describe(v));
    }

    /**
     * {@return the bytes {@code v} spells in hex digits (either case), exactly {@code bytes} of them}
     *
     * @param v a value read
     * @param path its path
     * @param bytes how many bytes the digits must spell
     * @throws ValidationException {@code FORMAT} for a value that is no string of hex digits,
     *         {@code STRUCTURE} for a wrong count
     */
    static byte[] hex(Object v, String path, int bytes) {
        String s = string(v, path);
        if (s.length() != 2 * bytes) {
            throw new ValidationException(Category.STRUCTURE, path, "expected " + bytes + " bytes (" + 2 * bytes
                    + " hex digits) but found " + s.length() + " characters");
        }
        for (int k = 0; k < s.length(); k++) {
            if (Character.digit(s.charAt(k), 16) < 0 || s.charAt(k) > 'f') {
                throw new ValidationException(Category.FORMAT, path, "expected hex digits but found a character "
                        + describe(s.substring(k, k + 1)) + " at " + k);
            }
        }
        return HEX.parseHex(s);
    }

    /**
     * Checks that {@code v} is text {@link StrictJson#quote} writes and {@link StrictJson#object} reads back
     * unchanged: at least one and at most {@code maxLength} UTF-16 code units, no unpaired surrogate.
     *
     * @param v the text (an identity sent to another process)
     * @param path its path
     * @param maxLength the most code units accepted
     * @return {@code v}
     * @throws ValidationException {@code SIZE} for an empty or longer text, {@code FORMAT} for an unpaired surrogate
     */
    static String text(String v, String path, int maxLength) {
        if (v.isEmpty() || v.length() > maxLength) {
            throw new ValidationException(Category.SIZE, path, "expected 1 to " + maxLength + " characters but found "
                    + v.length());
        }
        for (int k = 0; k < v.length(); k++) {
            char c = v.charAt(k);
            if (Character.isHighSurrogate(c) && k + 1 < v.length() && Character.isLowSurrogate(v.charAt(k + 1))) {
                k++;
            } else if (Character.isSurrogate(c)) {
                throw new ValidationException(Category.FORMAT, path, "expected no unpaired surrogate but found one at " + k);
            }
        }
        return v;
    }

    /** A value for a message: strings quoted and cut after 32 characters, non-ASCII escaped. */
    static String describe(Object v) {
        if (v instanceof String t) {
            return StrictJson.quote(new StringBuilder(), t.length() > 32 ? t.substring(0, 32) + "..." : t).toString();
        }
        if (v instanceof Map<?, ?>) {
            return "an object";
        }
        if (v instanceof List<?>) {
            return "a list";
        }
        return String.valueOf(v);
    }
}
