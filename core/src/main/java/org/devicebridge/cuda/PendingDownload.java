package org.devicebridge.cuda;

import org.devicebridge.HandleBusyException;

/**
 * A download in flight, from {@link HostDeviceTransfer#downloadAsync}: its leading ranges are copied first, and
 * {@link #awaitLeading()} returns once they arrived, while the others may still be arriving, so that the caller
 * can read the leading destinations (check offsets, say) while the rest arrives; {@link #await()} returns once
 * every range arrived.
 *
 * <p>It holds its transfer until {@code await()} or {@link #close()} returns (or a method throws): another
 * thread's batch on that transfer waits, and this thread's throws {@link org.devicebridge.HandleBusyException}.
 * Confined to the thread that started it: another thread's call throws {@link HandleBusyException} (its cause
 * a {@link WrongThreadException}).
 * Between the calls the caller must not read the destinations of ranges that may still be arriving, nor change
 * or free any destination.
 *
 * <p>{@link #close()} (idempotent) waits for every copy and unpacking still running, so that none writes into
 * a destination after it returns; use try-with-resources so that a failure in the caller's work still waits.
 */
public final class PendingDownload implements AutoCloseable {
    private final TransferEngine engine;
    private final DownloadRun run;
    private final StreamTransferOps ops;
    private final Thread owner = Thread.currentThread();
    private boolean done;

    PendingDownload(TransferEngine engine, DownloadRun run, StreamTransferOps ops) {
        this.engine = engine;
        this.run = run;
        this.ops = ops;
    }

    /**
     * Blocks until the leading ranges arrived (at once if called before); the others may still be arriving.
     * Where a destination is pageable, every range arrived.
     *
     * @throws HandleBusyException (its cause a {@link WrongThreadException}) on another thread than the one that
     *         started the download
     * @throws CudaException if a driver call fails (then no copy writes into a destination any more, and the
     *     transfer is free again)
     */
    public void awaitLeading() {
        confined();
        if (done) {
            return;
        }
        boolean failed = true;
        try {
            ops.reenter();
            try (ops) {
                run.awaitLeading();
            }
            failed = false;
        } finally {
            if (failed) {
                end();
            }
        }
    }

    /**
     * Blocks until every range arrived, then lets the transfer go. Later calls return at once.
     *
     * @throws HandleBusyException (its cause a {@link WrongThreadException}) on another thread than the one that
     *         started the download
     * @throws CudaException if a driver call fails (then no copy writes into a destination any more)
     */
    public void await() {
        confined();
        if (done) {
            return;
        }
        try {
            ops.reenter();
            try (ops) {
                run.await();
            }
        } finally {
            end();
        }
    }

    /**
     * Waits for every copy and unpacking of the download still running (none writes into a destination after
     * this returns), then lets the transfer go. Idempotent.
     *
     * @throws HandleBusyException (its cause a {@link WrongThreadException}) on another thread than the one that
     *         started the download, if it still runs
     * @throws CudaException if a wait fails
     */
    @Override
    public void close() {
        if (done) {
            return;
        }
        confined();
        try {
            ops.reenter();
            try (ops) {
                run.close();
            }
        } finally {
            end();
        }
    }

    private void confined() {
        if (Thread.currentThread() != owner) {
            String message = "expected the thread that started the download (" + owner.getName() + ") but found "
                    + Thread.currentThread().getName();
            throw new HandleBusyException(message, new WrongThreadException(message));
        }
    }

    private void end() {
        if (!done) {
            done = true;
            engine.finished();
        }
    }
}
