package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.HandleBusyException;
import org.devicebridge.InvalidArgumentException;
import org.junit.jupiter.api.Test;

/**
 * The acknowledgement that gates the release of a CUDA IPC export (what {@code IpcBatchExport} and
 * {@code IpcTensorExport} delegate to), on the CPU with a counting release step: refused before the
 * acknowledgement with nothing released, released exactly once after it or when forced, the id checked.
 */
class AcknowledgementTest {
    private final AtomicInteger releases = new AtomicInteger();

    private Acknowledgement gate(String export, String mappings) {
        return new Acknowledgement("id-1", export, mappings, releases::incrementAndGet);
    }

    @Test
    void closeBeforeTheAcknowledgementReleasesNothingAndSaysWhatToDoInTheCallersWords() {
        Acknowledgement batch = gate("IPC batch export", "mappings");
        HandleBusyException e = assertThrows(HandleBusyException.class, batch::close);
        assertEquals("the importer of IPC batch export id-1 has not acknowledged closing its mappings; pass its close"
                + " message to acknowledge(), or forceClose() if it is gone", e.getMessage());
        Acknowledgement tensor = gate("IPC export", "mapping");
        e = assertThrows(HandleBusyException.class, tensor::close);
        assertEquals("the importer of IPC export id-1 has not acknowledged closing its mapping; pass its close message"
                + " to acknowledge(), or forceClose() if it is gone", e.getMessage());
        assertEquals(0, releases.get());
        assertEquals("shared", batch.state());
        batch.forceClose();
        tensor.forceClose();
        assertEquals(2, releases.get());
    }

    @Test
    void anAcknowledgementOfAnotherExportIsRefusedAndChangesNothing() {
        Acknowledgement g = gate("IPC export", "mapping");
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> g.acknowledge(Acknowledgement.closeMessage("id-2")));
        assertEquals("closeMessage", e.parameter());
        assertEquals("closeMessage: expected the close message of export id-1 but found one for id-2", e.getMessage());
        assertFalse(g.isAcknowledged());
        assertThrows(HandleBusyException.class, g::close);
        g.forceClose();
    }

    @Test
    void closeAfterTheAcknowledgementReleasesOnceAndIsIdempotent() {
        Acknowledgement g = gate("IPC export", "mapping");
        g.acknowledge(Acknowledgement.closeMessage("id-1"));
        assertTrue(g.isAcknowledged());
        assertEquals("acknowledged", g.state());
        g.close();
        g.close();
        g.forceClose();
        assertEquals(1, releases.get());
        assertEquals("released", g.state());
    }

    @Test
    void forceCloseReleasesOnceWithoutTheAcknowledgementAndLaterClosesSucceed() {
        Acknowledgement g = gate("IPC export", "mapping");
        g.forceClose();
        g.forceClose();
        g.close();
        assertEquals(1, releases.get());
        assertFalse(g.isAcknowledged());
        assertEquals("released", g.state());
    }

    @Test
    void aFailingReleaseReachesTheFirstCloserAndIsNotRetried() {
        IllegalStateException boom = new IllegalStateException("boom");
        Acknowledgement g = new Acknowledgement("id-1", "IPC export", "mapping", () -> {
            releases.incrementAndGet();
            throw boom;
        });
        g.acknowledge(Acknowledgement.closeMessage("id-1"));
        assertSame(boom, assertThrows(IllegalStateException.class, g::close));
        g.close();
        assertEquals(1, releases.get());
    }

    @Test
    void awaitClosedTimesOutWithNothingReleasedThenReleasesOnceAcknowledgedFromAnotherThread() throws Exception {
        Acknowledgement g = gate("IPC batch export", "mappings");
        assertThrows(NullPointerException.class, () -> g.awaitClosed(null));
        assertFalse(g.awaitClosed(Duration.ofMillis(20)));
        assertEquals(0, releases.get());
        CountDownLatch started = new CountDownLatch(1);
        Thread reader = new Thread(() -> {
            started.countDown();
            g.acknowledge(Acknowledgement.closeMessage("id-1"));
        });
        reader.start();
        started.await();
        assertTrue(g.awaitClosed(Duration.ofSeconds(30)));
        reader.join();
        assertEquals(1, releases.get());
        assertTrue(g.awaitClosed(Duration.ZERO));
        assertEquals(1, releases.get());
    }
}
