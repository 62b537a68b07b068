package org.devicebridge.dlpack;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.JsonCursor;

/**
 * The language-neutral description of a tensor shared through CUDA IPC: one line of JSON that any process
 * on the same machine (a JVM, CPython with CuPy or PyTorch, C++) reads to map the memory zero-copy. Format,
 * version 1 (every key always present):
 *
 * {@snippet lang=json :
 * {"devicebridge_ipc": 1, "kind": "tensor", "id": "3f2a...", "device": 0,
 *  "mem_handle": "<128 hex digits: the CUipcMemHandle / cudaIpcMemHandle_t of the whole allocation>",
 *  "offset": 256, "nbytes": 4096,
 *  "dtype": [2, 32, 1], "typestr": "<f4", "shape": [32, 32], "strides": [32, 1],
 *  "event_handle": "<128 hex digits of a CUipcEventHandle, or null when the data was ready>"}
 * }
 *
 * <p>{@code offset} is the byte offset of element {@code [0, ..., 0]} from the start of the allocation the
 * handle names ({@code cuIpcOpenMemHandle} maps the allocation's base); {@code nbytes} the bytes from there the
 * tensor spans; {@code dtype} is DLPack's {@code (code, bits, lanes)}; {@code typestr} the same type as NumPy
 * names it; {@code strides} are in elements (NumPy/CuPy: multiply by the item size). The reader waits on the
 * event (on its own stream) before reading. When it has closed its mapping it sends back the close message
 * {@code {"devicebridge_ipc_closed": "<id>"}} ({@link #closeMessage()}) over the same channel; the exporter
 * keeps the memory alive until then ({@link IpcTensorExport}).
 *
 * <p>Immutable and thread-safe; it owns nothing (the handles are plain bytes).
 *
 * @param id the export's identity, echoed in the close message
 * @param device the CUDA device ordinal
 * @param memHandle the 64 bytes of the memory handle
 * @param offset bytes from the allocation's base to element {@code [0, ..., 0]}
 * @param nbytes bytes the tensor spans from there (0 for an empty tensor)
 * @param dtype the element type
 * @param shape the extents
 * @param strides the strides in elements
 * @param eventHandle the 64 bytes of the event handle, or {@code null} when the data was ready at export
 */
