package org.devicebridge.arrow.flight;

import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.SCHEMA;
import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.assertBatch;
import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * CPython's {@code pyarrow.flight} on the other side, in a child process ({@code flight_peer.py}), both
 * ways: a pyarrow server that Java fetches from and puts to (pyarrow checks what it received), and a Java
 * server that a pyarrow client fetches from (checking the values) and puts to (Java checks). Once on host
 * memory (runs wherever pyarrow is installed) and once with device batches on both Java ends (tagged
 * {@code gpu}). Skipped without {@code pyarrow.flight}; the interpreter is {@code $DEVICEBRIDGE_PYTHON} or
 * {@code python3}.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DeviceFlightPythonPeerTest {
    private static final String PYTHON = System.getenv().getOrDefault("DEVICEBRIDGE_PYTHON", "python3");
    private static Path script;

    @BeforeAll
    static void requirePyarrowFlight() throws Exception {
        script = Path.of(DeviceFlightPythonPeerTest.class.getResource("flight_peer.py").toURI());
        boolean ok;
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import pyarrow.flight").redirectErrorStream(true).start();
            ok = p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
            if (!ok) {
                p.destroyForcibly();
            }
        } catch (IOException e) {
            ok = false;
        }
        assumeTrue(ok, PYTHON + " cannot import pyarrow.flight");
    }

    /** A pyarrow peer in server mode: its port, and a stop that closes its stdin. */
    private record PythonServer(Process process, int port) implements AutoCloseable {
        static PythonServer start() throws Exception {
            Process p = new ProcessBuilder(PYTHON, script.toString(), "server").redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = CompletableFuture.supplyAsync(() -> {
                try {
                    return out.readLine();
                } catch (IOException e) {
                    return null;
                }
            }).get(60, TimeUnit.SECONDS);
            if (line == null) {
                p.destroyForcibly();
                throw new AssertionError("the pyarrow server did not start (exit " + p.waitFor() + ")");
            }
            return new PythonServer(p, Integer.parseInt(line.trim()));
        }

        @Override
        public void close() throws Exception {
            process.getOutputStream().close();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the pyarrow server did not stop");
            }
        }
    }

    /** Runs the pyarrow client against {@code port} and checks that it says ok. */
    private static void runPythonClient(int port) throws Exception {
        Process p = new ProcessBuilder(PYTHON, script.toString(), "client", Integer.toString(port))
                .redirectErrorStream(true).start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return e.toString();
            }
        });
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the pyarrow client did not finish: " + output.getNow(""));
        }
        String text = output.get(10, TimeUnit.SECONDS);
        assertEquals(0, p.exitValue(), text);
        assertTrue(text.contains("ok"), text);
    }

    @Test
    void hostBatchesToAndFromPyarrowFlight() throws Exception {
        try (BufferAllocator memory = ArrowMemory.newRootAllocator()) {
            try (PythonServer py = PythonServer.start();
                 FlightClient client = FlightClient.builder(memory, Location.forGrpcInsecure("127.0.0.1", py.port())).build()) {
                List<VectorSchemaRoot> got = new ArrayList<>();
                DeviceFlightClient.of(client).fetchRoots(new Ticket("py".getBytes(StandardCharsets.UTF_8)), memory, got::add);
                try {
                    assertEquals(3, got.size());
                    assertBatch(got.get(0), 0, 100);
                    assertBatch(got.get(1), 100, 1);
                    assertBatch(got.get(2), 101, 37);
                } finally {
                    got.forEach(VectorSchemaRoot::close);
                }
                List<VectorSchemaRoot> mine = List.of(batch(memory, 0, 10), batch(memory, 10, 500));
                try {
                    DeviceFlightClient.of(client).putRoots(FlightDescriptor.path("java"), SCHEMA, mine.iterator(), memory);
                } finally {
                    mine.forEach(VectorSchemaRoot::close);
                }
            }
            try (DeviceFlightLoopbackTest.RootsProducer producer = new DeviceFlightLoopbackTest.RootsProducer(memory)) {
                producer.offer("java", List.of(batch(memory, 0, 100), batch(memory, 100, 1), batch(memory, 101, 37)));
                FlightServer server = FlightServer.builder(memory, Location.forGrpcInsecure("127.0.0.1", 0), producer)
                        .build().start();
                try {
                    runPythonClient(server.getPort());
                } finally {
                    server.shutdown();
                    server.awaitTermination(10, TimeUnit.SECONDS);
                    server.close();
                }
                List<VectorSchemaRoot> put = producer.take("py");
                try {
                    assertEquals(2, put.size());
                    assertBatch(put.get(0), 0, 600);
                    assertBatch(put.get(1), 600, 400);
                } finally {
                    put.forEach(VectorSchemaRoot::close);
                }
            }
            assertEquals(0, memory.getAllocatedMemory());
        }
    }

    @Test
    @RequiresCuda
    void deviceBatchesToAndFromPyarrowFlight() throws Exception {
        try (PinnedArrowMemory pinned = PinnedArrowMemory.create();
             BufferAllocator memory = pinned.newRootAllocator();
             BufferAllocator plain = ArrowMemory.newRootAllocator();
             CudaStream stream = CudaStream.create(Device.cuda(0));
             HostDeviceTransfer transfer = HostDeviceTransfer.create(Device.cuda(0), 1 << 20)) {
            DeviceCopies copies = new DeviceCopies(memory, transfer, stream);
            try (PythonServer py = PythonServer.start();
                 FlightClient client = FlightClient.builder(memory, Location.forGrpcInsecure("127.0.0.1", py.port())).build()) {
                List<DeviceFlightBatch> got = new ArrayList<>();
                try {
                    DeviceFlightClient.of(client).fetch(new Ticket("py".getBytes(StandardCharsets.UTF_8)), copies, got::add);
                    assertDevice(got, plain, transfer, stream, 0, 100, 100, 1, 101, 37);
                } finally {
                    got.forEach(DeviceFlightBatch::close);
                }
                List<CudaArrowBatch> mine = upload(plain, transfer, stream, 0, 10, 10, 500);
                try {
                    DeviceFlightClient.of(client).put(FlightDescriptor.path("java"), SCHEMA, mine.iterator(), copies);
                } finally {
                    mine.forEach(CudaArrowBatch::close);
                }
            }
            try (DeviceFlightProducer producer = new DeviceFlightProducer(copies)) {
                producer.add("java", SCHEMA, upload(plain, transfer, stream, 0, 100, 100, 1, 101, 37));
                FlightServer server = FlightServer.builder(memory, Location.forGrpcInsecure("127.0.0.1", 0), producer)
                        .build().start();
                try {
                    runPythonClient(server.getPort());
                } finally {
                    server.shutdown();
                    server.awaitTermination(10, TimeUnit.SECONDS);
                    server.close();
                }
                List<DeviceFlightBatch> put = producer.take("py");
                try {
                    assertDevice(put, plain, transfer, stream, 0, 600, 600, 400);
                } finally {
                    put.forEach(DeviceFlightBatch::close);
                }
            }
            stream.synchronize();
            assertEquals(0, memory.getAllocatedMemory());
            assertEquals(0, plain.getAllocatedMemory());
        }
    }

    private static List<CudaArrowBatch> upload(BufferAllocator memory, HostDeviceTransfer transfer, CudaStream stream,
                                               int... firstAndRows) {
        List<CudaArrowBatch> out = new ArrayList<>();
        for (int i = 0; i < firstAndRows.length; i += 2) {
            try (VectorSchemaRoot host = batch(memory, firstAndRows[i], firstAndRows[i + 1])) {
                out.add(CudaArrow.upload(host, DeviceCopies.of(transfer, stream)));
            }
        }
        return out;
    }

    private static void assertDevice(List<DeviceFlightBatch> got, BufferAllocator memory, HostDeviceTransfer transfer,
                                     CudaStream stream, int... firstAndRows) {
        assertEquals(firstAndRows.length / 2, got.size());
        for (int i = 0; i < got.size(); i++) {
            stream.waitEvent(got.get(i).ready());
            try (VectorSchemaRoot back = CudaArrow.download(got.get(i).batch(), new DeviceCopies(memory, transfer, stream))) {
                assertBatch(back, firstAndRows[2 * i], firstAndRows[2 * i + 1]);
            }
        }
    }
}
