package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ipc.IpcBatchDescriptor.BufferRef;
import org.devicebridge.ipc.IpcBatchDescriptor.Node;
import org.devicebridge.internal.FieldPath;

/**
 * Reads the JSON of an {@link IpcBatchDescriptor} with the library's one strict reader ({@link StrictJson}),
 * every number range-checked before it is narrowed or combined (see {@link IpcBatchDescriptor#parse}).
 * Stateless.
 */
final class IpcBatchJson {
    private IpcBatchJson() {}

    static IpcBatchDescriptor parse(String json) {
        Map<String, Object> m = StrictJson.object(json, IpcBatchDescriptor.MAX_JSON_CHARS);
        long version = JsonFields.integer(m, "devicebridge_ipc", "", JsonFields.ANY, Category.VERSION);
        if (version != IpcBatchDescriptor.FORMAT_VERSION && version != IpcBatchDescriptor.POOL_FORMAT_VERSION) {
            throw new ValidationException(Category.VERSION, "devicebridge_ipc", "expected format version "
                    + IpcBatchDescriptor.FORMAT_VERSION + " or " + IpcBatchDescriptor.POOL_FORMAT_VERSION + " but found "
                    + version);
        }
        String kind = JsonFields.string(m, "kind", "");
        if (!IpcBatchDescriptor.KIND.equals(kind)) {
            throw new ValidationException(Category.FORMAT, "kind", "expected \"" + IpcBatchDescriptor.KIND + "\" but found "
                    + JsonFields.describe(kind));
        }
        String id = JsonFields.string(m, "id", "");
        int device = (int) JsonFields.integer(m, "device", "", JsonFields.range(0, Integer.MAX_VALUE), Category.DEVICE);
        byte[] schema = base64(JsonFields.string(m, "schema", ""));
        List<?> hs = JsonFields.list(JsonFields.get(m, "handles", ""), "handles", IpcBatchDescriptor.MAX_HANDLES);
        List<byte[]> handles = new ArrayList<>(hs.size());
        for (int k = 0; k < hs.size(); k++) {
            handles.add(JsonFields.hex(hs.get(k), "handles[" + k + "]", IpcBatchDescriptor.HANDLE_SIZE));
        }
        List<PoolPointer> pools = poolPointers(m, version, handles.size());
        Object event = JsonFields.get(m, "event_handle", "");
        byte[] eventHandle = event == null ? null : JsonFields.hex(event, "event_handle", IpcBatchDescriptor.HANDLE_SIZE);
        Node array = readNode(JsonFields.object(JsonFields.get(m, "array", ""), "array"), "array", 0,
                handles.size() + pools.size());
        return new IpcBatchDescriptor(id, device, schema, handles, pools, array, eventHandle);
    }

    /**
     * The {@code pool_pointers} of version 2 (required there, possibly empty); none in version 1, where the key is
     * refused: a version 1 reader would ignore it and misread the buffers that index it.
     */
    private static List<PoolPointer> poolPointers(Map<String, Object> m, long version, int handles) {
        if (version == IpcBatchDescriptor.FORMAT_VERSION) {
            if (m.containsKey("pool_pointers")) {
                throw new ValidationException(Category.VERSION, "pool_pointers", "expected pool pointers only in format"
                        + " version " + IpcBatchDescriptor.POOL_FORMAT_VERSION + " but found them in version " + version);
            }
            return List.of();
        }
        List<?> ps = JsonFields.list(JsonFields.get(m, "pool_pointers", ""), "pool_pointers",
                IpcBatchDescriptor.MAX_HANDLES - handles);
        List<PoolPointer> out = new ArrayList<>(ps.size());
        for (int k = 0; k < ps.size(); k++) {
            String at = "pool_pointers[" + k + "]";
            Map<String, Object> p = JsonFields.object(ps.get(k), at);
            int pool = (int) JsonFields.integer(p, "pool", at, JsonFields.range(0, IpcBatchDescriptor.MAX_POOLS - 1L), Category.SIZE);
            byte[] pointer = JsonFields.hex(JsonFields.get(p, "pointer", at), at + ".pointer", IpcBatchDescriptor.HANDLE_SIZE);
            out.add(new PoolPointer(pool, pointer));
        }
        return out;
    }

