package org.devicebridge.ipc;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.FieldPath;

/**
 * A bounds-checked walk of an encapsulated Arrow IPC schema message (the {@code schema} of an
 * {@link IpcBatchDescriptor}) before Arrow Java's deserialiser sees it, which trusts every length and offset:
 * a length claim beyond the bytes makes it allocate what is claimed, a negative offset makes it loop back
 * until the stack is exhausted, a table shared by many parents makes it build an object per path.
 *
 * <p>Checked, with exact arithmetic and nothing allocated in proportion to any claim: the framing (an optional
 * {@code 0xFFFFFFFF} continuation, a little-endian length equal to the bytes that follow, at most
 * {@link IpcBatchDescriptor#MAX_SCHEMA_BYTES}); every offset followed (unsigned, forward, inside the
 * flatbuffer: so no cycle is possible), every vtable, table, string (NUL-terminated, UTF-8) and vector (its
 * claimed length at most what remains) inside the flatbuffer; a {@code Message} of metadata version V4 or V5
 * whose header is a {@code Schema} and whose body is empty; little-endian data; a known type with its table on
 * every field; field nesting at most {@link FieldPath#MAX_DEPTH}; at most {@link #MAX_TABLES} tables and
 * {@link #MAX_EXPANDED_BYTES} bytes of strings and vectors visited, counting a shared table once per parent
 * (what the deserialiser builds). Fields and slots this walk does not know are left to the deserialiser,
 * whose exceptions the caller turns into {@link ValidationException}s.
 *
 * <p>Every refusal is a {@link ValidationException} with a path such as
 * {@code schema.fields[2].children[0].type}. Single-use, single-threaded; it owns nothing.
 */
final class SchemaMessageVerifier {
    /** The most tables visited, a table shared by several parents counted once per parent. */
    static final int MAX_TABLES = 1 << 16;
    /** The most bytes of strings and vectors visited, counted as tables are. */
    static final long MAX_EXPANDED_BYTES = 16L << 20;
    private static final int CONTINUATION = 0xFFFFFFFF;
    private static final int STRING = -1;
    private static final int INT_VECTOR = -2;
    /** Per {@code Type} union member (Schema.fbs), the width of each slot of its table, or STRING / INT_VECTOR. */
    private static final int[][] TYPE_SLOTS = {
        null, {}, {4, 1}, {2}, {}, {}, {}, {4, 4, 4}, {2}, {2, 4}, {2, STRING}, {2}, {}, {}, {2, INT_VECTOR}, {4},
        {4}, {1}, {2}, {}, {}, {}, {}, {}, {}, {}, {}};

    private final ByteBuffer b;
    private final int size;
    private int tables;
    private long expanded;

    private SchemaMessageVerifier(ByteBuffer flatbuffer) {
        this.b = flatbuffer;
        this.size = flatbuffer.remaining();
    }

    /**
     * Checks {@code message}, an encapsulated Arrow IPC schema message.
     *
     * @throws ValidationException ({@code SIZE}, {@code FORMAT}, {@code VERSION} or {@code DEPTH}, path
     *         {@code schema...}) for anything the class comment lists
     */
    static void verify(byte[] message) {
        if (message.length > IpcBatchDescriptor.MAX_SCHEMA_BYTES) {
            throw new ValidationException(Category.SIZE, "schema", "expected at most "
                    + IpcBatchDescriptor.MAX_SCHEMA_BYTES + " bytes but found " + message.length);
        }
        ByteBuffer all = ByteBuffer.wrap(message).order(ByteOrder.LITTLE_ENDIAN);
        if (message.length < 8) {
            throw new ValidationException(Category.FORMAT, "schema", "expected an encapsulated message (at least 8"
                    + " bytes) but found " + message.length + " bytes");
        }
        int prefix = all.getInt(0) == CONTINUATION ? 8 : 4;
        long length = Integer.toUnsignedLong(all.getInt(prefix - 4));
        if (length == 0) {
            throw new ValidationException(Category.FORMAT, "schema", "expected a schema message but found the"
                    + " end-of-stream marker (length 0)");
        }
        if (length != message.length - prefix) {
            throw new ValidationException(Category.SIZE, "schema", "expected a metadata length of the "
                    + (message.length - prefix) + " bytes that follow but found " + length);
        }
        new SchemaMessageVerifier(all.slice(prefix, (int) length).order(ByteOrder.LITTLE_ENDIAN)).message();
    }

