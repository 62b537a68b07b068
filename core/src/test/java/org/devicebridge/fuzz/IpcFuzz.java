package org.devicebridge.fuzz;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.dlpack.DType;
import org.devicebridge.ipc.IpcParsing;
import org.devicebridge.ipc.IpcParsing.NodeSpec;

/**
 * Structure-aware inputs of the IPC fuzzer ({@link IpcFuzzTest}): valid batch descriptors, tensor descriptors
 * and Arrow IPC schema messages from a generator, then mutated as text (character flips, truncations, spliced
 * and deleted spans, numbers replaced by boundary values, keys repeated, values buried in deep nesting,
 * hostile escapes) or as flatbuffer bytes (byte flips, words set to boundary values and backward offsets that
 * make cycles, vtable entries set past a signed short, truncations, length claims up to 4 GiB, appended
 * bytes). An input depends on its seed only. A seed's input is left unmutated one time in eight, and must
 * then be accepted.
 */
final class IpcFuzz {
    private IpcFuzz() {}

    /** One input: the text or bytes, and what was done to it (for the failure message). */
    record Input(String json, byte[] schema, boolean mutated, String mutations) {}

    /** Valid schema messages and their fields, made once from fixed seeds (each input picks one). */
    static final List<byte[]> SCHEMAS = new ArrayList<>();
    static final List<List<Field>> FIELDS = new ArrayList<>();

    static {
        SplittableRandom r = new SplittableRandom(42);
        for (int k = 0; k < 128; k++) {
            List<Field> fields = new ArrayList<>();
            int n = 1 + r.nextInt(k % 16 == 0 ? 40 : 5);
            for (int f = 0; f < n; f++) {
                fields.add(field(r, "f" + f, 0));
            }
            FIELDS.add(fields);
            SCHEMAS.add(message(new Schema(fields)));
        }
    }

