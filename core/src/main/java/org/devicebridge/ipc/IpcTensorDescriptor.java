package org.devicebridge.ipc;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.TensorSpec;

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
 * <p>The full specification, with what a reader refuses, is {@code docs/ipc-format.md}. Every field is
 * checked when the descriptor is made, with exact arithmetic: the id (1 to 256 code units), the device
 * ordinal, the handles' sizes, {@code offset} and {@code nbytes} (non-negative, their sum within int64),
 * at most 64 dimensions, non-negative extents, strides that reach no byte before element
 * {@code [0, ..., 0]} and no byte past {@code nbytes}; so nothing is mapped for a descriptor that cannot be
 * opened.
 *
 * <p>Immutable and thread-safe; it owns nothing (the handles are plain bytes).
 *
 * @param id the export's identity, echoed in the close message (1 to 256 UTF-16 code units, no unpaired
 *        surrogate; written with JSON escapes as needed)
 * @param device the CUDA device ordinal
 * @param memHandle the 64 bytes of the memory handle
 * @param offset bytes from the allocation's base to element {@code [0, ..., 0]}
 * @param nbytes bytes the tensor spans from there (0 for an empty tensor)
 * @param dtype the element type
 * @param shape the extents
 * @param strides the strides in elements
 * @param eventHandle the 64 bytes of the event handle, or {@code null} when the data was ready at export
 */