    private void message() {
        int t = table(indirect(0, "schema"), "schema");
        int version = (int) scalar(t, 0, 2, "schema.version", 0);
        if (version != 3 && version != 4) {
            throw new ValidationException(Category.VERSION, "schema.version", "expected metadata version V4 or V5"
                    + " but found V" + (version + 1));
        }
        long header = scalar(t, 1, 1, "schema.header_type", 0);
        if (header != 1) {
            throw new ValidationException(Category.FORMAT, "schema.header_type", "expected a Schema message (1) but"
                    + " found header type " + header);
        }
        int at = field(t, 2, 4, "schema.header");
        if (at < 0) {
            throw new ValidationException(Category.FORMAT, "schema.header", "expected the Schema table but found none");
        }
        long body = scalar(t, 3, 8, "schema.bodyLength", 0);
        if (body != 0) {
            throw new ValidationException(Category.FORMAT, "schema.bodyLength", "expected no body (0) but found " + body);
        }
        keyValues(t, 4, "schema.custom_metadata");
        int s = table(indirect(at, "schema.header"), "schema");
        long endianness = scalar(s, 0, 2, "schema.endianness", 0);
        if (endianness != 0) {
            throw new ValidationException(Category.FORMAT, "schema.endianness", "expected little-endian data (0) but"
                    + " found " + endianness);
        }
        fields(s, 1, "schema.fields", 0);
        keyValues(s, 2, "schema.custom_metadata");
        vector(s, 3, 8, "schema.features");
    }

    private void fields(int t, int slot, String path, int depth) {
        int v = vector(t, slot, 4, path);
        if (v < 0) {
            return;
        }
        int n = b.getInt(v);
        for (int k = 0; k < n; k++) {
            field(table(indirect(v + 4 + 4 * k, path), path + "[" + k + "]"), path + "[" + k + "]", depth);
        }
    }

    private void field(int t, String path, int depth) {
        string(t, 0, FieldPath.join(path, "name"));
        scalar(t, 1, 1, FieldPath.join(path, "nullable"), 0);
        long type = scalar(t, 2, 1, FieldPath.join(path, "type_type"), 0);
        String typePath = FieldPath.join(path, "type");
        if (type <= 0 || type >= TYPE_SLOTS.length) {
            throw new ValidationException(Category.FORMAT, typePath, "expected a type of Schema.fbs (1 to "
                    + (TYPE_SLOTS.length - 1) + ") but found " + type);
        }
        int at = field(t, 3, 4, typePath);
        if (at < 0) {
            throw new ValidationException(Category.FORMAT, typePath, "expected the type's table but found none");
        }
        int tt = table(indirect(at, typePath), typePath);
        int[] slots = TYPE_SLOTS[(int) type];
        for (int k = 0; k < slots.length; k++) {
            String p = typePath + ".slot" + k;
            switch (slots[k]) {
                case STRING -> string(tt, k, p);
                case INT_VECTOR -> vector(tt, k, 4, p);
                default -> scalar(tt, k, slots[k], p, 0);
            }
        }
        String dPath = FieldPath.join(path, "dictionary");
        int d = field(t, 4, 4, dPath);
        if (d >= 0) {
            int dt = table(indirect(d, dPath), dPath);
            scalar(dt, 0, 8, FieldPath.join(dPath, "id"), 0);
            int it = field(dt, 1, 4, FieldPath.join(dPath, "indexType"));
            if (it >= 0) {
                int ti = table(indirect(it, FieldPath.join(dPath, "indexType")), FieldPath.join(dPath, "indexType"));
                scalar(ti, 0, 4, FieldPath.join(dPath, "indexType.bitWidth"), 0);
                scalar(ti, 1, 1, FieldPath.join(dPath, "indexType.is_signed"), 0);
            }
            scalar(dt, 2, 1, FieldPath.join(dPath, "isOrdered"), 0);
            scalar(dt, 3, 2, FieldPath.join(dPath, "dictionaryKind"), 0);
        }
        String cPath = FieldPath.join(path, "children");
        if (field(t, 5, 4, cPath) >= 0 && depth >= FieldPath.MAX_DEPTH) { // before the descent
            throw new ValidationException(Category.DEPTH, cPath, "expected at most " + FieldPath.MAX_DEPTH
                    + " levels of nested fields but found more");
        }
        fields(t, 5, cPath, depth + 1);
        keyValues(t, 6, FieldPath.join(path, "custom_metadata"));
    }

    private void keyValues(int t, int slot, String path) {
        int v = vector(t, slot, 4, path);
        if (v < 0) {
            return;
        }
        int n = b.getInt(v);
        for (int k = 0; k < n; k++) {
            String p = path + "[" + k + "]";
            int kv = table(indirect(v + 4 + 4 * k, p), p);
            string(kv, 0, p + ".key");
            string(kv, 1, p + ".value");
        }
    }

    // ---- flatbuffer primitives: every read bounds-checked first ----

    private void need(long at, long bytes, String path, String what) {
        if (at < 0 || bytes < 0 || at > size - bytes) {
            throw new ValidationException(Category.FORMAT, path, "expected " + what + " inside the " + size
                    + "-byte flatbuffer but it lies at [" + at + ", " + (at + bytes) + ")");
        }
    }

    /** The position a forward offset at {@code at} points to. */
    private int indirect(int at, String path) {
        need(at, 4, path, "an offset");
        long u = Integer.toUnsignedLong(b.getInt(at));
        if (u == 0 || at + u >= size) {
            throw new ValidationException(Category.FORMAT, path, "expected an offset to a later place in the "
                    + size + "-byte flatbuffer but found " + u + " at " + at);
        }
        return (int) (at + u);
    }

