package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.FieldPath;

/**
 * The language-neutral description of an Arrow record batch in device memory shared through CUDA IPC: one
 * line of JSON that another process on the same machine (a JVM, CPython with CuPy and pyarrow, C++) reads to
 * map the batch's buffers zero-copy. Format, version 1:
 *
 * {@snippet lang=json :
 * {"devicebridge_ipc": 1, "kind": "arrow_batch", "id": "3f2a...", "device": 0,
 *  "schema": "<base64 of the Arrow IPC schema message (encapsulated: continuation, length, flatbuffer)>",
 *  "handles": ["<128 hex digits: the CUipcMemHandle of one allocation>", "..."],
 *  "array": {"length": 3, "null_count": 0, "offset": 0, "buffers": [null],
 *            "children": [{"length": 3, "null_count": 1, "offset": 0,
 *                          "buffers": [[0, 0, 1], [0, 64, 24]], "children": [], "dictionary": null}],
 *            "dictionary": null},
 *  "event_handle": "<128 hex digits of a CUipcEventHandle, or null when the data was ready>"}
 * }
 *
 * <p>{@code schema} is what pyarrow's {@code pa.ipc.read_schema} reads and {@code Schema.serialize()} writes
 * (Arrow Java: {@code MessageSerializer}); its fields are the children of the {@code array} node, a struct.
 * Each node carries the C Data Interface's {@code length}, {@code null_count} ({@code -1}: unknown) and
 * {@code offset}, and its buffers in the C Data Interface's order for its type: {@code null} for a NULL
 * buffer, else {@code [handle, offset, size]}: the index into {@code handles}, the byte offset from the base of
 * that allocation (what {@code cuIpcOpenMemHandle} maps: a process sharing a sub-range of a larger allocation,
 * as CuPy's memory pool hands out, sends the base's handle and the offset from it) and the buffer's byte size.
 * {@code handles} holds one handle per distinct allocation. The reader makes its stream wait on the event
 * before reading; when it has closed every mapping it sends back the close message
 * {@code {"devicebridge_ipc_closed": "<id>"}} ({@link #closeMessage()}), and the exporter keeps the memory
 * alive until then ({@link IpcBatchExport}).
 *
 * <p><b>Version 2: pool memory.</b> Memory of an IPC-shareable stream-ordered pool has no {@code CUipcMemHandle};
 * a descriptor that names such allocations carries {@code "devicebridge_ipc": 2} and the key {@code pool_pointers}:
 * one {@code {"pool": <index>, "pointer": "<128 hex digits of CUmemPoolPtrExportData>"}} per allocation, the pool
 * an index into the pools the reader imported over the worker channel's socket, in the order they came. The
 * allocations a buffer's {@code handle} indexes are {@code handles} followed by {@code pool_pointers}. A
 * descriptor without pool allocations is written as version 1, unchanged.
 *
 * <p>The full specification, with what a reader refuses, is {@code docs/ipc-format.md}. The constructor checks
 * what needs no GPU, with exact arithmetic: the id, the device ordinal, handle sizes and count, handle indices,
 * signs, null counts, sums that overflow, the schema message's size and nesting depth. The schema message's
 * flatbuffer and its agreement with the nodes are checked by {@link IpcBatchImport} before anything is mapped;
 * the buffers' place in their mapped allocations after mapping, with the library's import validation.
 *
 * <p>Immutable and thread-safe; it owns nothing (the handles are plain bytes).
 *
 * @param id the export's identity, echoed in the close message (any string; JSON escapes are written as needed)
 * @param device the CUDA device ordinal
 * @param schema the Arrow IPC schema message
 * @param handles the 64-byte memory handles, one per allocation
 * @param poolPointers the allocations of IPC-shareable pools (version 2), after {@code handles} in the indices of
 *        the buffers; empty in version 1
 * @param array the root node: a struct whose children are the columns
 * @param eventHandle the 64 bytes of the event handle, or {@code null} when the data was ready at export
 */
