package org.devicebridge.ipc;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The worker protocol's messages (format in {@code docs/ipc-format.md}, section "Worker channel"): one JSON
 * object per line, either a header ({@code {"devicebridge_worker": 1, "kind": ...}}) or a close message of the
 * descriptor format. A {@code call} or {@code result} header is followed by exactly one descriptor line of the
 * payload it names. This class writes the JVM's headers and reads the worker's, with {@link StrictJson}, every
 * field range-checked. Stateless.
 */
final class WorkerProtocol {
    /** The protocol version written in {@code devicebridge_worker}. */
    static final int VERSION = 1;
    static final String KEY = "devicebridge_worker";
    /** The longest header or close message line, in bytes (the channel's ASCII or UTF-8 encoded text). */
    static final int MAX_HEADER_BYTES = 1 << 16;
    /** The most handles one {@code unmap} or {@code unmapped} list names. */
    static final int MAX_HANDLE_LIST = 256;
    /**
     * The most handles one {@code retire} list (worker) or {@code retired} list (JVM) names: few slabs live per
     * channel, and a call header with the longest {@code unmap} and {@code retired} lists still fits one line.
     */
    static final int MAX_RETIRE_LIST = 16;
    /** The most indices a result's {@code persistent} list holds, and the largest index + 1. */
    static final int MAX_PERSISTENT = 256;
    /** The longest error text of an {@code error} header, in UTF-16 code units. */
    static final int MAX_ERROR_CHARS = 1 << 14;
    private static final HexFormat HEX = HexFormat.of();

    /** What a header line is. */
    enum Kind {
        HELLO, CALL, RESULT, ERROR, BYE;

        String wire() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** What a {@code call} or {@code result} carries on its descriptor line. */
    enum Payload {
        ARROW_BATCH(IpcBatchDescriptor.KIND, IpcBatchDescriptor.MAX_JSON_CHARS),
        TENSOR(IpcTensorDescriptor.KIND, IpcTensorDescriptor.MAX_JSON_CHARS);

        final String wire;
        final int maxLineBytes;

        Payload(String wire, int maxLineBytes) {
            this.wire = wire;
            this.maxLineBytes = maxLineBytes;
        }
    }

    /**
     * A line the worker sent: a header (then {@code closedId} is null) or a close message (then only
     * {@code closedId} is set).
     *
     * @param kind the header's kind, or {@code null} for a close message
     * @param seq the call a {@code result} or {@code error} answers; 0 otherwise
     * @param payload what the descriptor line after a {@code result} holds; null otherwise
     * @param unmapped the handles (lower-case hex) the worker closed since its last header
     * @param error the error text of an {@code error} header; null otherwise
     * @param closedId the export id a close message names; null for a header
     * @param pid the worker's process id its {@code hello} names; 0 when it names none or for another kind
     * @param poolSocket the Unix socket its {@code hello} offers for memory pools; null when none
     * @param persistent the indices into a {@code result}'s descriptor handles that the worker keeps alive for later
     *        results (its slabs), which the JVM may keep mapped; empty otherwise
     * @param retire the handles (lower-case hex) of persistent allocations the worker will free once the JVM
     *        confirms that it unmapped them ({@code retired} of a later call); empty otherwise
     * @param persistentEvent whether a {@code result}'s event handle names an event the worker keeps for the
     *        channel's life (the JVM may keep it open)
     */
    record Message(Kind kind, long seq, Payload payload, List<String> unmapped, String error, String closedId, long pid,
                   String poolSocket, List<Integer> persistent, List<String> retire, boolean persistentEvent) {}

    /** The most bytes of a {@code pool_socket} path (a Unix socket address holds 107 and a NUL). */
    static final int MAX_SOCKET_PATH_BYTES = 107;

    private WorkerProtocol() {}

    /** {@return the JVM's {@code hello} header} */
    static String hello() {
        return "{\"" + KEY + "\": " + VERSION + ", \"kind\": \"hello\"}";
    }

    /** {@return the JVM's {@code bye} header: the worker closes every mapping, answers {@code bye} and stops} */
    static String bye() {
        return "{\"" + KEY + "\": " + VERSION + ", \"kind\": \"bye\"}";
    }

