package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.AsyncPoison;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.ChildJvm;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The copies a CUDA IPC export queues for memory that cannot be shared (an uploaded batch's pool memory) read
 * their sources and write the export's copy after the export returned: the export stream is blocked behind
 * memsets, the source batch is closed (its pool memory freed on its own, idle stream) and the export
 * force-closed at once, or the device pool is poisoned with 0xEE while the export stream is busy and another
 * process imports what the export describes.
 */
@RequiresCuda
class IpcExportAsyncGpuTest {
    private static final int DEVICE = 0;
    private static final int ROWS = 4096;

    private BufferAllocator memory;
    private CudaStream stream;
    private CudaStream exportStream;
    private HostDeviceTransfer transfer;
    private AsyncPoison poison;
    private long deviceBytesBefore;

    @BeforeEach
    void setUp() {
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        memory = org.devicebridge.arrow.java.ArrowMemory.newRootAllocator();
        stream = CudaStream.create(Device.cuda(DEVICE));
        exportStream = CudaStream.create(Device.cuda(DEVICE));
        transfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
        poison = new AsyncPoison(DEVICE);
    }

    @AfterEach
    void tearDown() {
        stream.synchronize();
        exportStream.synchronize();
        poison.close();
        transfer.close();
        stream.close();
        exportStream.close();
        assertEquals(0, memory.getAllocatedMemory(), "Arrow memory released");
        memory.close();
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
    }

    /** A batch in stream-ordered pool memory (which CUDA IPC cannot share), ready on {@link #stream}. */
    private CudaArrowBatch source() {
        try (VectorSchemaRoot root = AsyncPoison.viewRoot(memory, AsyncPoison.values(ROWS, 0))) {
            return CudaArrow.upload(root, DeviceCopies.of(transfer, stream));
        }
    }

    private static long outstanding() {
        return CudaCounters.snapshot().deviceBytesOutstanding();
    }

    @Test
    void aForceClosedExportsCopiesKeepTheirSourceAndDestinationUntilTheyRan() {
        CudaArrowBatch source = source();
        long sourceBytes = source.memory().get(0).byteSize();
        long withSource = outstanding();
        poison.block(exportStream, 200);
        IpcBatchExport export;
        try (source) {
            export = IpcBatchExport.export(source, exportStream, IpcExport.Memory.COPY_UNSHAREABLE);
        }
        export.gate().forceClose();
        assertTrue(export.copiedBytes() > 0, "the pool memory was copied");
        // nothing has looked at the export stream since: the copies' references are still held
        assertEquals(withSource + export.copiedBytes(), outstanding(),
                "the source's pool memory and the export's copy outlive the batch and the export until the copies ran");
        exportStream.synchronize();
        assertEquals(withSource - sourceBytes, outstanding(), "both freed once the copies ran");
    }

    @Test
    void anImporterReadsTheSourceNotMemoryThePoolLentAgain(@TempDir Path dir) throws Exception {
        AsyncPoison.untilPoisonedWhileBusy(memsets -> {
            CudaArrowBatch source = source();
            long bytes = source.memory().get(0).byteSize();
            poison.block(exportStream, memsets);
            IpcBatchExport export;
            try (source) {
                export = IpcBatchExport.export(source, exportStream, IpcExport.Memory.COPY_UNSHAREABLE);
            } // the source's pool memory is freed on its idle stream: the pool may lend it at once
            try {
                List<DeviceBuffer> poisoned = AsyncPoison.poisonDevicePool(DEVICE, bytes, 16, stream);
                boolean busy = !exportStream.query();
                poisoned.forEach(DeviceBuffer::close);
                if (!busy) {
                    return false;
                }
                Path file = dir.resolve("descriptor.json");
                Files.writeString(file, export.descriptor().toJson());
                ChildJvm.Result child = ChildJvm.run(IpcBatchChild.class, 120, file.toString(), Integer.toString(ROWS));
                assertEquals(0, child.exitValue(), "importer output:\n" + child.output());
                List<String> lines = child.output().strip().lines().toList();
                export.gate().acknowledge(lines.get(lines.size() - 1));
                export.gate().close();
                return true;
            } finally {
                export.gate().forceClose(); // idempotent; the importer (if any) has exited
                exportStream.synchronize();
            }
        });
    }
}