    /** Checks the table at {@code t} and its vtable; {@return {@code t}} */
    private int table(int t, String path) {
        if (++tables > MAX_TABLES) {
            throw new ValidationException(Category.DEPTH, path, "expected at most " + MAX_TABLES + " tables (a table"
                    + " counted once per parent) but found more");
        }
        need(t, 4, path, "a table");
        long vt = (long) t - b.getInt(t);
        need(vt, 4, path, "a vtable");
        int vsize = Short.toUnsignedInt(b.getShort((int) vt));
        int tsize = Short.toUnsignedInt(b.getShort((int) vt + 2));
        // the deserialiser reads both as signed shorts: anything from 0x8000 would point backwards
        if (vsize < 4 || vsize % 2 != 0 || vsize > 0x7FFF || tsize < 4 || tsize > 0x7FFF) {
            throw new ValidationException(Category.FORMAT, path, "expected a vtable of 4 to 32766 bytes for a table of"
                    + " 4 to 32767 bytes but found " + vsize + " and " + tsize);
        }
        need(vt, vsize, path, "the vtable");
        need(t, tsize, path, "the table");
        return t;
    }

    /** {@return the position of slot {@code slot} of the table at {@code t} ({@code width} bytes), or -1 if absent} */
    private int field(int t, int slot, int width, String path) {
        int vt = t - b.getInt(t); // checked by table()
        int vsize = b.getShort(vt);
        int vo = 4 + 2 * slot;
        if (vo >= vsize) {
            return -1;
        }
        int fo = Short.toUnsignedInt(b.getShort(vt + vo));
        if (fo == 0) {
            return -1;
        }
        int tsize = b.getShort(vt + 2);
        if (fo < 4 || fo > tsize - width) {
            throw new ValidationException(Category.FORMAT, path, "expected a " + width + "-byte field inside its "
                    + tsize + "-byte table but found it at " + fo);
        }
        return t + fo;
    }

    private long scalar(int t, int slot, int width, String path, long absent) {
        int at = field(t, slot, width, path);
        if (at < 0) {
            return absent;
        }
        return switch (width) {
            case 1 -> Byte.toUnsignedInt(b.get(at));
            case 2 -> b.getShort(at);
            case 4 -> b.getInt(at);
            default -> b.getLong(at);
        };
    }

    /** Checks the vector at slot {@code slot}; {@return the position of its length, or -1 if absent} */
    private int vector(int t, int slot, int elementSize, String path) {
        int at = field(t, slot, 4, path);
        if (at < 0) {
            return -1;
        }
        int v = indirect(at, path);
        need(v, 4, path, "a vector length");
        long n = Integer.toUnsignedLong(b.getInt(v));
        if (n > (size - v - 4L) / elementSize) {
            throw new ValidationException(Category.SIZE, path, "expected at most the " + (size - v - 4L) / elementSize
                    + " elements the flatbuffer has room for but found a length of " + n);
        }
        spend(n * elementSize, path);
        return v;
    }

    private void string(int t, int slot, String path) {
        int at = field(t, slot, 4, path);
        if (at < 0) {
            return;
        }
        int v = indirect(at, path);
        need(v, 4, path, "a string length");
        long n = Integer.toUnsignedLong(b.getInt(v));
        if (n > size - v - 5L) {
            throw new ValidationException(Category.SIZE, path, "expected a string within the flatbuffer ("
                    + Math.max(0, size - v - 5L) + " bytes at most) but found a length of " + n);
        }
        if (b.get((int) (v + 4 + n)) != 0) {
            throw new ValidationException(Category.FORMAT, path, "expected a NUL after the string's " + n + " bytes");
        }
        spend(n, path);
        if (!utf8(v + 4, (int) n)) {
            throw new ValidationException(Category.FORMAT, path, "expected UTF-8 but found a malformed sequence");
        }
    }

    private void spend(long bytes, String path) {
        expanded += bytes;
        if (expanded > MAX_EXPANDED_BYTES) {
            throw new ValidationException(Category.SIZE, path, "expected at most " + MAX_EXPANDED_BYTES + " bytes of"
                    + " strings and vectors (a shared one counted once per parent) but found more");
        }
    }

    /** Whether the {@code n} bytes at {@code at} are well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
    private boolean utf8(int at, int n) {
        int k = at;
        int end = at + n;
        while (k < end) {
            int c = b.get(k++) & 0xFF;
            if (c < 0x80) {
                continue;
            }
            int more;
            int min;
            if (c >= 0xC2 && c <= 0xDF) {
                more = 1;
                min = 0x80;
            } else if (c >= 0xE0 && c <= 0xEF) {
                more = 2;
                min = 0x800;
            } else if (c >= 0xF0 && c <= 0xF4) {
                more = 3;
                min = 0x10000;
            } else {
                return false;
            }
            if (end - k < more) {
                return false;
            }
            int cp = c & (0x3F >> more);
            for (int m = 0; m < more; m++) {
                int x = b.get(k++) & 0xFF;
                if ((x & 0xC0) != 0x80) {
                    return false;
                }
                cp = cp << 6 | (x & 0x3F);
            }
            if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                return false;
            }
        }
        return true;
    }
}