    static byte[] message(Schema schema) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            MessageSerializer.serialize(new WriteChannel(Channels.newChannel(out)), schema);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return out.toByteArray();
    }

    private static Field field(SplittableRandom r, String name, int depth) {
        int kind = r.nextInt(depth >= 3 ? 12 : 15);
        ArrowType t = switch (kind) {
            case 0 -> new ArrowType.Int(8 << r.nextInt(4), r.nextBoolean());
            case 1 -> new ArrowType.FloatingPoint(r.nextBoolean() ? FloatingPointPrecision.SINGLE : FloatingPointPrecision.DOUBLE);
            case 2 -> ArrowType.Utf8.INSTANCE;
            case 3 -> ArrowType.Binary.INSTANCE;
            case 4 -> ArrowType.Bool.INSTANCE;
            case 5 -> new ArrowType.Decimal(1 + r.nextInt(38), r.nextInt(5), 128);
            case 6 -> new ArrowType.Date(DateUnit.DAY);
            case 7 -> new ArrowType.Timestamp(TimeUnit.values()[r.nextInt(4)], r.nextBoolean() ? "UTC" : null);
            case 8 -> new ArrowType.FixedSizeBinary(1 + r.nextInt(16));
            case 9 -> ArrowType.LargeUtf8.INSTANCE;
            case 10 -> new ArrowType.Duration(TimeUnit.values()[r.nextInt(4)]);
            case 11 -> ArrowType.Null.INSTANCE;
            case 12 -> ArrowType.List.INSTANCE;
            case 13 -> ArrowType.LargeList.INSTANCE;
            default -> ArrowType.Struct.INSTANCE;
        };
        List<Field> children = new ArrayList<>();
        if (kind >= 12) {
            int n = kind == 14 ? 1 + r.nextInt(3) : 1;
            for (int c = 0; c < n; c++) {
                children.add(field(r, kind == 14 ? "c" + c : "item", depth + 1));
            }
        }
        String label = r.nextInt(8) == 0 ? name + "\u00e9\"" : name;
        return new Field(label, new FieldType(kind != 11 && r.nextBoolean(), t, null), children);
    }

    private static final String[] IDS = {"a", "id-\"1\"", "\\", "\u0000\n\u001f", "\u00e9\ud83d\ude00", "x".repeat(256),
        "3f2a9c1e-7b7d-4b8e-9f0e-2f1a3c4d5e6f", "</script>", "{\"k\": 1}"};

    private static byte[] bytes(SplittableRandom r, int n) {
        byte[] b = new byte[n];
        for (int k = 0; k < n; k++) {
            b[k] = (byte) r.nextInt(256);
        }
        return b;
    }

    private static NodeSpec node(SplittableRandom r, Field f, int handles) {
        long length = r.nextInt(4) == 0 ? r.nextLong(1L << 40) : r.nextInt(100);
        int nb = r.nextInt(4);
        List<long[]> buffers = new ArrayList<>();
        for (int b = 0; b < nb; b++) {
            buffers.add(r.nextInt(4) == 0 ? null : new long[] {r.nextInt(handles), r.nextInt(1 << 20), r.nextInt(1 << 16)});
        }
        List<NodeSpec> children = new ArrayList<>();
        for (Field c : f.getChildren()) {
            children.add(node(r, c, handles));
        }
        return new NodeSpec(length, r.nextBoolean() ? -1 : r.nextLong(length + 1), r.nextInt(3) == 0 ? r.nextInt(64) : 0,
                buffers, children);
    }

    /** A batch descriptor (its schema message mutated as bytes one time in four). */
    static Input batch(SplittableRandom r) {
        int s = r.nextInt(SCHEMAS.size());
        int handles = 1 + r.nextInt(4);
        Field root = new Field("", FieldType.notNullable(ArrowType.Struct.INSTANCE), FIELDS.get(s));
        List<byte[]> hs = new ArrayList<>();
        for (int h = 0; h < handles; h++) {
            hs.add(bytes(r, 64));
        }
        byte[] schema = SCHEMAS.get(s);
        StringBuilder done = new StringBuilder();
        boolean mutate = r.nextInt(8) != 0;
        if (mutate && r.nextInt(4) == 0) {
            schema = mutateBytes(r, schema, done);
        }
        String json = IpcParsing.batchJson(IDS[r.nextInt(IDS.length)], r.nextInt(3) == 0 ? r.nextInt(8) : 0,
                schema, hs, node(r, root, handles), r.nextBoolean() ? null : bytes(r, 64));
        return new Input(mutate ? mutateText(r, json, done) : json, null, mutate, done.toString());
    }

    /** A tensor descriptor. */
    static Input tensor(SplittableRandom r) {
        DType dtype = DType.SUPPORTED.get(r.nextInt(DType.SUPPORTED.size()));
        int ndim = r.nextInt(5);
        long[] shape = new long[ndim];
        long[] strides = new long[ndim];
        long step = 1;
        for (int k = ndim - 1; k >= 0; k--) {
            shape[k] = r.nextInt(9);
            strides[k] = step;
            step *= Math.max(1, shape[k]);
        }
        long elements = Arrays.stream(shape).reduce(1, Math::multiplyExact);
        long nbytes = elements == 0 ? 0 : dtype.isSubByte() ? (elements * dtype.bits() + 7) / 8 : elements * dtype.byteSize();
        String json = IpcParsing.tensorJson(IDS[r.nextInt(IDS.length)], r.nextInt(3) == 0 ? r.nextInt(8) : 0,
                bytes(r, 64), r.nextInt(1 << 20), nbytes + r.nextInt(3) * 64L, dtype, shape, strides,
                r.nextBoolean() ? null : bytes(r, 64));
        StringBuilder done = new StringBuilder();
        boolean mutate = r.nextInt(8) != 0;
        return new Input(mutate ? mutateText(r, json, done) : json, null, mutate, done.toString());
    }

    /** A schema message. */
    static Input schema(SplittableRandom r) {
        byte[] m = SCHEMAS.get(r.nextInt(SCHEMAS.size()));
        StringBuilder done = new StringBuilder();
        boolean mutate = r.nextInt(8) != 0;
        return new Input(null, mutate ? mutateBytes(r, m, done) : m, mutate, done.toString());
    }

    // ---------------------------------------------------------------------------------------- text

    private static final String FLIPS = "\"{}[],:\\0123456789-.eE \t\n\u0000\u001f\u007f\u0661\uff11\u00e9\ud800\udc00xntfu";
    private static final String[] NUMBERS = {"-1", "0", "-0", "1", "2147483647", "2147483648", "-2147483649",
        "4294967296", "-4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "99999999999999999999", "01", "-", "1.5", "1e3", "\u0661", "255", "256", "65535",
        "65536", "64", "65", "3", "true", "null", "\"1\"", "[]"};
    private static final String[] ESCAPES = {"\\u0000", "\\ud800", "\\udc00\\ud800", "\\\"", "\\x", "\\u00", "\\/",
        "\\ud83d\\ude00", "\u0001", "\\"};
    private static final Pattern NUMBER = Pattern.compile("-?[0-9]+");
    private static final Pattern KEY = Pattern.compile("\"[a-z_]+\": ");

    static String mutateText(SplittableRandom r, String s, StringBuilder done) {
        int n = 1 + r.nextInt(3);
        for (int m = 0; m < n && !s.isEmpty(); m++) {
            int at = r.nextInt(s.length());
            switch (r.nextInt(9)) {
                case 0 -> {
                    done.append(" flip@").append(at);
                    s = s.substring(0, at) + FLIPS.charAt(r.nextInt(FLIPS.length())) + s.substring(at + 1);
                }
                case 1 -> {
                    done.append(" truncate@").append(at);
                    s = s.substring(0, at);
                }
                case 2, 3 -> {
                    List<int[]> spans = spans(NUMBER, s);
                    int[] p = spans.get(r.nextInt(spans.size()));
                    String v = NUMBERS[r.nextInt(NUMBERS.length)];
                    done.append(" number@").append(p[0]).append('=').append(v);
                    s = s.substring(0, p[0]) + v + s.substring(p[1]);
                }
                case 4 -> {
                    List<int[]> keys = spans(KEY, s);
                    int[] k = keys.get(r.nextInt(keys.size()));
                    int end = s.indexOf(", ", k[1]);
                    String pair = s.substring(k[0], end < 0 ? k[1] : end + 2);
                    int to = s.lastIndexOf('{', k[0]) + 1;
                    done.append(" duplicate ").append(pair.length() > 24 ? pair.substring(0, 24) : pair);
                    s = s.substring(0, to) + pair + (end < 0 ? "1, " : "") + s.substring(to);
                }
                case 5 -> {
                    int depth = r.nextInt(16) == 0 ? 100_000 : new int[] {2, 63, 64, 65, 80, 159, 160, 161, 1000}[r.nextInt(9)];
                    List<int[]> keys = spans(KEY, s);
                    int v = keys.get(r.nextInt(keys.size()))[1];
                    done.append(" nest").append(depth).append('@').append(v);
                    boolean obj = r.nextBoolean();
                    s = s.substring(0, v) + (obj ? "{\"a\": " : "[").repeat(depth) + "1" + (obj ? "}" : "]").repeat(depth)
                            + (r.nextBoolean() ? ", " + s.substring(v) : s.substring(s.indexOf(',', v) < 0 ? s.length()
                            : s.indexOf(',', v)));
                }
                case 6 -> {
                    int from = r.nextInt(s.length());
                    int len = r.nextInt(Math.min(64, s.length() - from) + 1);
                    done.append(" splice@").append(at);
                    s = s.substring(0, at) + s.substring(from, from + len) + s.substring(at);
                }
                case 7 -> {
                    int len = r.nextInt(Math.min(32, s.length() - at) + 1);
                    done.append(" delete@").append(at).append('+').append(len);
                    s = s.substring(0, at) + s.substring(at + len);
                }
                default -> {
                    int q = s.indexOf("\"id\": \"");
                    int p = q < 0 ? at : q + 7;
                    String e = ESCAPES[r.nextInt(ESCAPES.length)];
                    done.append(" escape@").append(p);
                    s = s.substring(0, p) + e + s.substring(p);
                }
            }
        }
        return s;
    }

    private static List<int[]> spans(Pattern p, String s) {
        List<int[]> out = new ArrayList<>();
        Matcher m = p.matcher(s);
        while (m.find()) {
            out.add(new int[] {m.start(), m.end()});
        }
        if (out.isEmpty()) {
            out.add(new int[] {0, 0});
        }
        return out;
    }

    // ---------------------------------------------------------------------------------------- bytes

    private static final int[] WORDS = {0, 1, 4, 8, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, -4, -8,
        -12, -16, 1 << 20};

    static byte[] mutateBytes(SplittableRandom r, byte[] message, StringBuilder done) {
        byte[] m = message.clone();
        int n = 1 + r.nextInt(3);
        boolean fixLength = r.nextInt(4) != 0; // most inputs get past the framing to the flatbuffer walk
        for (int k = 0; k < n && m.length > 8; k++) {
            ByteBuffer b = ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
            int at = 8 + r.nextInt(m.length - 8);
            int word = (at & ~3) + 4 <= m.length ? at & ~3 : m.length - 4;
            switch (r.nextInt(7)) {
                case 0 -> {
                    done.append(" byte@").append(at);
                    m[at] = (byte) r.nextInt(256);
                }
                case 1 -> {
                    int v = WORDS[r.nextInt(WORDS.length)];
                    done.append(" word@").append(word).append('=').append(v);
                    b.putInt(word, v);
                }
                case 2 -> {
                    int back = -(word - 8 - r.nextInt(Math.max(1, word - 8)) / 4 * 4); // an offset to an earlier place: a cycle
                    done.append(" back@").append(word).append('=').append(back);
                    b.putInt(word, back);
                }
                case 3 -> {
                    int v = new int[] {0, 0x7FFF, 0x8000, 0xFFFF, 3, 4}[r.nextInt(6)];
                    int half = at & ~1;
                    done.append(" short@").append(half).append('=').append(v);
                    b.putShort(Math.min(half, m.length - 2), (short) v);
                }
                case 4 -> {
                    done.append(" truncate@").append(at);
                    m = Arrays.copyOf(m, at);
                }
                case 5 -> {
                    int extra = 1 + r.nextInt(64);
                    done.append(" append").append(extra);
                    m = Arrays.copyOf(m, m.length + extra);
                }
                default -> {
                    int v = WORDS[r.nextInt(WORDS.length)];
                    done.append(" claim=").append(Integer.toUnsignedString(v));
                    b.putInt(4, v);
                    fixLength = false;
                }
            }
        }
        if (fixLength && m.length >= 8) {
            ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN).putInt(4, m.length - 8);
        }
        return m;
    }
}
