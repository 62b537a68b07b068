package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchTransfer#runWhileCopying}: the upload's work runs before its one wait for the direct copies, and a
 * throwing work is thrown only after a wait for every copy queued (no copy reads the buffers any more), without a
 * driver.
 */
class BatchTransferWorkTest {

    /** Records the order of the work and the waits; a wait throws if told to. */
    private static final class Ops implements TransferOps {
        final List<String> log = new ArrayList<>();
        RuntimeException failWait;

        @Override
        public void toDevice(long deviceAddress, MemorySegment from, long bytes) {
            throw new AssertionError("no copy is queued here");
        }

        @Override
        public void toHost(MemorySegment to, long deviceAddress, long bytes) {
            throw new AssertionError("no copy is queued here");
        }

        @Override
        public void zero(long deviceAddress, long bytes) {
            throw new AssertionError("nothing is zeroed here");
        }

        @Override
        public void record(int event) {
            log.add("record " + event);
        }

        @Override
        public void await(int event) {
            log.add("await " + event);
            if (failWait != null) {
                throw failWait;
            }
        }

        @Override
        public void awaitElsewhere(int event) {
            throw new AssertionError("the caller waits");
        }

        @Override
        public boolean query(int event) {
            throw new AssertionError("the caller waits");
        }
    }

    @Test
    void theWorkRunsBeforeTheOneWaitForDirectCopiesAndNoWaitIsMadeForStagedOnes() {
        Ops ops = new Ops();
        BatchTransfer.runWhileCopying(() -> ops.log.add("work"), true, ops);
        assertEquals(List.of("work", "await " + TransferOps.BATCH), ops.log);
        Ops staged = new Ops();
        BatchTransfer.runWhileCopying(() -> staged.log.add("work"), false, staged);
        assertEquals(List.of("work"), staged.log);
    }

    @Test
    void aThrowingWorkIsThrownAfterTheWaitAndAFailedWaitIsSuppressed() {
        Ops ops = new Ops();
        IllegalStateException work = new IllegalStateException("work failed");
        assertSame(work, assertThrows(IllegalStateException.class,
                () -> BatchTransfer.runWhileCopying(() -> { throw work; }, true, ops)));
        // as after any failure with copies queued: an event after everything queued, then the wait for it
        assertEquals(List.of("record " + TransferOps.BATCH, "await " + TransferOps.BATCH), ops.log);

        Ops failing = new Ops();
        failing.failWait = new CudaException("cuEventSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access");
        IllegalStateException again = new IllegalStateException("work failed");
        assertSame(again, assertThrows(IllegalStateException.class,
                () -> BatchTransfer.runWhileCopying(() -> { throw again; }, true, failing)));
        assertEquals(1, again.getSuppressed().length);
        assertSame(failing.failWait, again.getSuppressed()[0]);

        Ops waitOnly = new Ops();
        waitOnly.failWait = new CudaException("cuEventSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access");
        assertSame(waitOnly.failWait, assertThrows(CudaException.class,
                () -> BatchTransfer.runWhileCopying(() -> waitOnly.log.add("work"), true, waitOnly)));
        assertEquals(List.of("work", "await " + TransferOps.BATCH), waitOnly.log);
    }
}