record IpcBatchDescriptor(String id, int device, byte[] schema, List<byte[]> handles, List<PoolPointer> poolPointers,
                          Node array, byte[] eventHandle) {
    /** The format version written in {@code devicebridge_ipc} when no allocation is pool memory. */
    public static final int FORMAT_VERSION = Acknowledgement.FORMAT_VERSION;
    /** The format version written when {@link #poolPointers()} is not empty. */
    public static final int POOL_FORMAT_VERSION = 2;
    /** The most pools a reader imports (one per device of the exporting process). */
    public static final int MAX_POOLS = 64;
    /** The longest descriptor {@link #parse} reads, in characters. */
    public static final int MAX_JSON_CHARS = 1 << 22;
    /** The most allocation handles one descriptor names. */
    public static final int MAX_HANDLES = 1 << 16;
    /** The largest schema message accepted, in bytes. */
    public static final int MAX_SCHEMA_BYTES = 1 << 21;
    /** The {@code kind} of this descriptor. */
    public static final String KIND = "arrow_batch";
    private static final HexFormat HEX = HexFormat.of();
    static final int HANDLE_SIZE = 64;

    /**
     * One node of the batch: the C Data Interface fields of an {@code ArrowArray} with its buffers named by
     * allocation and offset instead of by address.
     *
     * <p>Immutable and thread-safe.
     *
     * @param length the number of elements
     * @param nullCount the number of nulls, or {@code -1} when unknown
     * @param offset the logical offset into the buffers
     * @param buffers the buffers in C Data Interface order; an element is {@code null} for a NULL buffer
     * @param children the child nodes
     * @param dictionary the dictionary of a dictionary-encoded node, or {@code null}
     */
    public record Node(long length, long nullCount, long offset, List<BufferRef> buffers, List<Node> children,
                       Node dictionary) {
        /**
         * Copies the lists (keeping {@code null} buffers) and checks the signs and sums.
         *
         * @throws ValidationException ({@code SIZE}) for a negative length or offset, {@code offset + length}
         *         beyond int64, or a null count below -1 or above the length
         */
        public Node {
            Objects.requireNonNull(buffers, "buffers");
            Objects.requireNonNull(children, "children");
            buffers = Collections.unmodifiableList(new ArrayList<>(buffers));
            children = List.copyOf(children);
            if (length < 0 || offset < 0) {
                throw new ValidationException(Category.SIZE, length < 0 ? "length" : "offset",
                        "expected a value >= 0 but found " + (length < 0 ? length : offset));
            }
            if (offset > Long.MAX_VALUE - length) {
                throw new ValidationException(Category.SIZE, "offset", "expected offset + length within int64 but"
                        + " found " + offset + " + " + length);
            }
            if (nullCount < -1 || nullCount > length) {
                throw new ValidationException(Category.SIZE, "null_count", "expected a value in [-1, " + length
                        + "] but found " + nullCount);
            }
        }
    }

    /**
     * Where a buffer lies: {@code size} bytes at {@code offset} from the base of allocation {@code handle}.
     *
     * <p>Immutable and thread-safe.
     *
     * @param handle the index into the descriptor's allocations: {@code handles}, then {@code pool_pointers}
     * @param offset the byte offset from the allocation's base
     * @param size the buffer's size in bytes
     */
    public record BufferRef(int handle, long offset, long size) {
        /**
         * Checks the signs and that {@code offset + size} does not overflow.
         *
         * @throws ValidationException ({@code SIZE}) for a negative index, offset or size, or an overflowing end
         */
        public BufferRef {
            if (handle < 0 || offset < 0 || size < 0) {
                throw new ValidationException(Category.SIZE, "", "expected [handle, offset, size] >= 0 but found ["
                        + handle + ", " + offset + ", " + size + "]");
            }
            if (offset > Long.MAX_VALUE - size) {
                throw new ValidationException(Category.SIZE, "", "expected offset + size to fit in 64 bits but found "
                        + offset + " + " + size);
            }
        }

        /** {@return {@code offset + size}} */
        public long end() {
            return offset + size;
        }
    }

    /**
     * Copies the arrays and checks the components.
     *
     * @throws ValidationException {@code SIZE} or {@code FORMAT} for an id that is empty, longer than 256 code
     *         units or holds an unpaired surrogate, {@code STRUCTURE} for a handle that is not 64 bytes or an
     *         empty schema, {@code SIZE} for a buffer naming a handle that does not exist, more than
     *         {@link #MAX_HANDLES} handles or a schema above {@link #MAX_SCHEMA_BYTES}, {@code DEVICE} for a
     *         negative device, {@code DEPTH} for nodes nested deeper than 64, {@code FORMAT} for a root with a
     *         dictionary
     */
    public IpcBatchDescriptor {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(handles, "handles");
        Objects.requireNonNull(poolPointers, "poolPointers");
        Objects.requireNonNull(array, "array");
        Acknowledgement.checkId(id);
        if (handles.size() > MAX_HANDLES) {
            throw new ValidationException(Category.SIZE, "handles", "expected at most " + MAX_HANDLES
                    + " handles but found " + handles.size());
        }
        if (poolPointers.size() > MAX_HANDLES - handles.size()) {
            throw new ValidationException(Category.SIZE, "pool_pointers", "expected at most " + MAX_HANDLES
                    + " allocations in all but found " + handles.size() + " handles and " + poolPointers.size()
                    + " pool pointers");
        }
        poolPointers = List.copyOf(poolPointers);
        if (schema.length > MAX_SCHEMA_BYTES) {
            throw new ValidationException(Category.SIZE, "schema", "expected at most " + MAX_SCHEMA_BYTES
                    + " bytes but found " + schema.length);
        }
        schema = schema.clone();
        List<byte[]> copies = new ArrayList<>(handles.size());
        for (int k = 0; k < handles.size(); k++) {
            byte[] h = Objects.requireNonNull(handles.get(k), "handles[" + k + "]");
            if (h.length != HANDLE_SIZE) {
                throw new ValidationException(Category.STRUCTURE, "handles[" + k + "]", "expected " + HANDLE_SIZE
                        + " bytes but found " + h.length);
            }
            copies.add(h.clone());
        }
        handles = Collections.unmodifiableList(copies);
        eventHandle = eventHandle == null ? null : eventHandle.clone();
        if (eventHandle != null && eventHandle.length != HANDLE_SIZE) {
            throw new ValidationException(Category.STRUCTURE, "event_handle", "expected " + HANDLE_SIZE
                    + " bytes but found " + eventHandle.length);
        }
        if (device < 0) {
            throw new ValidationException(Category.DEVICE, "device", "expected a device ordinal >= 0 but found "
                    + device);
        }
        if (schema.length == 0) {
            throw new ValidationException(Category.STRUCTURE, "schema", "expected an Arrow IPC schema message but"
                    + " found no bytes");
        }
        if (array.dictionary() != null) {
            throw new ValidationException(Category.FORMAT, "array.dictionary", "expected a struct root without a"
                    + " dictionary but found one");
        }
        checkRefs(array, copies.size() + poolPointers.size(), "array", 0);
    }

    private static void checkRefs(Node n, int handles, String path, int depth) {
        if (depth > FieldPath.MAX_DEPTH) {
            throw new ValidationException(Category.DEPTH, path, "expected at most " + FieldPath.MAX_DEPTH
                    + " levels of nesting but found more");
        }
        for (int i = 0; i < n.buffers().size(); i++) {
            BufferRef b = n.buffers().get(i);
            if (b != null && b.handle() >= handles) {
                throw new ValidationException(Category.SIZE, FieldPath.join(path, "buffers[" + i + "]"),
                        "expected an allocation index below " + handles + " but found " + b.handle());
            }
        }
        for (int c = 0; c < n.children().size(); c++) {
            checkRefs(n.children().get(c), handles, FieldPath.join(path, "children[" + c + "]"), depth + 1);
        }
        if (n.dictionary() != null) {
            checkRefs(n.dictionary(), handles, FieldPath.join(path, "dictionary"), depth + 1);
        }
    }

    /** {@return the Arrow IPC schema message (a copy)} */
    @Override
    public byte[] schema() {
        return schema.clone();
    }

    /** {@return the 64-byte memory handles (copies), one per allocation} */
    @Override
    public List<byte[]> handles() {
        List<byte[]> out = new ArrayList<>(handles.size());
        for (byte[] h : handles) {
            out.add(h.clone());
        }
        return Collections.unmodifiableList(out);
    }

    /** {@return the 64 bytes of the event handle (a copy), or {@code null}} */
    @Override
    public byte[] eventHandle() {
        return eventHandle == null ? null : eventHandle.clone();
    }

    /** {@return the descriptor as one line of ASCII JSON (the format of the class comment)} */
    public String toJson() {
        StringBuilder b = new StringBuilder(1024);
        b.append("{\"devicebridge_ipc\": ").append(version()).append(", \"kind\": \"").append(KIND)
                .append("\", \"id\": ");
        StrictJson.quote(b, id).append(", \"device\": ").append(device).append(", \"schema\": \"")
                .append(Base64.getEncoder().encodeToString(schema)).append("\", \"handles\": [");
        for (int k = 0; k < handles.size(); k++) {
            b.append(k == 0 ? "\"" : ", \"").append(HEX.formatHex(handles.get(k))).append('"');
        }
        b.append(']');
        if (!poolPointers.isEmpty()) {
            b.append(", \"pool_pointers\": [");
            for (int k = 0; k < poolPointers.size(); k++) {
                PoolPointer p = poolPointers.get(k);
                b.append(k == 0 ? "" : ", ").append("{\"pool\": ").append(p.pool()).append(", \"pointer\": \"")
                        .append(HEX.formatHex(p.pointer())).append("\"}");
            }
            b.append(']');
        }
        b.append(", \"array\": ");
        node(b, array);
        b.append(", \"event_handle\": ").append(eventHandle == null ? "null" : "\"" + HEX.formatHex(eventHandle) + "\"")
                .append('}');
        return b.toString();
    }

    private static void node(StringBuilder b, Node n) {
        b.append("{\"length\": ").append(n.length()).append(", \"null_count\": ").append(n.nullCount())
                .append(", \"offset\": ").append(n.offset()).append(", \"buffers\": [");
        for (int i = 0; i < n.buffers().size(); i++) {
            BufferRef r = n.buffers().get(i);
            b.append(i == 0 ? "" : ", ");
            if (r == null) {
                b.append("null");
            } else {
                b.append('[').append(r.handle()).append(", ").append(r.offset()).append(", ").append(r.size()).append(']');
            }
        }
        b.append("], \"children\": [");
        for (int c = 0; c < n.children().size(); c++) {
            b.append(c == 0 ? "" : ", ");
            node(b, n.children().get(c));
        }
        b.append("], \"dictionary\": ");
        if (n.dictionary() == null) {
            b.append("null");
        } else {
            node(b, n.dictionary());
        }
        b.append('}');
    }

    /** {@return the format version this descriptor is written as: 2 when it names pool memory, else 1} */
    int version() {
        return poolPointers.isEmpty() ? FORMAT_VERSION : POOL_FORMAT_VERSION;
    }

    /** {@return the message the importer sends back once it closed every mapping} */
    public String closeMessage() {
        return Acknowledgement.closeMessage(id);
    }

    /**
     * Reads a descriptor written by {@link #toJson()} or by another language following the format. Keys
     * the format does not name are read strictly, then ignored; a node's {@code dictionary} may be left out (no
     * dictionary). It opens nothing and needs no CUDA driver (the schema message's flatbuffer is checked by
     * {@link IpcBatchImport}).
     *
     * @param json one JSON object of at most {@link #MAX_JSON_CHARS} characters
     * @return the descriptor
     * @throws ValidationException with the key path (e.g. {@code array.children[1].buffers[2]}):
     *         {@code FORMAT} for text that is not strict JSON (see {@code docs/ipc-format.md}), a wrong value type, bad
     *         hex or base64, or another {@code kind}; {@code VERSION} for a format version other than 1 and 2, or
     *         {@code pool_pointers} in version 1;
     *         {@code STRUCTURE} for a missing key; {@code DEVICE} for a device outside {@code [0, 2^31)};
     *         {@code SIZE} for a number outside its range; and the constructors' categories
     */
    public static IpcBatchDescriptor parse(String json) {
        return IpcBatchJson.parse(Objects.requireNonNull(json, "json"));
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
        return o instanceof IpcBatchDescriptor d && d.toJson().equals(toJson());
    }

    @Override
    public int hashCode() {
        return toJson().hashCode();
    }

    @Override
    public String toString() {
        return "IpcBatchDescriptor" + toJson();
    }
}
