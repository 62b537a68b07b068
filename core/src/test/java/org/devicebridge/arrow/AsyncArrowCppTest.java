package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowJava;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The async device stream both ways against Arrow C++ (src/test/cpp/async_arrow_peer.cc, compiled with g++ at
 * test time against the headers and libarrow of the pyarrow wheel that {@code $DEVICEBRIDGE_PYTHON}, else
 * {@code python3}, imports): Arrow C++'s {@code ExportAsyncRecordBatchReader} into the library's consumer, and
 * the library's producer into Arrow C++'s {@code CreateAsyncDeviceStreamHandler}, first with CPU arrays. PyPI's
 * pyarrow wheels are built without ARROW_CUDA, so Arrow C++ there has no CUDA device of its own (the peer reports
 * it; {@link #theWheelsCudaSupportIsReported} prints it): for CUDA arrays the peer brings a minimal one (a
 * {@code Device}, {@code MemoryManager}, {@code Stream} and {@code SyncEvent} over the driver it dlopens), which
 * Arrow C++'s own export and import then use, both ways
 * ({@link #arrowCppsCudaProducerReachesTheLibrarysConsumerWithItsSyncEvents},
 * {@link #theLibrarysCudaProducerReachesArrowCppsConsumerThroughThePeersDevice}). Skipped, with the reason,
 * without pyarrow 19+ or g++, and the CUDA cases without a driver. Tagged {@code gpu}: it runs where the GPU
 * tests run, which is where pyarrow is. CUDA arrays and their sync events also cross between the library's two
 * sides in {@link #cudaBatchesAndTheirEventsCrossFromTheLibrarysProducerToItsConsumer}.
 */
@Tag("gpu")
class AsyncArrowCppTest {
    private static final String PYTHON = System.getenv().getOrDefault("DEVICEBRIDGE_PYTHON", "python3");
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static SymbolLookup peer;
    private static String unavailable;
    private static ExecutorService exec;

    @BeforeAll
    static void build() throws Exception {
        exec = Executors.newSingleThreadExecutor();
        try {
            peer = compile();
        } catch (IOException e) {
            unavailable = e.getMessage();
        }
    }

    @AfterAll
    static void stop() throws InterruptedException {
        exec.shutdown();
        exec.awaitTermination(30, TimeUnit.SECONDS);
    }

    private static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", command.subList(0, Math.min(3, command.size()))) + " failed: " + out);
        }
        return out;
    }

    /** Builds the peer against the wheel; a library whose C++ ABI does not match libarrow's fails to load. */
    private static SymbolLookup compile() throws IOException, InterruptedException {
        String[] info;
        try {
            info = run(List.of(PYTHON, "-c", "import pyarrow as pa; print(pa.__version__); print(pa.get_include()); "
                    + "print(pa.get_library_dirs()[0])")).strip().split("\n");
        } catch (IOException e) {
            throw new IOException("pyarrow is not importable by " + PYTHON + " (set DEVICEBRIDGE_PYTHON): " + e.getMessage());
        }
        int major = Integer.parseInt(info[0].strip().split("\\.")[0]);
        if (major < 19) {
            throw new IOException("pyarrow " + info[0] + " predates Arrow C++'s async device stream (19.0)");
        }
        Path libDir = Path.of(info[2].strip());
        Path libarrow;
        try (Stream<Path> files = Files.list(libDir)) {
            libarrow = files.filter(f -> f.getFileName().toString().matches("libarrow\\.so(\\.\\d+)*"))
                    .min((a, b) -> a.getFileName().toString().length() - b.getFileName().toString().length())
                    .orElseThrow(() -> new IOException("no libarrow.so in " + libDir));
        }
        Path base = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
        if (!Files.isDirectory(base.resolve("src/test/cpp")) && Files.isDirectory(base.resolve("core/src/test/cpp"))) {
            base = base.resolve("core");
        }
        Path source = base.resolve("src/test/cpp/async_arrow_peer.cc");
        Files.createDirectories(base.resolve("target/test-cpp"));
        List<String> failures = new ArrayList<>();
        for (String abi : new String[] {"1", "0"}) {
            Path out = base.resolve("target/test-cpp/libasync_arrow_peer_abi" + abi + ".so");
            try {
                run(List.of("g++", "-std=c++20", "-shared", "-fPIC", "-O1", "-D_GLIBCXX_USE_CXX11_ABI=" + abi,
                        "-I" + info[1].strip(), "-o", out.toString(), source.toString(), libarrow.toString(),
                        "-Wl,-z,now", "-Wl,-rpath," + libDir, "-lpthread", "-ldl"));
                return SymbolLookup.libraryLookup(out, Arena.global());
            } catch (IOException | IllegalArgumentException e) {
                failures.add("_GLIBCXX_USE_CXX11_ABI=" + abi + ": " + e.getMessage());
            }
        }
        throw new IOException("cannot build the Arrow C++ peer against pyarrow " + info[0] + ": " + failures);
    }

    private static MethodHandle fn(String name, FunctionDescriptor fd) {
        assumeTrue(peer != null, () -> "Arrow C++ peer unavailable: " + unavailable);
        return Linker.nativeLinker().downcallHandle(peer.find(name).orElseThrow(), fd);
    }

    private static String error(MemorySegment err) {
        return err.getString(0);
    }

    /** Why the peer's CUDA device is unusable (the driver's dlopen, cuInit, device 0), or null when it is usable. */
    private static String peerCudaError() throws Throwable {
        MethodHandle h = fn("peer_cuda_error", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment err = arena.allocate(512);
            int rc = (int) h.invokeExact(err, 512);
            return rc == 0 ? null : error(err);
        }
    }

    /** The peer's CUDA counts, as a record so that a test asserts differences by name. */
    private record PeerCounts(int buffersAllocated, int buffersFreed, int eventsCreated, int eventsDestroyed,
                              int eventWaits) {
        static PeerCounts read() throws Throwable {
            MethodHandle h = fn("peer_cuda_counters", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ValueLayout.JAVA_INT, 5);
                h.invokeExact(out);
                return new PeerCounts(out.getAtIndex(ValueLayout.JAVA_INT, 0), out.getAtIndex(ValueLayout.JAVA_INT, 1),
                        out.getAtIndex(ValueLayout.JAVA_INT, 2), out.getAtIndex(ValueLayout.JAVA_INT, 3),
                        out.getAtIndex(ValueLayout.JAVA_INT, 4));
            }
        }

        PeerCounts since(PeerCounts before) {
            return new PeerCounts(buffersAllocated - before.buffersAllocated, buffersFreed - before.buffersFreed,
                    eventsCreated - before.eventsCreated, eventsDestroyed - before.eventsDestroyed,
                    eventWaits - before.eventWaits);
        }
    }

    @Test
    void theWheelsCudaSupportIsReported() throws Throwable {
        int version = (int) fn("peer_arrow_version", FunctionDescriptor.of(ValueLayout.JAVA_INT)).invokeExact();
        int cuda = (int) fn("peer_has_cuda", FunctionDescriptor.of(ValueLayout.JAVA_INT)).invokeExact();
        String peerCuda = peerCudaError();
        System.out.println("AsyncArrowCppTest: Arrow C++ " + version + ", ARROW_CUDA " + (cuda == 1 ? "on" : "off")
                + "; CUDA arrays through the peer's own device: "
                + (peerCuda == null ? "driver usable" : "unusable here (" + peerCuda + ")"));
        assertEquals(true, version >= 19_000_000, "ARROW_VERSION " + version);
    }

    @Test
    void theLibrarysConsumerReadsArrowCppsProducer() throws Throwable {
        MethodHandle start = fn("cpp_produce_start", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle join = fn("cpp_produce_join", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT));
        int len = (int) fn("peer_len", FunctionDescriptor.of(ValueLayout.JAVA_INT)).invokeExact();
        int n = 6;
        long sum = 0;
        int batches = 0;
        try (Arena arena = Arena.ofConfined();
             AsyncDeviceStream c = AsyncDeviceStream.open(2, ValidationLevel.FULL)) {
            start.invokeExact(c.handler(), n);
            assertEquals("v", c.schema(WAIT).children().get(0).name());
            for (;;) {
                try (ImportedArray a = c.next(WAIT)) {
                    if (a == null) {
                        break;
                    }
                    ArrayNode v = a.root().children().get(0);
                    for (long j = 0; j < v.length(); j++) {
                        sum += v.buffer(1).getAtIndex(ValueLayout.JAVA_LONG, v.offset() + j);
                    }
                    batches++;
                }
            }
            MemorySegment err = arena.allocate(512);
            int rc = (int) join.invokeExact(err, 512);
            assertEquals(0, rc, error(err));
        }
        assertEquals(n, batches);
        assertEquals(expectedSum(n, len), sum);
    }

    @Test
    void arrowCppsHandlerReadsTheLibrarysProducer() throws Throwable {
        MethodHandle start = fn("cpp_consume_start", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle join = fn("cpp_consume_join", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        int len = 1000;
        int n = 5;
        List<VectorSchemaRoot> roots = new ArrayList<>();
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator(); Arena arena = Arena.ofConfined()) {
            try {
                for (int b = 0; b < n; b++) {
                    BigIntVector v = new BigIntVector("v", allocator);
                    v.allocateNew(len);
                    for (int j = 0; j < len; j++) {
                        v.set(j, b * 1000L + j);
                    }
                    v.setValueCount(len);
                    roots.add(VectorSchemaRoot.of(v));
                }
                MemorySegment stream = ArrowC.allocateDeviceArrayStream(arena);
                ArrowJava.exportDeviceStream(roots.get(0).getSchema(), roots.iterator(), null, stream);
                MemorySegment handler = (MemorySegment) start.invokeExact(3);
                CompletableFuture<Void> done = AsyncDeviceStream.export(stream, handler, exec);
                assertNull(done.get(30, TimeUnit.SECONDS));
                MemorySegment sum = arena.allocate(ValueLayout.JAVA_LONG);
                MemorySegment batches = arena.allocate(ValueLayout.JAVA_INT);
                MemorySegment err = arena.allocate(512);
                int rc = (int) join.invokeExact(sum, batches, err, 512);
                assertEquals(0, rc, error(err));
                assertEquals(n, batches.get(ValueLayout.JAVA_INT, 0));
                assertEquals(expectedSum(n, len), sum.get(ValueLayout.JAVA_LONG, 0));
            } finally {
                roots.forEach(VectorSchemaRoot::close);
            }
        }
        assertEquals(0, AsyncStreamExport.liveExports());
    }

    @Test
    @RequiresCuda
    void arrowCppsCudaProducerReachesTheLibrarysConsumerWithItsSyncEvents() throws Throwable {
        MethodHandle start = fn("cpp_produce_cuda_start", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT));
        MethodHandle join = fn("cpp_produce_join", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT));
        int len = (int) fn("peer_len", FunctionDescriptor.of(ValueLayout.JAVA_INT)).invokeExact();
        String peerCuda = peerCudaError();
        assertNull(peerCuda, "the peer's CUDA device: " + peerCuda);
        int n = 4;
        long sum = 0;
        int batches = 0;
        PeerCounts before = PeerCounts.read();
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(Device.cuda(0));
             AsyncDeviceStream c = AsyncDeviceStream.open(2, ValidationLevel.MINIMAL)) {
            start.invokeExact(c.handler(), n);
            assertEquals("v", c.schema(WAIT).children().get(0).name());
            assertEquals(DeviceKind.CUDA, c.deviceType(), "the producer's device type");
            MemorySegment host = arena.allocate((long) len * Long.BYTES, Long.BYTES);
            for (;;) {
                try (ImportedArray a = c.next(WAIT)) {
                    if (a == null) {
                        break;
                    }
                    assertEquals(DeviceKind.CUDA, a.deviceType());
                    assertEquals(0, a.deviceId());
                    assertFalse(a.syncEvent().equals(MemorySegment.NULL), "Arrow C++'s CUDA batch carries its event");
                    // sync_event points at the CUevent the peer recorded after filling the batch
                    stream.waitEvent(a.syncEvent().reinterpret(Long.BYTES).get(ValueLayout.JAVA_LONG, 0));
                    ArrayNode v = a.root().children().get(0);
                    assertEquals(len, v.length());
                    long first = v.offset() * Long.BYTES;
                    try (DeviceBuffer values = DeviceBuffer.wrap(v.bufferPointer(1).address(), first + host.byteSize(),
                            Device.cuda(0), null)) {
                        CudaCopies.deviceToHostAsync(values, first, host, stream);
                        stream.synchronize();
                    }
                    for (int j = 0; j < len; j++) {
                        sum += host.getAtIndex(ValueLayout.JAVA_LONG, j);
                    }
                    batches++;
                }
            }
            MemorySegment err = arena.allocate(512);
            int rc = (int) join.invokeExact(err, 512);
            assertEquals(0, rc, error(err));
        }
        PeerCounts used = PeerCounts.read().since(before);
        System.out.println("AsyncArrowCppTest: Arrow C++ -> library, CUDA arrays on the peer's device: " + batches
                + " batches, sum " + sum + ", peer " + used);
        assertEquals(n, batches);
        assertEquals(expectedSum(n, len), sum, "values read on the host after waiting on each batch's event");
        assertEquals(new PeerCounts(n, n, n, n, 0), used,
                "one device buffer and one event per batch, every one freed once the library released the batch");
    }

    @Test
    @RequiresCuda
    void theLibrarysCudaProducerReachesArrowCppsConsumerThroughThePeersDevice() throws Throwable {
        MethodHandle start = fn("cpp_consume_cuda_start", FunctionDescriptor.of(ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle join = fn("cpp_consume_join", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        int n = 4;
        int len = 1000;
        long exportsBefore = ExportRegistry.outstandingExports();
        long deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        PeerCounts before = PeerCounts.read();
        List<CudaArrowBatch> batches = new ArrayList<>();
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(Device.cuda(0));
             HostDeviceTransfer transfer = HostDeviceTransfer.create(Device.cuda(0), 1 << 20)) {
            org.apache.arrow.vector.types.pojo.Schema schema = upload(n, len, allocator, batches, DeviceCopies.of(transfer, stream));
            MemorySegment source = ArrowC.allocateDeviceArrayStream(arena);
            CudaArrow.exportDeviceStream(schema, batches.iterator(), DeviceCopies.of(stream), source); // the stream owns them
            MemorySegment err = arena.allocate(512);
            MemorySegment handler = (MemorySegment) start.invokeExact(3, err, 512);
            assertFalse(handler.equals(MemorySegment.NULL), () -> "the peer's CUDA consumer: " + error(err));
            CompletableFuture<Void> done = AsyncDeviceStream.export(source, handler, exec);
            assertNull(done.get(30, TimeUnit.SECONDS));
            MemorySegment sum = arena.allocate(ValueLayout.JAVA_LONG);
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            int rc = (int) join.invokeExact(sum, count, err, 512);
            assertEquals(0, rc, error(err));
            PeerCounts used = PeerCounts.read().since(before);
            System.out.println("AsyncArrowCppTest: library -> Arrow C++, CUDA arrays mapped onto the peer's device: "
                    + count.get(ValueLayout.JAVA_INT, 0) + " batches, sum " + sum.get(ValueLayout.JAVA_LONG, 0)
                    + ", peer " + used);
            assertEquals(n, count.get(ValueLayout.JAVA_INT, 0));
            assertEquals(expectedSum(n, len), sum.get(ValueLayout.JAVA_LONG, 0),
                    "values Arrow C++ copied to the host after waiting on each batch's event");
            assertEquals(new PeerCounts(0, 0, 0, 0, n), used, "Arrow C++ waited once on each batch's sync event");
            assertEquals(exportsBefore, ExportRegistry.outstandingExports(), "every exported batch released");
            assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(),
                    "the uploads' device memory freed once Arrow C++ released the batches");
        }
        assertEquals(0, AsyncStreamExport.liveExports());
    }

    @Test
    @RequiresCuda
    void cudaBatchesAndTheirEventsCrossFromTheLibrarysProducerToItsConsumer() throws Throwable {
        int n = 3;
        int len = 1000;
        List<CudaArrowBatch> batches = new ArrayList<>();
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(Device.cuda(0));
             HostDeviceTransfer transfer = HostDeviceTransfer.create(Device.cuda(0), 1 << 20)) {
            org.apache.arrow.vector.types.pojo.Schema schema = upload(n, len, allocator, batches, DeviceCopies.of(transfer, stream));
            MemorySegment source = ArrowC.allocateDeviceArrayStream(arena);
            CudaArrow.exportDeviceStream(schema, batches.iterator(), DeviceCopies.of(stream), source); // the stream owns them
            int seen = 0;
            try (AsyncDeviceStream c = AsyncDeviceStream.open(2, ValidationLevel.MINIMAL)) {
                CompletableFuture<Void> done = AsyncDeviceStream.export(source, c.handler(), exec);
                assertEquals("v", c.schema(WAIT).children().get(0).name());
                assertEquals(DeviceKind.CUDA, c.deviceType());
                for (;;) {
                    try (ImportedArray a = c.next(WAIT)) {
                        if (a == null) {
                            break;
                        }
                        assertEquals(DeviceKind.CUDA, a.deviceType());
                        assertFalse(a.syncEvent().equals(MemorySegment.NULL), "a CUDA batch carries its sync event");
                        ArrayNode v = a.root().children().get(0);
                        assertEquals(len, v.length());
                        assertFalse(v.bufferPointer(1).equals(MemorySegment.NULL));
                        seen++;
                    }
                }
                assertNull(done.get(30, TimeUnit.SECONDS));
            }
            stream.synchronize();
            assertEquals(n, seen);
        }
        assertEquals(0, AsyncStreamExport.liveExports());
    }

    /** Uploads {@code n} batches of one int64 column "v" ({@code b * 1000 + j}) into {@code batches}; their schema. */
    private static org.apache.arrow.vector.types.pojo.Schema upload(int n, int len, BufferAllocator allocator,
                                                                    List<CudaArrowBatch> batches, DeviceCopies copies) {
        org.apache.arrow.vector.types.pojo.Schema schema = null;
        for (int b = 0; b < n; b++) {
            try (BigIntVector v = new BigIntVector("v", allocator)) {
                v.allocateNew(len);
                for (int j = 0; j < len; j++) {
                    v.set(j, b * 1000L + j);
                }
                v.setValueCount(len);
                VectorSchemaRoot root = VectorSchemaRoot.of(v);
                schema = root.getSchema();
                batches.add(CudaArrow.upload(root, copies));
            }
        }
        return schema;
    }

    private static long expectedSum(int n, int len) {
        long sum = 0;
        for (int b = 0; b < n; b++) {
            for (int j = 0; j < len; j++) {
                sum += b * 1000L + j;
            }
        }
        return sum;
    }
}
