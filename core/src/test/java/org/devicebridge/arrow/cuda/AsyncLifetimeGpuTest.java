package org.devicebridge.arrow.cuda;

import static org.devicebridge.arrow.cuda.AsyncPoison.strings;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.TransferOptions;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An asynchronous call keeps what its queued copies read alive until they ran: the stream is blocked behind
 * queued memsets, the call is made, then every block the pool can lend is taken and poisoned with 0xEE while
 * the stream is still busy (checked; with more memsets and another round if it was not); after a
 * synchronisation the device copy must hold the source's values. Freeing a block under a queued copy shows
 * here as 0xEE bytes on the device.
 */
@RequiresCuda
class AsyncLifetimeGpuTest {
    private static final int DEVICE = 0;
    private static final int ROWS = 4096;

    private PinnedArrowMemory pinnedMemory;
    private BufferAllocator pinned;
    private CudaStream stream;
    private HostDeviceTransfer transfer;
    private AsyncPoison poison;
    private long deviceBytesBefore;

    @BeforeEach
    void setUp() {
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        pinnedMemory = PinnedArrowMemory.create(1); // a freed block is lent again at once
        pinned = pinnedMemory.newRootAllocator();
        stream = CudaStream.create(Device.cuda(DEVICE));
        transfer = HostDeviceTransfer.create(Device.cuda(DEVICE), TransferOptions.defaults()
                .withStagingBytes(4L << 20).withChunkBytes(256L << 10));
        poison = new AsyncPoison(DEVICE);
    }

    @AfterEach
    void tearDown() {
        stream.synchronize();
        poison.close();
        transfer.close();
        stream.close();
        assertEquals(0, pinned.getAllocatedMemory(), "pinned Arrow memory released");
        pinned.close();
        pinnedMemory.close();
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
    }

    private List<String> values() {
        return AsyncPoison.values(ROWS, 0);
    }

    private VectorSchemaRoot viewRoot(List<String> values) {
        return AsyncPoison.viewRoot(pinned, values);
    }

    private boolean poisonedWhileBusy(CudaStream s) {
        return AsyncPoison.poisonedWhileBusy(pinnedMemory.pool(), s);
    }

    @Test
    void uploadAsyncKeepsTheExportsOwnBuffersUntilTheCopiesRan() throws Exception {
        List<String> expected = values();
        AsyncPoison.untilPoisonedWhileBusy(memsets -> {
            try (VectorSchemaRoot root = viewRoot(expected)) {
                poison.block(stream, memsets);
                try (CudaArrowBatch batch = CudaArrow.uploadAsync(root, DeviceCopies.of(transfer, stream))) {
                    boolean busy = poisonedWhileBusy(stream);
                    stream.synchronize();
                    if (busy) {
                        try (VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(pinned, transfer, stream))) {
                            assertEquals(expected, strings(down), "the device got the source's views");
                        }
                    }
                    return busy;
                }
            }
        });
    }

    @Test
    void uploadAsyncLetsTheCallerCloseTheRootAtOnce() throws Exception {
        List<String> expected = values();
        AsyncPoison.untilPoisonedWhileBusy(memsets -> {
            poison.block(stream, memsets);
            CudaArrowBatch batch;
            try (VectorSchemaRoot root = viewRoot(expected)) {
                batch = CudaArrow.uploadAsync(root, DeviceCopies.of(transfer, stream));
            }
            try (batch) {
                boolean busy = poisonedWhileBusy(stream);
                stream.synchronize();
                if (busy) {
                    try (VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(pinned, transfer, stream))) {
                        assertEquals(expected, strings(down), "the device got the root's values, not the pool's next borrower's");
                    }
                }
                return busy;
            }
        });
    }

    @Test
    void peerCopyKeepsTheSourceMemoryAfterTheSourceBatchIsClosed() throws Exception {
        List<String> expected = values();
        try (CudaStream target = CudaStream.create(Device.cuda(DEVICE))) {
            AsyncPoison.untilPoisonedWhileBusy(memsets -> {
                CudaArrowBatch source;
                try (VectorSchemaRoot root = viewRoot(expected)) {
                    source = CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
                }
                long bytes = source.memory().get(0).byteSize();
                poison.block(target, memsets);
                CudaArrowBatch copy;
                try (source) {
                    copy = CudaArrow.copyAsync(source, stream, DeviceCopies.of(target));
                } // the source's pool memory is freed on its idle stream: the pool may lend it at once
                try (copy) {
                    // the poison is written (and waited for) while the target still waits
                    List<DeviceBuffer> poisoned = AsyncPoison.poisonDevicePool(DEVICE, bytes, 16, stream);
                    boolean busy = !target.query();
                    poisoned.forEach(DeviceBuffer::close);
                    target.synchronize();
                    if (busy) {
                        try (VectorSchemaRoot down = CudaArrow.download(copy, new DeviceCopies(pinned, transfer, stream))) {
                            assertEquals(expected, strings(down), "the copy read the source, not memory lent again");
                        }
                    }
                    return busy;
                }
            });
        }
    }

    @Test
    void theStreamReleasesTheExportOnceSynchronized() {
        try (VectorSchemaRoot root = viewRoot(values())) {
            long before = pinned.getAllocatedMemory();
            poison.block(stream, 50);
            try (CudaArrowBatch batch = CudaArrow.uploadAsync(root, DeviceCopies.of(transfer, stream))) {
                stream.synchronize();
                assertEquals(before, pinned.getAllocatedMemory(),
                        "the export's own buffers went back to the root's allocator once the stream was synchronized");
            }
        }
    }
}
