package org.devicebridge.ipc;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;

/**
 * The acknowledgement lifecycle of an export shared through CUDA IPC, batch or tensor alike (the one home of
 * it): what both descriptors share on the wire (format in {@code docs/ipc-format.md}): the export id's rule
 * and the close message {@code {"devicebridge_ipc_closed": "<id>"}} an importer sends back once it has
 * unmapped everything; and the gate that holds an export's release until that message came.
 * {@link #acknowledge} reads a close message and checks the id it names; {@link #close()} refuses with
 * {@link HandleBusyException} until then; {@link #forceClose()} releases anyway; {@link #awaitClosed} waits for
 * the acknowledgement. The release step runs at most once, on the thread that closes first; what it throws
 * goes to that caller, and the export counts as released all the same (a later close does nothing).
 *
 * <p>The public export classes keep their own methods and Javadoc and delegate here. Thread-safe: the
 * acknowledgement is a latch and the released state one atomic flag. The gate owns nothing itself; the
 * release step frees what the export holds.
 */
final class Acknowledgement {
    /** The format version both descriptors write in {@code devicebridge_ipc}. */
    static final int FORMAT_VERSION = 1;
    /** The longest export id, in UTF-16 code units. */
    static final int MAX_ID_LENGTH = 256;
    /** The longest close message read, in characters (an id of the longest length, every character escaped). */
    static final int MAX_CLOSE_MESSAGE_CHARS = 4096;
    private static final String CLOSED = "devicebridge_ipc_closed";

    private final String id;
    private final String export;
    private final String mappings;
    private final Runnable release;
    private final CountDownLatch acknowledged = new CountDownLatch(1);
    private final AtomicBoolean released = new AtomicBoolean();

    /**
     * A gate for export {@code id}, not yet acknowledged nor released.
     *
     * @param id the export's identity, as its close message names it
     * @param export what the busy message calls the export, e.g. {@code "IPC batch export"}
     * @param mappings what the busy message calls what the importer closes, e.g. {@code "mappings"}
     * @param release frees what the export holds; run at most once
     */
    Acknowledgement(String id, String export, String mappings, Runnable release) {
        this.id = Objects.requireNonNull(id, "id");
        this.export = Objects.requireNonNull(export, "export");
        this.mappings = Objects.requireNonNull(mappings, "mappings");
        this.release = Objects.requireNonNull(release, "release");
    }

    /**
     * {@return {@code id}, checked}: 1 to {@link #MAX_ID_LENGTH} code units, no unpaired surrogate
     *
     * @param id an export id
     * @throws ValidationException {@code SIZE} or {@code FORMAT} (path {@code id}) otherwise
     */
    static String checkId(String id) {
        return JsonFields.text(id, "id", MAX_ID_LENGTH);
    }

    /** {@return the close message naming {@code id}} */
    static String closeMessage(String id) {
        return StrictJson.quote(new StringBuilder("{\"" + CLOSED + "\": "), id).append('}').toString();
    }

    /**
     * {@return the id a close message names}
     *
     * @param message {@code {"devicebridge_ipc_closed": "<id>"}} (other keys are ignored)
     * @throws ValidationException if it is not a close message, or names an id that breaks {@link #checkId}
     */
    static String closedId(String message) {
        Map<String, Object> m = StrictJson.object(message, MAX_CLOSE_MESSAGE_CHARS);
        String id = JsonFields.string(m, CLOSED, "");
        return JsonFields.text(id, CLOSED, MAX_ID_LENGTH);
    }

    /**
     * Records the importer's acknowledgement: its close message, which must name this export.
     *
     * @param closeMessage what the importer sent back
     * @throws ValidationException if it is not a close message
     * @throws InvalidArgumentException (parameter {@code closeMessage}) if it names another export
     */
    void acknowledge(String closeMessage) {
        String closedId = closedId(closeMessage);
        if (!closedId.equals(id)) {
            throw new InvalidArgumentException("closeMessage", "expected the close message of export " + id
                    + " but found one for " + closedId);
        }
        acknowledged.countDown();
    }

    /** {@return {@code true} once acknowledged} */
    boolean isAcknowledged() {
        return acknowledged.getCount() == 0;
    }

    /**
     * Waits for the acknowledgement, then releases as {@link #close()} does.
     *
     * @param timeout how long to wait
     * @return {@code true} if acknowledged and released; {@code false} on timeout (nothing released)
     * @throws InterruptedException if interrupted while waiting (nothing released)
     */
    boolean awaitClosed(Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "timeout");
        if (!acknowledged.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
            return false;
        }
        close();
        return true;
    }

    /**
     * Runs the release step once acknowledged; idempotent.
     *
     * @throws HandleBusyException if not acknowledged nor released yet (nothing released)
     */
    void close() {
        if (!isAcknowledged() && !released.get()) {
            throw new HandleBusyException("the importer of " + export + " " + id + " has not acknowledged closing its "
                    + mappings + "; pass its close message to acknowledge(), or forceClose() if it is gone", null);
        }
        forceClose();
    }

    /** Runs the release step without the acknowledgement, unless it ran already. */
    void forceClose() {
        if (released.compareAndSet(false, true)) {
            release.run();
        }
    }

    /** {@return {@code "released"}, {@code "acknowledged"} or {@code "shared"}, for {@code toString}} */
    String state() {
        return released.get() ? "released" : isAcknowledged() ? "acknowledged" : "shared";
    }
}
