package org.devicebridge.foreign;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;

/**
 * The importer's acknowledgement that gates the release of an export shared through CUDA IPC (a batch in
 * {@code org.devicebridge.arrow.cuda}, a tensor in {@code org.devicebridge.dlpack}): the one home of their
 * lifecycle. {@link #acknowledge} checks the id a close message names; {@link #close()} refuses with
 * {@link HandleBusyException} until then; {@link #forceClose()} releases anyway; {@link #awaitClosed} waits for
 * the acknowledgement. The release step runs at most once, on the thread that closes first; what it throws
 * goes to that caller, and the export counts as released all the same (a later close does nothing).
 *
 * <p>The public export classes keep their own methods and Javadoc and delegate here. Thread-safe: the
 * acknowledgement is a latch and the released state one atomic flag. The gate owns nothing itself; the
 * release step frees what the export holds.
 */
public final class AcknowledgementGate {
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
    public AcknowledgementGate(String id, String export, String mappings, Runnable release) {
        this.id = Objects.requireNonNull(id, "id");
        this.export = Objects.requireNonNull(export, "export");
        this.mappings = Objects.requireNonNull(mappings, "mappings");
        this.release = Objects.requireNonNull(release, "release");
    }

    /**
     * Records the acknowledgement of the close message that named {@code closedId}.
     *
     * @param closedId the export id the importer's close message names (already read from it)
     * @throws InvalidArgumentException (parameter {@code closeMessage}) if it names another export
     */
    public void acknowledge(String closedId) {
        if (!closedId.equals(id)) {
            throw new InvalidArgumentException("closeMessage", "expected the close message of export " + id
                    + " but found one for " + closedId);
        }
        acknowledged.countDown();
    }

    /** {@return {@code true} once acknowledged} */
    public boolean isAcknowledged() {
        return acknowledged.getCount() == 0;
    }

    /**
     * Waits for the acknowledgement, then releases as {@link #close()} does.
     *
     * @param timeout how long to wait
     * @return {@code true} if acknowledged and released; {@code false} on timeout (nothing released)
     * @throws InterruptedException if interrupted while waiting (nothing released)
     */
    public boolean awaitClosed(Duration timeout) throws InterruptedException {
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
    public void close() {
        if (!isAcknowledged() && !released.get()) {
            throw new HandleBusyException("the importer of " + export + " " + id + " has not acknowledged closing its "
                    + mappings + "; pass its close message to acknowledge(), or forceClose() if it is gone", null);
        }
        forceClose();
    }

    /** Runs the release step without the acknowledgement, unless it ran already. */
    public void forceClose() {
        if (released.compareAndSet(false, true)) {
            release.run();
        }
    }

    /** {@return {@code "released"}, {@code "acknowledged"} or {@code "shared"}, for {@code toString}} */
    public String state() {
        return released.get() ? "released" : isAcknowledged() ? "acknowledged" : "shared";
    }
}
