package org.devicebridge.ipc;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ipc.WorkerChannel.PeerException;
import org.devicebridge.ipc.WorkerLink.Reply;
import org.devicebridge.ipc.WorkerProtocol.Kind;
import org.devicebridge.ipc.WorkerProtocol.Payload;

/**
 * The waits of a {@link WorkerChannel}, each bounded by its timeout, and the order of its results: the next reply
 * (a stall marks the channel stalled and is a {@link PeerException} {@code TIMED_OUT}), writes that must be read
 * in time, and the check that each result answers the next call. Thread-safe: results are taken under this
 * object's monitor.
 */
final class WorkerReplies {
    private final WorkerLink link;
    private final WorkerState state;
    private final Duration timeout;
    private long received;

    /**
     * Checks a channel's timeout.
     *
     * @throws org.devicebridge.InvalidArgumentException if {@code timeout} is not positive
     */
    static void requirePositive(Duration timeout) {
        if (!java.util.Objects.requireNonNull(timeout, "timeout").isPositive()) {
            throw new org.devicebridge.InvalidArgumentException("timeout", "expected a positive duration but found "
                    + timeout);
        }
    }

    WorkerReplies(WorkerLink link, WorkerState state, Duration timeout) {
        this.link = link;
        this.state = state;
        this.timeout = timeout;
    }

    /** The next reply, which must be the result (or error) of the next call, with {@code payload}. */
    Reply nextResult(WorkerProtocol.Payload payload) {
        state.requireOpen();
        synchronized (this) { // results are taken in order
            Reply r = next();
            WorkerProtocol.Message h = r.header();
            if (h.kind() != Kind.RESULT && h.kind() != Kind.ERROR) {
                throw refuse("kind", "expected a \"result\" or \"error\" but found \"" + h.kind().wire() + "\"");
            }
            if (h.seq() != received + 1) {
                throw refuse("seq", "expected the answer to call " + (received + 1) + " but found one to call " + h.seq());
            }
            received++;
            state.results().retire(h.retire()); // the worker retires them whether or not this result is opened
            if (h.kind() == Kind.ERROR) {
                throw new PeerException(PeerException.Reason.FAILED, "the worker's function raised on call " + h.seq()
                        + ": " + h.error(), null);
            }
            if (h.payload() != payload) {
                state.resultUnmapped(link, closeMessageOf(r));
                throw new ValidationException(Category.FORMAT, "payload", "expected a result of kind \"" + payload.wire
                        + "\" but found \"" + h.payload().wire + "\"");
            }
            return r;
        }
    }

    /** The close message of a result that is not opened, so that the worker frees it; null if unreadable. */
    private static String closeMessageOf(Reply r) {
        try {
            return r.header().payload() == Payload.TENSOR ? IpcTensorDescriptor.parse(r.descriptor()).closeMessage()
                    : IpcBatchDescriptor.parse(r.descriptor()).closeMessage();
        } catch (ValidationException e) {
            return null;
        }
    }

    Reply next() {
        try {
            return link.next(timeout);
        } catch (TimeoutException e) {
            state.stalled();
            throw new PeerException(PeerException.Reason.TIMED_OUT, "no answer from the worker within " + timeout
                    + "; end its process, then forceClose() the channel", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PeerException(PeerException.Reason.TIMED_OUT, "interrupted while waiting for the worker", e);
        }
    }

    /** Writes {@code lines} (nothing: waits for what is queued) within the timeout. */
    void write(String... lines) {
        try {
            link.write(timeout, lines);
        } catch (TimeoutException e) {
            state.stalled();
            throw new PeerException(PeerException.Reason.TIMED_OUT, "the worker did not read what was sent within "
                    + timeout + "; end its process, then forceClose() the channel", e);
        } catch (IOException e) {
            throw new PeerException(PeerException.Reason.EXITED, "the worker's end of the channel is closed: "
                    + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PeerException(PeerException.Reason.TIMED_OUT, "interrupted while writing to the worker", e);
        }
    }

    ValidationException refuse(String path, String message) {
        ValidationException e = new ValidationException(Category.STRUCTURE, path, message);
        state.refused(e);
        return e;
    }

    @Override
    public synchronized String toString() {
        return received + " results received";
    }
}
