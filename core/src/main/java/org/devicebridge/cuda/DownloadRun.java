package org.devicebridge.cuda;

/**
 * One download in flight, apart from the driver: {@link #start} queues what it can, {@link #awaitLeading()}
 * returns once the leading ranges arrived (while the others may still arrive), {@link #await()} once every
 * range did. Two shapes, as the destinations allow:
 * <ul>
 *   <li>every range of bytes page-locked, with leading ranges: every copy is queued at the start, the leading
 *       ones first and marked with {@link TransferOps#LEADING}, the batch with {@link TransferOps#BATCH}; two
 *       host waits;</li>
 *   <li>otherwise (a staged range, or no leading ranges) everything runs in {@code awaitLeading}: direct
 *       copies, then the staged ones chunk by chunk.</li>
 * </ul>
 * After any throw, and after {@link #close()}, no copy or unpacking of the batch still writes into a
 * destination. Not thread-safe: one thread runs a download, under its transfer's lock.
 */
final class DownloadRun implements AutoCloseable {
    private enum Shape { PLAIN, DIRECT_SPLIT }

    private final BatchTransfer.Lane lane;
    private final DownloadBatch batch;
    private final Shape shape;
    private boolean directQueued; // a direct copy was queued (a failure waits for the batch's copies)
    private boolean leadingRecorded; // none when the leading ranges have no bytes
    private int phase; // 0: started, 1: the leading ranges arrived, 2: done (arrived, or failed and settled)

    private DownloadRun(BatchTransfer.Lane lane, DownloadBatch batch, Shape shape) {
        this.lane = lane;
        this.batch = batch;
        this.shape = shape;
    }

    /** Starts {@code batch}; after a throw no copy of it still writes into a destination. */
    static DownloadRun start(BatchTransfer.Lane lane, DownloadBatch batch) {
        if (batch.leading() >= batch.count() || !batch.allDirect()) {
            return new DownloadRun(lane, batch, Shape.PLAIN);
        }
        DownloadRun run = new DownloadRun(lane, batch, Shape.DIRECT_SPLIT);
        run.queueDirectSplit();
        return run;
    }

    private void queueDirectSplit() {
        TransferOps ops = lane.ops();
        try {
            for (int i = 0; i < batch.count(); i++) {
                if (i == batch.leading() && directQueued) {
                    ops.record(TransferOps.LEADING);
                    leadingRecorded = true;
                }
                queueDirect(i);
            }
            ops.record(TransferOps.BATCH);
        } catch (RuntimeException | Error e) {
            settleDirect(e);
            throw e;
        }
    }

    /** Queues the direct copies of every range. */
    private void queueDirect() {
        for (int i = 0; i < batch.count(); i++) {
            queueDirect(i);
        }
    }

    private void queueDirect(int i) {
        long size = batch.sizes()[i];
        if (batch.direct()[i] && size > 0) {
            lane.ops().toHost(batch.dst()[i], batch.addresses()[i], size);
            directQueued = true;
            lane.stats().direct(size);
        }
    }

    private static void countStaged(BatchTransfer.Lane lane, DownloadBatch staged) {
        for (long bytes : staged.sizes()) {
            lane.stats().staged(bytes);
        }
    }

    /** Returns once the leading ranges arrived; the others may still be arriving. */
    void awaitLeading() {
        if (phase > 0) {
            return;
        }
        try {
            switch (shape) {
                case PLAIN -> {
                    phase = 2;
                    downloadAll();
                }
                case DIRECT_SPLIT -> {
                    phase = 1;
                    if (leadingRecorded) {
                        lane.ops().await(TransferOps.LEADING);
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            fail(e);
            throw e;
        }
    }

    /** Returns once every range arrived. */
    void await() {
        awaitLeading();
        if (phase == 2) {
            return;
        }
        phase = 2;
        try {
            lane.ops().await(TransferOps.BATCH);
        } catch (RuntimeException | Error e) {
            settleDirect(e);
            throw e;
        }
    }

    /**
     * Waits for every copy and unpacking of the batch still running, if any (a batch whose copies never started
     * queues none); throws what that wait threw.
     */
    @Override
    public void close() {
        if (shape == Shape.PLAIN && phase == 0) {
            phase = 2;
            return;
        }
        await();
    }

    /** After a failure of a split download: waits for its direct copies, adding their failures to {@code e}. */
    private void fail(Throwable e) {
        phase = 2;
        if (shape != Shape.PLAIN) {
            settleDirect(e);
        }
    }

    private void settleDirect(Throwable e) {
        if (directQueued) {
            directQueued = false;
            BatchTransfer.settle(lane.ops(), e);
        }
    }

    /** The whole batch at once: the direct copies first, then the staged ranges through the ring. */
    private void downloadAll() {
        TransferOps ops = lane.ops();
        try {
            queueDirect();
            DownloadBatch staged = batch.staged();
            if (staged.count() > 0) {
                // the staged copies are queued after the direct ones: the last chunk's wait covers them all
                long bytes = 0;
                for (long size : staged.sizes()) {
                    bytes += size;
                }
                long step = lane.ring().stepFor(bytes);
                countStaged(lane, staged);
                lane.ring().download(DownloadPlan.of(staged.addresses(), staged.sizes(), staged.groups(), step),
                        staged.dst(), ops);
                directQueued = false;
            } else if (directQueued) {
                ops.record(TransferOps.BATCH);
                ops.await(TransferOps.BATCH);
                directQueued = false;
            }
        } catch (RuntimeException | Error e) {
            settleDirect(e);
            throw e;
        }
    }
}