    /**
     * {@return the JVM's {@code call} header}
     *
     * @param seq the call's number: 1 for the first call of a channel, then one more per call
     * @param payload what the next line holds
     * @param unmap handles (hex) of allocations the worker mapped earlier and must close before it answers
     * @param transientHandles indices into the descriptor's handles that the worker closes after this call
     *        instead of keeping them mapped
     */
    static String call(long seq, Payload payload, List<String> unmap, List<Integer> transientHandles) {
        return call(seq, payload, unmap, transientHandles, 0);
    }

    /**
     * {@return the JVM's {@code call} header} as {@link #call(long, Payload, List, List)}, telling the worker that
     * {@code poolsSent} pools were sent over its {@code pool_socket} since the previous call (written only when not
     * 0): it takes them, in order, before it reads the descriptor
     */
    static String call(long seq, Payload payload, List<String> unmap, List<Integer> transientHandles, int poolsSent) {
        if (unmap.size() > MAX_HANDLE_LIST) {
            throw new IllegalArgumentException("at most " + MAX_HANDLE_LIST + " handles per unmap list");
        }
        StringBuilder b = new StringBuilder(160 + 132 * unmap.size());
        b.append("{\"").append(KEY).append("\": ").append(VERSION).append(", \"kind\": \"call\", \"seq\": ").append(seq)
                .append(", \"payload\": \"").append(payload.wire).append("\", \"unmap\": [");
        for (int k = 0; k < unmap.size(); k++) {
            b.append(k == 0 ? "\"" : ", \"").append(unmap.get(k)).append('"');
        }
        b.append("], \"transient\": [");
        for (int k = 0; k < transientHandles.size(); k++) {
            b.append(k == 0 ? "" : ", ").append(transientHandles.get(k));
        }
        b.append(']');
        if (poolsSent != 0) {
            b.append(", \"pools_sent\": ").append(poolsSent);
        }
        return b.append('}').toString();
    }

    /**
     * {@return {@code callHeader} with {@code "persistent_event": true} added when {@code persistent}}: the call's
     * event belongs to the channel's pool and lives until the goodbye, so the worker may keep its opening.
     */
    static String withPersistentEvent(String callHeader, boolean persistent) {
        if (!persistent) {
            return callHeader;
        }
        return callHeader.substring(0, callHeader.length() - 1) + ", \"persistent_event\": true}";
    }

    /**
     * {@return {@code callHeader} with {@code retired} added (unchanged when it is empty)}: the persistent
     * allocations the worker retired that the JVM no longer maps, which the worker may free now
     *
     * @throws IllegalArgumentException for more than {@value #MAX_RETIRE_LIST} handles
     */
    static String withRetired(String callHeader, List<String> retired) {
        if (retired.isEmpty()) {
            return callHeader;
        }
        if (retired.size() > MAX_RETIRE_LIST) {
            throw new IllegalArgumentException("at most " + MAX_RETIRE_LIST + " handles per retired list");
        }
        StringBuilder b = new StringBuilder(callHeader.length() + 16 + 132 * retired.size());
        b.append(callHeader, 0, callHeader.length() - 1).append(", \"retired\": [");
        for (int k = 0; k < retired.size(); k++) {
            b.append(k == 0 ? "\"" : ", \"").append(retired.get(k)).append('"');
        }
        return b.append("]}").toString();
    }

    /** {@return the lower-case hex of a 64-byte handle, as the protocol names handles} */
    static String hex(byte[] handle) {
        return HEX.formatHex(handle);
    }

