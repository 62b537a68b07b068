package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.devicebridge.Device;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.AllowsLeaks;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/** The Cleaner safety net for device memory: a forgotten buffer is freed and reported as a leak. */
@RequiresCuda
@AllowsLeaks("abandons a device buffer on purpose so that the Cleaner frees it")
class CudaMemoryCleanerTest {
    private static final Device DEVICE = Device.cuda(0);

    @Test
    void forgottenBufferIsFreedByTheCleanerAndReportedAsALeak() throws InterruptedException {
        CudaCounters.Snapshot before = CudaCounters.snapshot();
        long leakedBefore = HandleTracker.leakedHandles();
        allocateAndForget();
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (CudaCounters.snapshot().deviceBytesOutstanding() != before.deviceBytesOutstanding()
                && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(before.deviceBytesOutstanding(), CudaCounters.snapshot().deviceBytesOutstanding(),
                "the Cleaner freed the forgotten allocation");
        assertEquals(leakedBefore + 1, HandleTracker.leakedHandles());
    }

    private static void allocateAndForget() {
        DeviceBuffer.allocate(DEVICE, 1 << 20).address();
    }
}