    /** Standard base64 with padding (RFC 4648, section 4), at most {@link #IpcBatchDescriptor.MAX_SCHEMA_BYTES} bytes decoded. */
    private static byte[] base64(String s) {
        if (s.length() > (IpcBatchDescriptor.MAX_SCHEMA_BYTES + 2) / 3 * 4) {
            throw new ValidationException(Category.SIZE, "schema", "expected at most " + IpcBatchDescriptor.MAX_SCHEMA_BYTES
                    + " bytes but found " + s.length() + " base64 characters");
        }
        if (s.length() % 4 != 0) {
            throw new ValidationException(Category.FORMAT, "schema", "expected padded base64 (a multiple of 4"
                    + " characters) but found " + s.length() + " characters");
        }
        try {
            return Base64.getDecoder().decode(s);
        } catch (IllegalArgumentException e) {
            throw new ValidationException(Category.FORMAT, "schema", "expected base64 but found " + e.getMessage(), e);
        }
    }

    private static Node readNode(Map<String, Object> m, String path, int depth, int handles) {
        if (depth > FieldPath.MAX_DEPTH) { // before reading children: the recursion stays bounded
            throw new ValidationException(Category.DEPTH, path, "expected at most " + FieldPath.MAX_DEPTH
                    + " levels of nesting but found more");
        }
        long length = JsonFields.integer(m, "length", path, JsonFields.NON_NEGATIVE, Category.SIZE);
        long nullCount = JsonFields.integer(m, "null_count", path, JsonFields.range(-1, length), Category.SIZE);
        long offset = JsonFields.integer(m, "offset", path, JsonFields.range(0, Long.MAX_VALUE - length),
                Category.SIZE);
        String bPath = FieldPath.join(path, "buffers");
        List<?> bs = JsonFields.list(JsonFields.get(m, "buffers", path), bPath, Integer.MAX_VALUE);
        List<BufferRef> buffers = new ArrayList<>(bs.size());
        for (int i = 0; i < bs.size(); i++) {
            String at = bPath + "[" + i + "]";
            Object b = bs.get(i);
            if (b == null) {
                buffers.add(null);
                continue;
            }
            if (!(b instanceof List<?> l) || l.size() != 3) {
                throw new ValidationException(Category.FORMAT, at, "expected null or [handle, offset, size] but found "
                        + JsonFields.describe(b) + (b instanceof List<?> l ? " of " + l.size() : ""));
            }
            if (handles == 0) {
                throw new ValidationException(Category.SIZE, at, "expected no buffer (the descriptor has no"
                        + " allocations) but found one");
            }
            int h = (int) JsonFields.integer(l.get(0), at + "[0]", JsonFields.range(0, handles - 1L), Category.SIZE);
            long o = JsonFields.integer(l.get(1), at + "[1]", JsonFields.NON_NEGATIVE, Category.SIZE);
            long z = JsonFields.integer(l.get(2), at + "[2]", JsonFields.range(0, Long.MAX_VALUE - o), Category.SIZE);
            buffers.add(new BufferRef(h, o, z));
        }
        String cPath = FieldPath.join(path, "children");
        List<?> cs = JsonFields.list(JsonFields.get(m, "children", path), cPath, Integer.MAX_VALUE);
        List<Node> children = new ArrayList<>(cs.size());
        for (int c = 0; c < cs.size(); c++) {
            String at = cPath + "[" + c + "]";
            children.add(readNode(JsonFields.object(cs.get(c), at), at, depth + 1, handles));
        }
        Object d = m.get("dictionary");
        String dictPath = FieldPath.join(path, "dictionary");
        Node dictionary = d == null ? null : readNode(JsonFields.object(d, dictPath), dictPath, depth + 1, handles);
        return new Node(length, nullCount, offset, buffers, children, dictionary);
    }

}