    /**
     * Reads one line the worker sent (a header or a close message).
     *
     * @param line the line, without its line feed
     * @return the message
     * @throws ValidationException with the key path for anything the format refuses
     */
    static Message read(String line) {
        Map<String, Object> m = StrictJson.object(line, MAX_HEADER_BYTES);
        if (m.containsKey("devicebridge_ipc_closed") && !m.containsKey(KEY)) {
            return new Message(null, 0, null, List.of(), null, Acknowledgement.closedId(line), 0, null, List.of(),
                    List.of(), false);
        }
        long version = JsonFields.integer(m, KEY, "", JsonFields.ANY, Category.VERSION);
        if (version != VERSION) {
            throw new ValidationException(Category.VERSION, KEY, "expected worker protocol version " + VERSION
                    + " but found " + version);
        }
        String k = JsonFields.string(m, "kind", "");
        Kind kind = switch (k) {
            case "hello" -> Kind.HELLO;
            case "result" -> Kind.RESULT;
            case "error" -> Kind.ERROR;
            case "bye" -> Kind.BYE;
            default -> throw new ValidationException(Category.FORMAT, "kind", "expected \"hello\", \"result\","
                    + " \"error\" or \"bye\" from a worker but found " + JsonFields.describe(k));
        };
        long seq = 0;
        Payload payload = null;
        String error = null;
        if (kind == Kind.RESULT || kind == Kind.ERROR) {
            seq = JsonFields.integer(m, "seq", "", JsonFields.range(1, Long.MAX_VALUE), Category.SIZE);
        }
        if (kind == Kind.RESULT) {
            String p = JsonFields.string(m, "payload", "");
            payload = switch (p) {
                case IpcBatchDescriptor.KIND -> Payload.ARROW_BATCH;
                case IpcTensorDescriptor.KIND -> Payload.TENSOR;
                default -> throw new ValidationException(Category.FORMAT, "payload", "expected \""
                        + IpcBatchDescriptor.KIND + "\" or \"" + IpcTensorDescriptor.KIND + "\" but found "
                        + JsonFields.describe(p));
            };
        }
        if (kind == Kind.ERROR) {
            error = JsonFields.text(JsonFields.string(m, "message", ""), "message", MAX_ERROR_CHARS);
        }
        List<String> unmapped = handles(m, "unmapped", MAX_HANDLE_LIST);
        List<Integer> persistent = List.of();
        List<String> retire = List.of();
        boolean persistentEvent = false;
        if (kind == Kind.RESULT) {
            persistent = indices(m, "persistent");
            retire = handles(m, "retire", MAX_RETIRE_LIST);
            persistentEvent = flag(m, "persistent_event");
        }
        long pid = 0;
        String poolSocket = null;
        if (kind == Kind.HELLO && m.containsKey("pid")) {
            pid = JsonFields.integer(m, "pid", "", JsonFields.range(1, Integer.MAX_VALUE), Category.SIZE);
        }
        if (kind == Kind.HELLO && m.containsKey("pool_socket")) {
            poolSocket = socketPath(JsonFields.string(m, "pool_socket", ""));
        }
        return new Message(kind, seq, payload, unmapped, error, null, pid, poolSocket, persistent, retire,
                persistentEvent);
    }

    /** An optional list of at most {@code max} handles (hex); empty when absent. */
    private static List<String> handles(Map<String, Object> m, String key, int max) {
        if (!m.containsKey(key)) {
            return List.of();
        }
        List<?> l = JsonFields.list(m.get(key), key, max);
        List<String> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) {
            out.add(hex(JsonFields.hex(l.get(i), key + "[" + i + "]", IpcBatchDescriptor.HANDLE_SIZE)));
        }
        return List.copyOf(out);
    }

    /** An optional list of distinct indices in [0, {@value #MAX_PERSISTENT}); empty when absent. */
    private static List<Integer> indices(Map<String, Object> m, String key) {
        if (!m.containsKey(key)) {
            return List.of();
        }
        List<?> l = JsonFields.list(m.get(key), key, MAX_PERSISTENT);
        List<Integer> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) {
            int k = (int) JsonFields.integer(l.get(i), key + "[" + i + "]", JsonFields.range(0, MAX_PERSISTENT - 1),
                    Category.SIZE);
            if (out.contains(k)) {
                throw new ValidationException(Category.CONTENT, key + "[" + i + "]", "expected distinct indices but"
                        + " found " + k + " twice");
            }
            out.add(k);
        }
        return List.copyOf(out);
    }

    /** An optional {@code true} or {@code false}; false when absent. */
    private static boolean flag(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (v == null && !m.containsKey(key)) {
            return false;
        }
        if (!(v instanceof Boolean b)) {
            throw new ValidationException(Category.FORMAT, key, "expected true or false but found "
                    + JsonFields.describe(v));
        }
        return b;
    }

    /** An absolute path a Unix socket address holds: at most {@value #MAX_SOCKET_PATH_BYTES} bytes, no NUL. */
    private static String socketPath(String path) {
        int bytes = path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (bytes == 0 || bytes > MAX_SOCKET_PATH_BYTES) {
            throw new ValidationException(Category.SIZE, "pool_socket", "expected 1 to " + MAX_SOCKET_PATH_BYTES
                    + " bytes of path but found " + bytes);
        }
        if (!path.startsWith("/") || path.indexOf('\0') >= 0) {
            throw new ValidationException(Category.FORMAT, "pool_socket", "expected an absolute path without NUL but"
                    + " found " + JsonFields.describe(path));
        }
        return path;
    }
}
