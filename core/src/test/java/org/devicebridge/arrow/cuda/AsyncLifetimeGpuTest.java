package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ViewVarCharVector;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PinnedHostPool;
import org.devicebridge.cuda.StreamKind;
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
    private static final byte POISON = (byte) 0xEE;
    private static final int ROWS = 4096;
    private static final long BLOCKER_BYTES = 256L << 20;
    private static final int ROUNDS = 4;

    private PinnedArrowMemory pinnedMemory;
    private BufferAllocator pinned;
    private CudaStream stream;
    private HostDeviceTransfer transfer;
    private DeviceBuffer blocker;
    private long deviceBytesBefore;

    @BeforeEach
    void setUp() {
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        pinnedMemory = PinnedArrowMemory.create(1); // a freed block is lent again at once
        pinned = pinnedMemory.newRootAllocator();
        stream = CudaStream.create(DEVICE, StreamKind.NON_BLOCKING);
        transfer = HostDeviceTransfer.create(DEVICE, HostDeviceTransfer.Options.defaults()
                .withStagingBytes(4L << 20).withChunkBytes(256L << 10));
        blocker = DeviceBuffer.allocate(DEVICE, BLOCKER_BYTES);
    }

    @AfterEach
    void tearDown() {
        stream.synchronize();
        blocker.close();
        transfer.close();
        stream.close();
        assertEquals(0, pinned.getAllocatedMemory(), "pinned Arrow memory released");
        pinned.close();
        pinnedMemory.close();
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
    }

    /** Queues {@code count} memsets over the blocker on {@code s}: work the next copies wait behind. */
    private void block(CudaStream s, int count) {
        for (int i = 0; i < count; i++) {
            CudaCopies.fillAsync(blocker.range(0, BLOCKER_BYTES), (byte) i, s);
        }
    }

    /** Short and long strings whose inline views get non-zero padding (the export writes clean views of its own). */
    private static List<String> values() {
        List<String> out = new ArrayList<>(ROWS);
        for (int i = 0; i < ROWS; i++) {
            out.add(i % 3 == 0 ? "v" + i : "a value longer than twelve bytes " + i);
        }
        return out;
    }

    private VectorSchemaRoot viewRoot(List<String> values) {
        ViewVarCharVector v = new ViewVarCharVector("s", pinned);
        v.allocateNew();
        for (int i = 0; i < values.size(); i++) {
            v.setSafe(i, values.get(i).getBytes(StandardCharsets.UTF_8));
        }
        v.setValueCount(values.size());
        ArrowBuf views = v.getDataBuffer();
        for (int i = 0; i < values.size(); i++) {
            int size = views.getInt(i * 16L);
            for (long b = 4 + size; size < 12 && b < 16; b++) {
                views.setByte(i * 16L + b, 0x5A); // as an unzeroed split leaves them: the export rewrites the views
            }
        }
        VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(v));
        root.setRowCount(values.size());
        return root;
    }

    /**
     * Takes every block the pinned pool can lend without allocating more pinned memory (each size class up to
     * 4 MiB, until the pool reserves more) and fills them with {@link #POISON}; the caller frees them.
     */
    private List<MemorySegment> poisonPinnedPool() {
        PinnedHostPool pool = pinnedMemory.pool();
        List<MemorySegment> taken = new ArrayList<>();
        for (long size = PinnedHostPool.MIN_BLOCK; size <= (4L << 20); size *= 2) {
            for (int i = 0; i < 1024; i++) {
                long reserved = pool.stats().reservedBytes();
                MemorySegment b = pool.allocate(size);
                taken.add(b);
                b.fill(POISON);
                if (pool.stats().reservedBytes() != reserved) {
                    break; // a fresh block: the class has none free any more
                }
            }
        }
        return taken;
    }

    private void free(List<MemorySegment> blocks) {
        for (MemorySegment b : blocks) {
            pinnedMemory.pool().free(b);
        }
    }

    private static List<String> strings(VectorSchemaRoot root) {
        ViewVarCharVector v = (ViewVarCharVector) root.getVector(0);
        List<String> out = new ArrayList<>(v.getValueCount());
        for (int i = 0; i < v.getValueCount(); i++) {
            out.add(new String(v.get(i), StandardCharsets.UTF_8));
        }
        return out;
    }

    /** The stream finished before the poisoning: another round with more memsets, or a failure after the last. */
    private static void retryOrFail(int round) {
        if (round == ROUNDS - 1) {
            fail("the stream finished before the poisoning in every round: the test proves nothing");
        }
    }

    @Test
    void uploadAsyncKeepsTheExportsOwnBuffersUntilTheCopiesRan() {
        List<String> expected = values();
        for (int round = 0, memsets = 200; round < ROUNDS; round++, memsets *= 2) {
            try (VectorSchemaRoot root = viewRoot(expected)) {
                block(stream, memsets);
                try (CudaArrowBatch batch = CudaArrowUpload.uploadAsync(root, transfer, stream)) {
                    List<MemorySegment> poisoned = poisonPinnedPool();
                    boolean busy = !stream.query();
                    free(poisoned);
                    stream.synchronize();
                    if (!busy) {
                        retryOrFail(round);
                        continue;
                    }
                    try (VectorSchemaRoot down = CudaArrowDownload.download(batch, pinned, transfer, stream)) {
                        assertEquals(expected, strings(down), "the device got the source's views");
                    }
                    return;
                }
            }
        }
    }

    @Test
    void uploadAsyncLetsTheCallerCloseTheRootAtOnce() {
        List<String> expected = values();
        for (int round = 0, memsets = 200; round < ROUNDS; round++, memsets *= 2) {
            block(stream, memsets);
            CudaArrowBatch batch;
            try (VectorSchemaRoot root = viewRoot(expected)) {
                batch = CudaArrowUpload.uploadAsync(root, transfer, stream);
            }
            try (batch) {
                List<MemorySegment> poisoned = poisonPinnedPool();
                boolean busy = !stream.query();
                free(poisoned);
                stream.synchronize();
                if (!busy) {
                    retryOrFail(round);
                    continue;
                }
                try (VectorSchemaRoot down = CudaArrowDownload.download(batch, pinned, transfer, stream)) {
                    assertEquals(expected, strings(down), "the device got the root's values, not the pool's next borrower's");
                }
                return;
            }
        }
    }

    @Test
    void peerCopyKeepsTheSourceMemoryAfterTheSourceBatchIsClosed() {
        List<String> expected = values();
        try (CudaStream target = CudaStream.create(DEVICE, StreamKind.NON_BLOCKING)) {
            for (int round = 0, memsets = 200; round < ROUNDS; round++, memsets *= 2) {
                CudaArrowBatch source;
                try (VectorSchemaRoot root = viewRoot(expected)) {
                    source = CudaArrowUpload.upload(root, transfer, stream);
                }
                long bytes = source.memory().get(0).byteSize();
                block(target, memsets);
                CudaArrowBatch copy;
                try (source) {
                    copy = CudaArrowPeerCopy.copyAsync(source, stream, target);
                } // the source's pool memory is freed on its idle stream: the pool may lend it at once
                try (copy) {
                    List<DeviceBuffer> poisoned = new ArrayList<>();
                    for (int i = 0; i < 16; i++) {
                        DeviceBuffer b = DeviceBuffer.allocateAsync(DEVICE, bytes, stream);
                        poisoned.add(b);
                        CudaCopies.fillAsync(b.range(0, bytes), POISON, stream);
                    }
                    stream.synchronize(); // the poison is written while the target still waits
                    boolean busy = !target.query();
                    poisoned.forEach(DeviceBuffer::close);
                    target.synchronize();
                    if (!busy) {
                        retryOrFail(round);
                        continue;
                    }
                    try (VectorSchemaRoot down = CudaArrowDownload.download(copy, pinned, transfer, stream)) {
                        assertEquals(expected, strings(down), "the copy read the source, not memory lent again");
                    }
                    return;
                }
            }
        }
    }

    @Test
    void theStreamReleasesTheExportOnceSynchronized() {
        try (VectorSchemaRoot root = viewRoot(values())) {
            long before = pinned.getAllocatedMemory();
            block(stream, 50);
            try (CudaArrowBatch batch = CudaArrowUpload.uploadAsync(root, transfer, stream)) {
                stream.synchronize();
                assertEquals(before, pinned.getAllocatedMemory(),
                        "the export's own buffers went back to the root's allocator once the stream was synchronized");
            }
        }
    }
}