record IpcTensorDescriptor(String id, int device, byte[] memHandle, long offset, long nbytes, DType dtype,
                                  long[] shape, long[] strides, byte[] eventHandle) {
    /** The format version written in {@code devicebridge_ipc}. */
    public static final int FORMAT_VERSION = Acknowledgement.FORMAT_VERSION;
    /** The {@code kind} of this descriptor. */
    public static final String KIND = "tensor";
    /** The longest descriptor {@link #parse} reads, in characters. */
    public static final int MAX_JSON_CHARS = 1 << 16;
    private static final HexFormat HEX = HexFormat.of();
    private static final int HANDLE_SIZE = 64;

    /**
     * Checks the components (see the class comment).
     *
     * @throws ValidationException {@code SIZE} or {@code FORMAT} for a bad id, {@code DEVICE} for a negative
     *         device, {@code STRUCTURE} for a handle that is not 64 bytes or shape and strides of different
     *         lengths, {@code FORMAT} for a dtype this library cannot lay out, {@code SIZE} for a negative
     *         offset, size or extent, more than 64 dimensions, sums or products beyond int64, or strides
     *         reaching before element {@code [0, ..., 0]}, {@code LENGTH} for a tensor beyond {@code nbytes}
     */
    public IpcTensorDescriptor {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(memHandle, "memHandle");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(strides, "strides");
        Acknowledgement.checkId(id);
        memHandle = memHandle.clone();
        shape = shape.clone();
        strides = strides.clone();
        eventHandle = eventHandle == null ? null : eventHandle.clone();
        if (device < 0) {
            throw new ValidationException(Category.DEVICE, "device", "expected a device ordinal >= 0 but found " + device);
        }
        if (memHandle.length != HANDLE_SIZE || (eventHandle != null && eventHandle.length != HANDLE_SIZE)) {
            throw new ValidationException(Category.STRUCTURE, memHandle.length != HANDLE_SIZE ? "mem_handle"
                    : "event_handle", "expected 64 bytes but found " + (memHandle.length != HANDLE_SIZE
                    ? memHandle.length : eventHandle.length));
        }
        if (offset < 0 || nbytes < 0) {
            throw new ValidationException(Category.SIZE, offset < 0 ? "offset" : "nbytes", "expected a value >= 0 but found "
                    + Math.min(offset, nbytes));
        }
        if (offset > Long.MAX_VALUE - nbytes) {
            throw new ValidationException(Category.SIZE, "nbytes", "expected offset + nbytes within int64 but found "
                    + offset + " + " + nbytes);
        }
        if (shape.length > TensorSpec.MAX_NDIM) {
            throw new ValidationException(Category.SIZE, "shape", "expected at most " + TensorSpec.MAX_NDIM
                    + " dimensions but found " + shape.length);
        }
        // the dtype, shape and strides checked as DLPack checks a tensor's; sub-byte elements packed
        TensorSpec g = TensorSpec.of(MemorySegment.NULL, dtype, shape).withStrides(strides);
        long extent = g.packedByteExtent();
        if (g.byteStart() != 0) {
            throw new ValidationException(Category.SIZE, "strides", "expected strides that reach no byte before element"
                    + " [0, ..., 0] but they reach " + -g.byteStart() + " bytes before it");
        }
        if (extent > nbytes) {
            throw new ValidationException(Category.LENGTH, "nbytes", "expected at least the " + extent
                    + " bytes the shape and strides span but found " + nbytes);
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

    /** {@return the descriptor as one line of ASCII JSON (the format of the class comment)} */
    public String toJson() {
        StringBuilder b = new StringBuilder(512);
        b.append("{\"devicebridge_ipc\": ").append(FORMAT_VERSION).append(", \"kind\": \"").append(KIND)
                .append("\", \"id\": ");
        StrictJson.quote(b, id).append(", \"device\": ").append(device).append(", \"mem_handle\": \"")
                .append(HEX.formatHex(memHandle)).append("\", \"offset\": ").append(offset).append(", \"nbytes\": ")
                .append(nbytes).append(", \"dtype\": [").append(dtype.code()).append(", ").append(dtype.bits())
                .append(", ").append(dtype.lanes()).append("], \"typestr\": ");
        String typestr = typestr(dtype);
        if (typestr == null) {
            b.append("null");
        } else {
            StrictJson.quote(b, typestr);
        }
        b.append(", \"shape\": ").append(list(shape)).append(", \"strides\": ").append(list(strides))
                .append(", \"event_handle\": ")
                .append(eventHandle == null ? "null" : "\"" + HEX.formatHex(eventHandle) + "\"").append('}');
        return b.toString();
    }

    /** {@return the message the importer sends back once it closed its mapping} */
    public String closeMessage() {
        return Acknowledgement.closeMessage(id);
    }

    /** NumPy's typestr of {@code dtype}, or {@code null} where NumPy has none. */
    private static String typestr(DType dtype) {
        char kind = switch (dtype.code()) {
            case DType.KDL_INT -> 'i';
            case DType.KDL_UINT -> 'u';
            case DType.KDL_FLOAT -> 'f';
            case DType.KDL_COMPLEX -> 'c';
            case DType.KDL_BOOL -> 'b';
            default -> 0;
        };
        if (kind == 0 || dtype.bits() % 8 != 0 || dtype.lanes() != 1) {
            return null;
        }
        int size = dtype.bits() / 8;
        return (size == 1 ? "|" : "<") + kind + size;
    }

    private static String list(long[] v) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            b.append(i == 0 ? "" : ", ").append(v[i]);
        }
        return b.append(']').toString();
    }

    /**
     * Reads a descriptor written by {@link #toJson()} or by another language following the format (keys it
     * does not name are read strictly, then ignored). It opens nothing and needs no CUDA driver.
     *
     * @param json one JSON object of at most {@link #MAX_JSON_CHARS} characters
     * @return the descriptor, every field checked as the constructor checks it
     * @throws ValidationException with the key path: {@code FORMAT} for text that is not strict JSON (see
     *         docs/ipc-format.md), a wrong value type, bad hex, another {@code kind}, a {@code typestr} that
     *         disagrees with {@code dtype} or a {@code dtype} field outside its C type; {@code VERSION} for a
     *         format version other than 1; {@code STRUCTURE} for a missing key; {@code DEVICE} for a device
     *         outside {@code [0, 2^31)}; and the constructor's categories
     */
    public static IpcTensorDescriptor parse(String json) {
        Objects.requireNonNull(json, "json");
        Map<String, Object> m = StrictJson.object(json, MAX_JSON_CHARS);
        long version = JsonFields.integer(m, "devicebridge_ipc", "", JsonFields.ANY, Category.VERSION);
        if (version != FORMAT_VERSION) {
            throw new ValidationException(Category.VERSION, "devicebridge_ipc", "expected format version "
                    + FORMAT_VERSION + " but found " + version);
        }
        String kind = JsonFields.string(m, "kind", "");
        if (!KIND.equals(kind)) {
            throw new ValidationException(Category.FORMAT, "kind", "expected \"" + KIND + "\" but found "
                    + JsonFields.describe(kind));
        }
        String id = JsonFields.string(m, "id", "");
        int device = (int) JsonFields.integer(m, "device", "", JsonFields.range(0, Integer.MAX_VALUE), Category.DEVICE);
        byte[] memHandle = JsonFields.hex(JsonFields.get(m, "mem_handle", ""), "mem_handle", HANDLE_SIZE);
        long offset = JsonFields.integer(m, "offset", "", JsonFields.NON_NEGATIVE, Category.SIZE);
        long nbytes = JsonFields.integer(m, "nbytes", "", JsonFields.NON_NEGATIVE, Category.SIZE);
        List<?> dt = JsonFields.list(JsonFields.get(m, "dtype", ""), "dtype", 3);
        if (dt.size() != 3) {
            throw new ValidationException(Category.FORMAT, "dtype", "expected [code, bits, lanes] but found "
                    + dt.size() + " elements");
        }
        JsonFields.Range uint8 = JsonFields.range(0, 0xFF);
        DType dtype = new DType((int) JsonFields.integer(dt.get(0), "dtype[0]", uint8, Category.FORMAT),
                (int) JsonFields.integer(dt.get(1), "dtype[1]", uint8, Category.FORMAT),
                (int) JsonFields.integer(dt.get(2), "dtype[2]", JsonFields.range(0, 0xFFFF), Category.FORMAT));
        dtype.check("dtype");
        Object typestr = JsonFields.get(m, "typestr", "");
        String expected = typestr(dtype);
        if (typestr == null ? expected != null : !JsonFields.string(typestr, "typestr").equals(expected)) {
            throw new ValidationException(Category.FORMAT, "typestr", "expected " + (expected == null ? "null"
                    : JsonFields.describe(expected)) + " (what dtype " + dtype + " is in NumPy) but found "
                    + JsonFields.describe(typestr));
        }
        long[] shape = longs(JsonFields.get(m, "shape", ""), "shape", 0);
        long[] strides = longs(JsonFields.get(m, "strides", ""), "strides", Long.MIN_VALUE);
        Object event = JsonFields.get(m, "event_handle", "");
        return new IpcTensorDescriptor(id, device, memHandle, offset, nbytes, dtype, shape, strides,
                event == null ? null : JsonFields.hex(event, "event_handle", HANDLE_SIZE));
    }

    private static long[] longs(Object v, String path, long min) {
        List<?> l = JsonFields.list(v, path, TensorSpec.MAX_NDIM);
        long[] out = new long[l.size()];
        for (int k = 0; k < out.length; k++) {
            out[k] = JsonFields.integer(l.get(k), path + "[" + k + "]", JsonFields.range(min, Long.MAX_VALUE),
                    Category.SIZE);
        }
        return out;
    }

    /**
     * {@return the export id a close message names}
     *
     * @param closeMessage {@code {"devicebridge_ipc_closed": "<id>"}}
     * @throws ValidationException if it is not a close message
     */
    public static String closedId(String closeMessage) {
        return Acknowledgement.closedId(Objects.requireNonNull(closeMessage, "closeMessage"));
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
}
