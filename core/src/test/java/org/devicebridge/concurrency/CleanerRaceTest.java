package org.devicebridge.concurrency;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.AllowsLeaks;
import org.junit.jupiter.api.Test;

/** close() racing the Cleaner: the deleter of every imported tensor runs exactly once, whoever gets there first. */
@AllowsLeaks("half the handles are dropped unclosed so that the Cleaner races the other half's close()")
class CleanerRaceTest {
    static final int N = 10_000;

    @Test
    void closeRacingTheCleanerCallsEachDeleterExactlyOnce() throws Exception {
        long live = HandleTracker.liveHandles();
        long leaked = HandleTracker.leakedHandles();
        // 5,000 leak warnings are the point here, not news
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("org.devicebridge");
        java.util.logging.Level level = log.getLevel();
        log.setLevel(java.util.logging.Level.SEVERE);
        try (ForeignTensors producer = new ForeignTensors(N)) {
            ExecutorService closers = Executors.newFixedThreadPool(2);
            for (int i = 0; i < N; i++) {
                ImportedTensor h = DLPack.importVersioned(producer.tensor(i), ImportOptions.any());
                if (i % 2 == 0) {
                    closers.execute(h::close); // closed on another thread while this one drops its reference
                }
                if (i % 500 == 0) {
                    System.gc();
                }
            }
            closers.shutdown();
            assertEquals(true, closers.awaitTermination(60, TimeUnit.SECONDS));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (ForeignTensors.totalDeletes() < N && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            ForeignTensors.assertEachDeletedOnce();
        } finally {
            log.setLevel(level);
        }
        assertEquals(live, HandleTracker.liveHandles(), "live handles");
        // the closers hold their handle until close() returns, so exactly the dropped half is the Cleaner's
        assertEquals(N / 2, HandleTracker.leakedHandles() - leaked, "handles released by the Cleaner");
    }
}
