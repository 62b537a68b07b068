package org.devicebridge.ipc;

import static org.devicebridge.testing.PythonProcess.python;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.CudaArrowRoundTripTest;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.TransferOptions;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.ipc.WorkerChannel.PeerException;
import org.devicebridge.testing.PythonProcess;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Uploads into the device's IPC-shareable pool ({@link TransferOptions#withIpcShareable}) handed to a real worker
 * ({@code devicebridge_worker.py}, identity function): the pool goes once over the worker's socket, the batch
 * zero-copy ({@code copiedBytes() == 0}) and back with the same values; without the option the export copies and
 * says so; a worker killed with a pool batch in flight leaves no device memory and no handle here. Skipped without
 * a GPU, without CuPy and pyarrow, or where the driver cannot share a pool as a file descriptor.
 */
@RequiresCuda
class WorkerPoolPythonTest {
    private static final Device DEVICE = Device.cuda(0);
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final int ROWS = 4096;

    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private long liveBefore;
    private long deviceBytesBefore;
    private CudaStream stream;
    private HostDeviceTransfer shareable;
    private HostDeviceTransfer plain;

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        liveBefore = HandleTracker.liveHandles();
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        stream = CudaStream.create(DEVICE);
        shareable = HostDeviceTransfer.create(DEVICE, TransferOptions.defaults().withStagingBytes(1 << 20)
                .withIpcShareable(true));
        plain = HostDeviceTransfer.create(DEVICE, 1 << 20);
    }

    @AfterEach
    void tearDown() {
        if (stream.isLive()) {
            stream.synchronize();
        }
        shareable.close();
        plain.close();
        stream.close();
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    private VectorSchemaRoot integers() {
        VectorSchemaRoot root = new VectorSchemaRoot(ExportTestSupport.family("integers", allocator, ROWS, true,
                new DictionaryProvider.MapDictionaryProvider()));
        root.setRowCount(ROWS);
        return root;
    }

    /** Skips where the driver put the upload in the default pool (no POSIX fd pool support). */
    private static void assumePoolMemory(CudaArrowBatch batch) {
        try {
            for (DeviceBuffer b : batch.memory()) {
                b.ipcPoolPointer();
            }
        } catch (UnsupportedFeatureException e) {
            assumeTrue(false, "the driver cannot share a memory pool as a POSIX file descriptor: " + e.getMessage());
        }
    }

    private Process start(Path dir) throws Exception {
        assumeTrue(PythonProcess.runs("import cupy, pyarrow, socket; socket.recv_fds;"
                + " assert cupy.cuda.runtime.getDeviceCount() > 0"), python() + " cannot import CuPy and pyarrow with a GPU");
        Path module = WorkerChannel.writeWorkerModule(dir);
        return new ProcessBuilder(python(), module.toString()).redirectError(dir.resolve("worker.stderr").toFile()).start();
    }

    private static WorkerChannel open(Process p) {
        return WorkerChannel.open(p.getInputStream(), p.getOutputStream(), TIMEOUT);
    }

    /** Runs {@code body} with the worker's stderr attached to a failure; ends the worker after. */
    private static void withStderr(Process p, Path dir, Body body) throws Exception {
        try {
            body.run();
        } catch (Throwable t) {
            Path err = dir.resolve("worker.stderr");
            t.addSuppressed(new AssertionError("the worker's stderr:\n" + (Files.exists(err) ? Files.readString(err) : "")));
            throw t;
        } finally {
            p.destroyForcibly();
            p.waitFor(60, TimeUnit.SECONDS);
        }
    }

    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    private void assertSameValues(VectorSchemaRoot want, CudaArrowBatch back) {
        try (VectorSchemaRoot got = CudaArrow.download(back, new DeviceCopies(allocator, plain, stream))) {
            assertEquals(want.getRowCount(), got.getRowCount());
            for (int i = 0; i < want.getFieldVectors().size(); i++) {
                FieldVector w = want.getVector(i);
                FieldVector g = got.getVector(i);
                for (int r = 0; r < want.getRowCount(); r++) {
                    final int row = r;
                    assertTrue(Objects.deepEquals(CudaArrowRoundTripTest.valueOf(w, r), CudaArrowRoundTripTest.valueOf(g, r)),
                            () -> w.getName() + "[" + row + "]");
                }
            }
        }
    }

    @Test
    void anUploadIntoTheShareablePoolGoesToTheWorkerZeroCopyAndComesBackEqual(@TempDir Path dir) throws Exception {
        Process p = start(dir);
        withStderr(p, dir, () -> {
            try (WorkerChannel channel = open(p); VectorSchemaRoot root = integers()) {
                for (int call = 0; call < 3; call++) { // the pool is sent once; later calls name it by its index
                    try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(shareable, stream))) {
                        assumePoolMemory(batch);
                        IpcExport sent = channel.send(batch, stream);
                        assertEquals(0, sent.copiedBytes(), "pool memory is shared in place");
                        assertTrue(sent.descriptor().startsWith("{\"devicebridge_ipc\": 2, "), sent.descriptor());
                        assertTrue(sent.descriptor().contains("\"pool_pointers\": [{\"pool\": 0, "), sent.descriptor());
                        try (CudaArrowBatch back = channel.receive(stream, ValidationLevel.DEFAULT, plain)) {
                            assertSameValues(root, back);
                            stream.synchronize();
                        }
                        assertTrue(sent.awaitClosed(TIMEOUT), "the worker freed its imports and acknowledged");
                    }
                }
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the worker exits after the goodbye");
            assertEquals(0, p.exitValue(), "the worker's exit status");
        });
    }

    @Test
    void theDefaultPoolIsStillCopiedOnceAndTheExportSaysSo(@TempDir Path dir) throws Exception {
        Process p = start(dir);
        withStderr(p, dir, () -> {
            try (WorkerChannel channel = open(p); VectorSchemaRoot root = integers();
                 CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(plain, stream))) {
                IpcExport sent = channel.send(batch, stream);
                assertTrue(sent.copiedBytes() > 0, "the default pool's memory is copied");
                assertTrue(sent.descriptor().startsWith("{\"devicebridge_ipc\": 1, "), sent.descriptor());
                try (CudaArrowBatch back = channel.receive(stream, ValidationLevel.DEFAULT, plain)) {
                    assertSameValues(root, back);
                    stream.synchronize();
                }
            }
        });
    }

    @Test
    void killingTheWorkerWithAPoolBatchInFlightLeavesNothingHeldHere(@TempDir Path dir) throws Exception {
        Process p = start(dir);
        withStderr(p, dir, () -> {
            WorkerChannel channel = open(p);
            try (VectorSchemaRoot root = integers();
                 CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(shareable, stream))) {
                assumePoolMemory(batch);
                assertEquals(0, channel.send(batch, stream).copiedBytes());
                p.destroyForcibly();
                assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the worker is gone");
                PeerException e = assertThrows(PeerException.class,
                        () -> channel.receive(stream, ValidationLevel.DEFAULT, plain).close());
                assertEquals(PeerException.Reason.EXITED, e.reason(), e.getMessage());
            }
            stream.synchronize();
            channel.close();
            shareable.close();
            plain.close();
            stream.close();
            assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(),
                    "0 device bytes held for the dead worker");
            assertEquals(liveBefore, HandleTracker.liveHandles(), "0 handles held for the dead worker");
        });
    }
}
