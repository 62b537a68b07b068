package org.devicebridge.foreign;

import java.util.Map;
import org.devicebridge.ValidationException;

/**
 * What the CUDA IPC batch and tensor descriptors share on the wire (format in {@code docs/ipc-format.md}):
 * the export id's rule and the close message {@code {"devicebridge_ipc_closed": "<id>"}} an importer sends
 * back once it has unmapped everything. Stateless.
 */
public final class IpcMessages {
    /** The format version both descriptors write in {@code devicebridge_ipc}. */
    public static final int FORMAT_VERSION = 1;
    /** The longest export id, in UTF-16 code units. */
    public static final int MAX_ID_LENGTH = 256;
    /** The longest close message read, in characters (an id of the longest length, every character escaped). */
    public static final int MAX_CLOSE_MESSAGE_CHARS = 4096;
    private static final String CLOSED = "devicebridge_ipc_closed";

    private IpcMessages() {}

    /**
     * {@return {@code id}, checked}: 1 to {@link #MAX_ID_LENGTH} code units, no unpaired surrogate
     *
     * @param id an export id
     * @throws ValidationException {@code SIZE} or {@code FORMAT} (path {@code id}) otherwise
     */
    public static String checkId(String id) {
        return JsonFields.text(id, "id", MAX_ID_LENGTH);
    }

    /** {@return the close message naming {@code id}} */
    public static String closeMessage(String id) {
        return StrictJson.quote(new StringBuilder("{\"" + CLOSED + "\": "), id).append('}').toString();
    }

    /**
     * {@return the id a close message names}
     *
     * @param message {@code {"devicebridge_ipc_closed": "<id>"}} (other keys are ignored)
     * @throws ValidationException if it is not a close message, or names an id that breaks {@link #checkId}
     */
    public static String closedId(String message) {
        Map<String, Object> m = StrictJson.object(message, MAX_CLOSE_MESSAGE_CHARS);
        String id = JsonFields.string(m, CLOSED, "");
        return JsonFields.text(id, CLOSED, MAX_ID_LENGTH);
    }
}
