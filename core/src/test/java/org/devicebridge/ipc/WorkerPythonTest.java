package org.devicebridge.ipc;

import org.devicebridge.Device;
import org.devicebridge.testing.PythonProcess;
import static org.devicebridge.testing.PythonProcess.python;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.extension.UuidType;
import org.apache.arrow.vector.types.pojo.ExtensionTypeRegistry;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.CudaArrowRoundTripTest;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ExportTestSupport;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.ipc.WorkerChannel.PeerException;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real worker process ({@code devicebridge_worker.py} from the jar, identity function) on a {@link WorkerChannel}:
 * every Arrow type family the IPC descriptor carries (all but dictionaries), with nulls, with rows and empty, and
 * sliced, goes JVM -> worker -> JVM (uploaded pool memory, copied once by the export; the worker maps it, copies
 * the buffers into its own memory and shares that back) and is compared value by value after download. Then the
 * worker is killed with a call in flight: the channel reports {@code EXITED}, and device memory, handles and
 * exports on this side are back to their baselines (the worker's side is freed by the driver when its process
 * ends). Twenty calls in a row map the worker's result slab and event once, record the calls on at most two
 * interprocess events of the channel's pool, and the goodbye unmaps and destroys them all. The
 * worker's stderr is attached to every failure. Skipped without a GPU, or where the interpreter
 * ({@code DEVICEBRIDGE_PYTHON}, else {@code python3}) cannot import CuPy and pyarrow with a GPU.
 */
@RequiresCuda
class WorkerPythonTest {
    private static final Device DEVICE = Device.cuda(0);
    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    private BufferAllocator allocator;
    private ExportTestSupport.Baseline baseline;
    private long liveBefore;
    private long deviceBytesBefore;
    private CudaStream stream;
    private HostDeviceTransfer transfer;

    @BeforeAll
    static void registerExtension() {
        ExtensionTypeRegistry.register(UuidType.INSTANCE);
    }

    @BeforeEach
    void setUp() {
        baseline = new ExportTestSupport.Baseline();
        allocator = ExportTestSupport.allocator();
        liveBefore = HandleTracker.liveHandles();
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        stream = CudaStream.create(DEVICE);
        transfer = HostDeviceTransfer.create(DEVICE, 1 << 20);
    }

    @AfterEach
    void tearDown() {
        if (stream.isLive()) {
            stream.synchronize();
        }
        transfer.close();
        stream.close();
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
        baseline.assertNothingLeaked(allocator);
        allocator.close();
    }

    /** 4096 rows of the integer family, without dictionaries; the caller closes it. */
    private VectorSchemaRoot integers() {
        VectorSchemaRoot root = new VectorSchemaRoot(ExportTestSupport.family("integers", allocator, 4096, true,
                new DictionaryProvider.MapDictionaryProvider()));
        root.setRowCount(4096);
        return root;
    }

    private static boolean hasModules() {
        return PythonProcess.runs("import cupy, pyarrow; assert cupy.cuda.runtime.getDeviceCount() > 0");
    }

    /** A started worker, its stderr in a file. */
    private record Worker(Process process, Path stderr) {
        static Worker start(Path dir) throws IOException {
            Path module = WorkerChannel.writeWorkerModule(dir);
            Path err = dir.resolve("worker.stderr");
            Process p = new ProcessBuilder(python(), module.toString()).redirectError(err.toFile()).start();
            return new Worker(p, err);
        }

        WorkerChannel open() {
            return WorkerChannel.open(process.getInputStream(), process.getOutputStream(), TIMEOUT);
        }

        /** Runs {@code body}; a failure carries the worker's stderr. */
        void run(Body body) throws Exception {
            try {
                body.run();
            } catch (Throwable t) {
                t.addSuppressed(new AssertionError("the worker's stderr:\n" + (Files.exists(stderr)
                        ? Files.readString(stderr) : "(none)")));
                throw t;
            } finally {
                process.destroyForcibly();
                process.waitFor(60, TimeUnit.SECONDS);
            }
        }
    }

    @FunctionalInterface
    private interface Body {
        void run() throws Exception;
    }