public record IpcTensorDescriptor(String id, int device, byte[] memHandle, long offset, long nbytes, DType dtype,
                                  long[] shape, long[] strides, byte[] eventHandle) {
    /** The format version written in {@code devicebridge_ipc}. */
    public static final int FORMAT_VERSION = 1;
    private static final HexFormat HEX = HexFormat.of();

    /**
     * Checks the components.
     *
     * @throws ValidationException for a handle that is not 64 bytes, a negative offset or size, or shape and
     *         strides of different lengths
     */
    public IpcTensorDescriptor {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(memHandle, "memHandle");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(strides, "strides");
        memHandle = memHandle.clone();
        shape = shape.clone();
        strides = strides.clone();
        eventHandle = eventHandle == null ? null : eventHandle.clone();
        if (memHandle.length != 64 || (eventHandle != null && eventHandle.length != 64)) {
            throw new ValidationException(Category.STRUCTURE, memHandle.length != 64 ? "mem_handle" : "event_handle",
                    "expected 64 bytes but found " + (memHandle.length != 64 ? memHandle.length : eventHandle.length));
        }
        if (offset < 0 || nbytes < 0) {
            throw new ValidationException(Category.SIZE, offset < 0 ? "offset" : "nbytes", "expected a value >= 0 but found "
                    + Math.min(offset, nbytes));
        }
        if (shape.length != strides.length) {
            throw new ValidationException(Category.STRUCTURE, "strides", "expected " + shape.length
                    + " strides but found " + strides.length);
        }
    }

    /** {@return the 64 bytes of the memory handle (a copy)} */
    @Override
    public byte[] memHandle() {
        return memHandle.clone();
    }

    /** {@return the extents (a copy)} */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** {@return the strides in elements (a copy)} */
    @Override
    public long[] strides() {
        return strides.clone();
    }

    /** {@return the 64 bytes of the event handle (a copy), or {@code null}} */
    @Override
    public byte[] eventHandle() {
        return eventHandle == null ? null : eventHandle.clone();
    }

    /** {@return the descriptor as one line of JSON (the format of the class comment)} */
    public String toJson() {
        StringBuilder b = new StringBuilder(512);
        b.append("{\"devicebridge_ipc\": ").append(FORMAT_VERSION).append(", \"kind\": \"tensor\", \"id\": \"")
                .append(id).append("\", \"device\": ").append(device).append(", \"mem_handle\": \"")
                .append(HEX.formatHex(memHandle)).append("\", \"offset\": ").append(offset).append(", \"nbytes\": ")
                .append(nbytes).append(", \"dtype\": [").append(dtype.code()).append(", ").append(dtype.bits())
                .append(", ").append(dtype.lanes()).append("], \"typestr\": ").append(typestr()).append(", \"shape\": ")
                .append(list(shape)).append(", \"strides\": ").append(list(strides)).append(", \"event_handle\": ")
                .append(eventHandle == null ? "null" : "\"" + HEX.formatHex(eventHandle) + "\"").append('}');
        return b.toString();
    }

    /** {@return the message the importer sends back once it closed its mapping} */
    public String closeMessage() {
        return "{\"devicebridge_ipc_closed\": \"" + id + "\"}";
    }

    private String typestr() {
        char kind = switch (dtype.code()) {
            case DType.KDL_INT -> 'i';
            case DType.KDL_UINT -> 'u';
            case DType.KDL_FLOAT -> 'f';
            case DType.KDL_COMPLEX -> 'c';
            case DType.KDL_BOOL -> 'b';
            default -> 0;
        };
        if (kind == 0 || dtype.bits() % 8 != 0 || dtype.lanes() != 1) {
            return "null";
        }
        int size = dtype.bits() / 8;
        return "\"" + (size == 1 ? '|' : '<') + kind + size + "\"";
    }

    private static String list(long[] v) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            b.append(i == 0 ? "" : ", ").append(v[i]);
        }
        return b.append(']').toString();
    }

    /**
     * Reads a descriptor written by {@link #toJson()} or by another language following the format.
     *
     * @param json one JSON object
     * @return the descriptor
     * @throws ValidationException {@code FORMAT} for malformed JSON or a wrong type, {@code VERSION} for a
     *         format version other than 1, {@code STRUCTURE} for a missing key
     */
    public static IpcTensorDescriptor parse(String json) {
        Objects.requireNonNull(json, "json");
        Map<String, Object> m = Json.object(json);
        long version = Json.number(m, "devicebridge_ipc");
        if (version != FORMAT_VERSION) {
            throw new ValidationException(Category.VERSION, "devicebridge_ipc", "expected format version "
                    + FORMAT_VERSION + " but found " + version);
        }
        List<Long> dt = Json.numbers(m, "dtype");
        if (dt.size() != 3) {
            throw new ValidationException(Category.FORMAT, "dtype", "expected [code, bits, lanes] but found " + dt);
        }
        DType dtype = DType.of(dt.get(0).intValue(), dt.get(1).intValue(), dt.get(2).intValue(), "dtype");
        Object event = m.get("event_handle");
        return new IpcTensorDescriptor(Json.string(m, "id"), Math.toIntExact(Json.number(m, "device")),
                Json.hex(m, "mem_handle"), Json.number(m, "offset"), Json.number(m, "nbytes"), dtype,
                Json.numbers(m, "shape").stream().mapToLong(Long::longValue).toArray(),
                Json.numbers(m, "strides").stream().mapToLong(Long::longValue).toArray(),
                event == null ? null : Json.hex(m, "event_handle"));
    }

    /**
     * {@return the export id a close message names}
     *
     * @param closeMessage {@code {"devicebridge_ipc_closed": "<id>"}}
     * @throws ValidationException if it is not a close message
     */
    public static String closedId(String closeMessage) {
        return Json.string(Json.object(Objects.requireNonNull(closeMessage, "closeMessage")), "devicebridge_ipc_closed");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcTensorDescriptor d && d.toJson().equals(toJson());
    }

    @Override
    public int hashCode() {
        return toJson().hashCode();
    }

    @Override
    public String toString() {
        return "IpcTensorDescriptor" + toJson();
    }

    /**
     * A reader of the small JSON subset the format uses: one flat object of strings without escapes, integers,
     * null and integer lists, between any Java whitespace. The lexical steps are {@link JsonCursor}'s.
     */
    private static final class Json extends JsonCursor {
        private Json(String s) {
            super(s);
        }

        @Override
        protected boolean isWhitespace(char c) {
            return Character.isWhitespace(c);
        }

        static Map<String, Object> object(String text) {
            Json j = new Json(text);
            Map<String, Object> m = new LinkedHashMap<>();
            j.expect('{');
            if (!j.peek('}')) {
                do {
                    String key = j.str();
                    j.expect(':');
                    m.put(key, j.value());
                } while (j.skip(','));
            }
            j.expect('}');
            j.expectEnd();
            return m;
        }

        private Object value() {
            ws();
            if (peek('"')) {
                return str();
            }
            if (peek('[')) {
                expect('[');
                List<Long> l = new ArrayList<>();
                if (!peek(']')) {
                    do {
                        Object v = value();
                        if (!(v instanceof Long n)) {
                            throw error("expected an integer in a list");
                        }
                        l.add(n);
                    } while (skip(','));
                }
                expect(']');
                return l;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            int start = i;
            if (i < s.length() && s.charAt(i) == '-') {
                i++;
            }
            while (i < s.length() && Character.isDigit(s.charAt(i))) {
                i++;
            }
            try {
                return Long.parseLong(s.substring(start, i));
            } catch (NumberFormatException e) {
                throw error("expected a value");
            }
        }

        private String str() {
            expect('"');
            int start = i;
            while (i < s.length() && s.charAt(i) != '"') {
                if (s.charAt(i) == '\\') {
                    throw error("escapes are not used by the format");
                }
                i++;
            }
            String v = s.substring(start, i);
            expect('"');
            return v;
        }

        private static Object get(Map<String, Object> m, String key) {
            if (!m.containsKey(key)) {
                throw new ValidationException(Category.STRUCTURE, key, "expected the key but found none");
            }
            return m.get(key);
        }

        static long number(Map<String, Object> m, String key) {
            return asLong(get(m, key), key);
        }

        static String string(Map<String, Object> m, String key) {
            return asString(get(m, key), key);
        }

        @SuppressWarnings("unchecked")
        static List<Long> numbers(Map<String, Object> m, String key) {
            if (get(m, key) instanceof List<?> l) {
                return (List<Long>) l;
            }
            throw new ValidationException(Category.FORMAT, key, "expected a list of integers but found " + m.get(key));
        }

        static byte[] hex(Map<String, Object> m, String key) {
            try {
                return HEX.parseHex(string(m, key));
            } catch (IllegalArgumentException e) {
                throw new ValidationException(Category.FORMAT, key, "expected hex digits but found " + m.get(key));
            }
        }
    }
}
