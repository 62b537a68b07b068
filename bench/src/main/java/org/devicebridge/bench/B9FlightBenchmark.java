package org.devicebridge.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.SyncPutListener;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.flight.DeviceFlight;
import org.devicebridge.arrow.flight.DeviceFlightBatch;
import org.devicebridge.arrow.flight.DeviceFlightClient;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.TransferOptions;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * B9 (GPU): Arrow Flight over a 127.0.0.1 loopback, one whole stream per operation ({@code batches} batches of
 * the self-check's five-column sample, {@code rows} rows each), with device batches on both ends beside
 * host-only Flight of the same batches in the same run (target: device within 15% of host):
 * <ul>
 *   <li>{@code deviceGet}: device batches served by {@link DeviceFlight#serve} (one DMA each into pinned
 *       memory, handed to Flight without a copy) and fetched by {@link DeviceFlightClient#fetch} into device
 *       memory (read into pinned memory by Flight, one DMA each, overlapped with the next batch), the client's
 *       stream synchronised at the end;</li>
 *   <li>{@code hostGet}: the same batches already in pinned host memory, served by
 *       {@link DeviceFlight#serveRoots} (the same flow control and buffer hand-over, no device) and read with
 *       {@code FlightStream.next()}: the ratio deviceGet / hostGet is the device's overhead (target <= 1.15);</li>
 *   <li>{@code rawHostGet}: the same host batches served with Flight's API alone (unloader, loader,
 *       {@code putNext}, no flow control): what a plain Flight service does;</li>
 *   <li>{@code devicePut} / {@code hostPut}: the same in the other direction ({@link DeviceFlightClient#put}
 *       into {@link DeviceFlight#receive}, vs {@code startPut} into a server that reads every batch).</li>
 * </ul>
 * Server and client live in this JVM (their own threads), both in pinned memory of one
 * {@link PinnedArrowMemory}. The device benchmarks throw in setup without CUDA; the host ones
 * ({@code hostGet}, {@code rawHostGet}, {@code hostPut}) then run in pageable memory of a plain
 * {@code RootAllocator} (CPU numbers: the flow control and hand-over of the library against Flight alone).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {JvmFlags.NATIVE, JvmFlags.OPENS, JvmFlags.UNSAFE, JvmFlags.NETTY})
public class B9FlightBenchmark {
    private static final byte[] DEVICE = "device".getBytes(StandardCharsets.UTF_8);
    private static final byte[] HOST = "host".getBytes(StandardCharsets.UTF_8);
    private static final byte[] RAW = "raw".getBytes(StandardCharsets.UTF_8);

    /** Rows per batch (1 << 18: about 9 MB of the self-check's five columns). */
    @Param({"262144"})
    public int rows;

    /** Batches per stream. */
    @Param({"8"})
    public int batches;

    private PinnedArrowMemory pinned;
    private BufferAllocator serverMemory;
    private BufferAllocator clientMemory;
    private CudaStream serverStream;
    private CudaStream clientStream;
    private HostDeviceTransfer serverTransfer;
    private HostDeviceTransfer clientTransfer;
    private Schema schema;
    private final List<VectorSchemaRoot> hostBatches = new ArrayList<>();
    private final List<CudaArrowBatch> deviceBatches = new ArrayList<>();
    private FlightServer server;
    private FlightClient client;
    private DeviceCopies serverCopies;
    private DeviceCopies clientCopies;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        boolean device = !params.getBenchmark().matches(".*\\.(hostGet|rawHostGet|hostPut)$");
        if (device || Cuda.isAvailable()) {
            GpuSupport.requireCuda();
            pinned = PinnedArrowMemory.create();
            serverMemory = pinned.newRootAllocator();
            clientMemory = pinned.newRootAllocator();
            serverStream = CudaStream.create(Device.cuda(0));
            clientStream = CudaStream.create(Device.cuda(0));
            serverTransfer = HostDeviceTransfer.create(Device.cuda(0), TransferOptions.defaults());
            clientTransfer = HostDeviceTransfer.create(Device.cuda(0), TransferOptions.defaults());
            serverCopies = new DeviceCopies(serverMemory, serverTransfer, serverStream);
            clientCopies = new DeviceCopies(clientMemory, clientTransfer, clientStream);
        } else {
            serverMemory = new RootAllocator();
            clientMemory = new RootAllocator();
        }
        long bytes = 0;
        for (int i = 0; i < batches; i++) {
            VectorSchemaRoot host = Batches.selfCheckSample(serverMemory, rows);
            schema = host.getSchema();
            hostBatches.add(host);
            try (ArrowRecordBatch arb = new VectorUnloader(host).getRecordBatch()) {
                bytes += arb.computeBodyLength();
            }
            if (serverStream != null) {
                deviceBatches.add(CudaArrow.upload(host, DeviceCopies.of(serverTransfer, serverStream)));
            }
        }
        if (serverStream != null) {
            serverStream.synchronize();
        }
        server = FlightServer.builder(serverMemory, Location.forGrpcInsecure("127.0.0.1", 0), new Producer()).build()
                .start();
        client = FlightClient.builder(clientMemory, Location.forGrpcInsecure("127.0.0.1", server.getPort())).build();
        System.out.println("\n[B9FlightBenchmark] bytes per stream " + bytes + " (" + batches + " batches), "
                + (pinned != null ? "pinned host memory" : "pageable host memory (no CUDA: host benchmarks only)"));
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        if (server == null) {
            return;
        }
        client.close();
        server.shutdown();
        server.awaitTermination(10, TimeUnit.SECONDS);
        server.close();
        if (serverStream != null) {
            serverStream.synchronize();
            clientStream.synchronize();
        }
        deviceBatches.forEach(CudaArrowBatch::close);
        hostBatches.forEach(VectorSchemaRoot::close);
        if (serverStream != null) {
            serverTransfer.close();
            clientTransfer.close();
            serverStream.close();
            clientStream.close();
        }
        serverMemory.close();
        clientMemory.close();
        if (pinned != null) {
            pinned.close();
        }
    }

    @Benchmark
    public long deviceGet() {
        long[] rowsSeen = {0};
        DeviceFlightClient.of(client).fetch(new Ticket(DEVICE), clientCopies, b -> {
            rowsSeen[0] += b.batch().length();
            b.close();
        });
        clientStream.synchronize();
        return rowsSeen[0];
    }

    @Benchmark
    public long hostGet() throws Exception {
        return read(HOST);
    }

    @Benchmark
    public long rawHostGet() throws Exception {
        return read(RAW);
    }

    private long read(byte[] ticket) throws Exception {
        long rowsSeen = 0;
        try (FlightStream in = client.getStream(new Ticket(ticket))) {
            while (in.next()) {
                rowsSeen += in.getRoot().getRowCount();
            }
        }
        return rowsSeen;
    }

    @Benchmark
    public long devicePut() {
        long n = DeviceFlightClient.of(client).put(FlightDescriptor.path("device"), schema, deviceBatches.iterator(),
                clientCopies);
        serverStream.synchronize();
        return n;
    }

    @Benchmark
    public long hostPut() {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, serverMemory);
             SyncPutListener answers = new SyncPutListener()) {
            FlightClient.ClientStreamListener out = client.startPut(FlightDescriptor.path("host"), root, answers);
            VectorLoader loader = new VectorLoader(root);
            for (VectorSchemaRoot b : hostBatches) {
                try (ArrowRecordBatch arb = new VectorUnloader(b).getRecordBatch()) {
                    loader.load(arb);
                }
                out.putNext();
            }
            out.completed();
            out.getResult();
            return hostBatches.size();
        }
    }

    /** Serves the three tickets and reads both puts: device and host batches through DeviceFlight, raw through Flight's API. */
    private final class Producer extends NoOpFlightProducer {
        @Override
        public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            if (java.util.Arrays.equals(ticket.getBytes(), DEVICE)) {
                DeviceFlight.serve(listener, schema, deviceBatches.iterator(), serverCopies);
                return;
            }
            if (java.util.Arrays.equals(ticket.getBytes(), HOST)) {
                DeviceFlight.serveRoots(listener, schema, hostBatches.iterator(), serverMemory);
                return;
            }
            try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, serverMemory)) {
                listener.start(root);
                VectorLoader loader = new VectorLoader(root);
                for (VectorSchemaRoot b : hostBatches) {
                    try (ArrowRecordBatch arb = new VectorUnloader(b).getRecordBatch()) {
                        loader.load(arb);
                    }
                    listener.putNext();
                }
                listener.completed();
            }
        }

        @Override
        public Runnable acceptPut(CallContext context, FlightStream flightStream, StreamListener<PutResult> ackStream) {
            return () -> {
                if (flightStream.getDescriptor().getPath().get(0).equals("device")) {
                    DeviceFlight.receive(flightStream, serverCopies, DeviceFlightBatch::close);
                } else {
                    while (flightStream.next()) {
                        flightStream.getRoot().getRowCount();
                    }
                }
                ackStream.onCompleted();
            };
        }
    }
}