    /** Uploads {@code root}, hands it to the worker and compares what comes back; the export copied pool memory. */
    private void roundTrip(WorkerChannel channel, VectorSchemaRoot root, String what) {
        try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream))) {
            channel.send(batch, stream);
            try (CudaArrowBatch back = channel.receive(stream, ValidationLevel.DEFAULT, transfer);
                 VectorSchemaRoot down = CudaArrow.download(back, new DeviceCopies(allocator, transfer, stream))) {
                assertEquals(root.getRowCount(), down.getRowCount(), what);
                assertEquals(root.getFieldVectors().size(), down.getFieldVectors().size(), what);
                for (int i = 0; i < root.getFieldVectors().size(); i++) {
                    FieldVector want = root.getVector(i);
                    FieldVector got = down.getVector(i);
                    CudaArrowRoundTripTest.assertSameFieldOrStorage(want.getField(), got.getField());
                    for (int r = 0; r < root.getRowCount(); r++) {
                        final int row = r;
                        assertTrue(Objects.deepEquals(CudaArrowRoundTripTest.valueOf(want, r),
                                CudaArrowRoundTripTest.valueOf(got, r)), () -> what + ": " + want.getName() + "[" + row + "]");
                    }
                }
                stream.synchronize(); // the last use of the worker's memory, before its close message
            }
        }
    }

    @Test
    void everyTypeFamilyRoundTripsThroughARealWorkerWithRowsEmptyAndSliced(@TempDir Path dir) throws Exception {
        assumeTrue(hasModules(), python() + " cannot import CuPy and pyarrow with a GPU");
        Worker w = Worker.start(dir);
        w.run(() -> {
            try (WorkerChannel channel = w.open()) {
                List<String> families = new ArrayList<>(ExportTestSupport.FAMILIES);
                families.remove("dictionary"); // not in descriptor version 1
                for (String family : families) {
                    for (int rows : new int[] {37, 0}) {
                        DictionaryProvider.MapDictionaryProvider none = new DictionaryProvider.MapDictionaryProvider();
                        try (VectorSchemaRoot root = new VectorSchemaRoot(ExportTestSupport.family(family, allocator,
                                rows, true, none))) {
                            root.setRowCount(rows);
                            roundTrip(channel, root, family + " rows=" + rows);
                            if (rows > 0) {
                                try (VectorSchemaRoot slice = root.slice(5, 19)) {
                                    roundTrip(channel, slice, family + " sliced [5, 24)");
                                }
                            }
                        } finally {
                            ExportTestSupport.closeDictionaries(none);
                        }
                    }
                }
            }
            assertTrue(w.process().waitFor(60, TimeUnit.SECONDS), "the worker exits after the goodbye");
            assertEquals(0, w.process().exitValue(), "the worker's exit status");
        });
    }

    @Test
    void twentyCallsMapTheWorkersSlabAndEventOnceAndCloseLeavesNothingMapped(@TempDir Path dir) throws Exception {
        assumeTrue(hasModules(), python() + " cannot import CuPy and pyarrow with a GPU");
        long ipcBefore = Allocations.allocatedBytes(Allocations.Kind.IPC);
        Worker w = Worker.start(dir);
        w.run(() -> {
            WorkerChannel channel = w.open();
            try (VectorSchemaRoot root = integers()) {
                for (int call = 1; call <= 20; call++) {
                    roundTrip(channel, root, "call " + call);
                    assertEquals(1, channel.results().allocationOpens(), "the worker's slab is mapped once, call " + call);
                    assertEquals(1, channel.results().keptAllocations(), "call " + call);
                    assertEquals(1, channel.results().eventOpens(), "the worker's event is opened once, call " + call);
                    // the event of call k goes back once the worker acknowledged it, which may come just after
                    // call k + 1 was sent: two events serve every call
                    assertTrue(channel.events().created() <= 2, "interprocess events created by call " + call + ": "
                            + channel.events());
                }
            }
            channel.close();
            assertEquals(0, channel.events().owned(), "close destroys the channel's pooled events");
            assertEquals(0, channel.results().keptAllocations(), "close unmaps the slab");
            assertEquals(ipcBefore, Allocations.allocatedBytes(Allocations.Kind.IPC), "nothing of the worker mapped");
            assertTrue(w.process().waitFor(60, TimeUnit.SECONDS), "the worker exits after the goodbye");
            assertEquals(0, w.process().exitValue(), "the worker's exit status");
        });
    }

    @Test
    void tensorCallsReuseTheChannelsEventAndBringTheValuesBack(@TempDir Path dir) throws Exception {
        assumeTrue(hasModules(), python() + " cannot import CuPy and pyarrow with a GPU");
        Worker w = Worker.start(dir);
        w.run(() -> {
            WorkerChannel channel = w.open();
            try (DeviceBuffer buffer = DeviceBuffer.allocate(DEVICE, 1024);
                 Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(JAVA_FLOAT, 256);
                MemorySegment back = arena.allocate(JAVA_FLOAT, 256);
                TensorSpec spec = TensorSpec.of(MemorySegment.ofAddress(buffer.address()).reinterpret(buffer.byteSize()),
                        DType.FLOAT32, 16, 16).withDevice(DEVICE);
                for (int call = 1; call <= 6; call++) {
                    for (int i = 0; i < 256; i++) {
                        host.setAtIndex(JAVA_FLOAT, i, call * 1000 + i);
                    }
                    CudaCopies.hostToDeviceAsync(host, buffer, 0, stream); // the worker waits on the event after it
                    channel.send(buffer, spec, stream);
                    try (ImportedTensor t = channel.receiveTensor(stream, ImportOptions.expecting(DEVICE));
                         DeviceBuffer view = DeviceBuffer.wrap(t.devicePointer().address(), t.byteExtent(), DEVICE, null)) {
                        CudaCopies.deviceToHostAsync(view, 0, back, stream);
                        stream.synchronize();
                    }
                    for (int i = 0; i < 256; i++) {
                        assertEquals(call * 1000 + i, back.getAtIndex(JAVA_FLOAT, i), "call " + call + " element " + i);
                    }
                    assertTrue(channel.events().created() <= 2, "interprocess events created by call " + call + ": "
                            + channel.events());
                }
            }
            channel.close();
            assertEquals(0, channel.events().owned(), "close destroys the channel's pooled events");
            assertTrue(w.process().waitFor(60, TimeUnit.SECONDS), "the worker exits after the goodbye");
            assertEquals(0, w.process().exitValue(), "the worker's exit status");
        });
    }

    @Test
    void killingTheWorkerMidCallIsExitedAndLeavesNothingHeldHere(@TempDir Path dir) throws Exception {
        assumeTrue(hasModules(), python() + " cannot import CuPy and pyarrow with a GPU");
        long ipcBefore = Allocations.allocatedBytes(Allocations.Kind.IPC);
        Worker w = Worker.start(dir);
        w.run(() -> {
            WorkerChannel channel = w.open();
            try (VectorSchemaRoot root = integers()) {
                roundTrip(channel, root, "before the kill"); // the worker now keeps the first allocation mapped
                roundTrip(channel, root, "before the kill, again"); // and this side its result slab
                assertEquals(1, channel.results().keptAllocations(), "the worker's slab is kept mapped here");
                try (CudaArrowBatch batch = CudaArrow.upload(root, DeviceCopies.of(transfer, stream))) {
                    assertTrue(channel.send(batch, stream).copiedBytes() > 0, "uploaded pool memory is copied once");
                    w.process().destroyForcibly();
                    assertTrue(w.process().waitFor(60, TimeUnit.SECONDS), "the worker is gone");
                    PeerException e = assertThrows(PeerException.class,
                            () -> channel.receive(stream, ValidationLevel.DEFAULT, transfer).close());
                    assertEquals(PeerException.Reason.EXITED, e.reason(), e.getMessage());
                    assertEquals(0, channel.results().keptAllocations(), "the dead worker's slab is unmapped at once");
                    assertThrows(PeerException.class, () -> channel.send(batch, stream), "the channel stays ended");
                }
            }
            stream.synchronize();
            channel.close(); // only releases what was left: the worker is gone
            assertEquals(0, channel.events().owned(), "the channel's events are destroyed with the dead worker");
            transfer.close(); // the test's own handles, so that what is left is what the dead worker held
            stream.close();
            assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(),
                    "0 device bytes held for the dead worker");
            assertEquals(liveBefore, HandleTracker.liveHandles(), "0 handles held for the dead worker");
            assertEquals(ipcBefore, Allocations.allocatedBytes(Allocations.Kind.IPC), "0 bytes of the dead worker mapped");
        });
    }
}
