package org.devicebridge.probe;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.arrow.flight.DeviceFlight;
import org.devicebridge.arrow.flight.DeviceFlightClient;
import org.devicebridge.arrow.java.ArrowMemory;

/**
 * A user's Flight service and client, run in a forked JVM by {@code FlightModulePathForkedTest} with
 * devicebridge, Arrow Java and Flight on the module path or the class path: a loopback server on 127.0.0.1
 * (a free port) answers a {@code DoGet} with {@link DeviceFlight#serveRoots} and takes a {@code DoPut} with
 * {@link DeviceFlight#receiveRoots}; the client fetches and puts through {@link DeviceFlightClient}; the
 * values are compared. Memory is devicebridge's FFM allocation manager (no Netty allocator). In a package of
 * its own, so that it stays outside the {@code org.devicebridge.core} module. Prints one line starting with
 * {@code RESULT} (with the module each part was loaded from) and exits 0 when every value came back.
 */
public final class FlightProbe {
    private static final Schema SCHEMA = new Schema(List.of(
            Field.nullable("id", new ArrowType.Int(64, true)),
            Field.nullable("name", ArrowType.Utf8.INSTANCE)));

    private FlightProbe() {}

    public static void main(String[] args) throws Exception {
        try (BufferAllocator serverMemory = ArrowMemory.newRootAllocator();
             BufferAllocator clientMemory = ArrowMemory.newRootAllocator()) {
            List<VectorSchemaRoot> served = List.of(batch(serverMemory, 0, 1000), batch(serverMemory, 1000, 7));
            Producer producer = new Producer(serverMemory, served);
            FlightServer server = FlightServer.builder(serverMemory, Location.forGrpcInsecure("127.0.0.1", 0), producer)
                    .build().start();
            try (FlightClient client = FlightClient.builder(clientMemory,
                    Location.forGrpcInsecure("127.0.0.1", server.getPort())).build()) {
                List<VectorSchemaRoot> got = new ArrayList<>();
                long n = DeviceFlightClient.of(client).fetchRoots(new Ticket("get".getBytes(StandardCharsets.UTF_8)),
                        clientMemory, got::add);
                check(n == 2 && same(served, got), "DoGet returned other batches");
                got.forEach(VectorSchemaRoot::close);

                List<VectorSchemaRoot> sent = List.of(batch(clientMemory, 5, 300));
                long m = DeviceFlightClient.of(client).putRoots(FlightDescriptor.path("put"), SCHEMA, sent.iterator(),
                        clientMemory);
                check(m == 1 && same(sent, producer.received), "DoPut delivered other batches");
                sent.forEach(VectorSchemaRoot::close);
                producer.received.forEach(VectorSchemaRoot::close);
            } finally {
                server.shutdown();
                server.awaitTermination(10, TimeUnit.SECONDS);
                server.close();
                served.forEach(VectorSchemaRoot::close);
            }
            System.out.println("RESULT ok core=" + DeviceFlight.class.getModule().getName()
                    + " flight=" + FlightServer.class.getModule().getName()
                    + " grpc=" + io.grpc.Server.class.getModule().getName());
        }
        if (ArrowMemory.liveBytes() != 0) {
            System.out.println("RESULT leaked " + ArrowMemory.liveBytes());
            System.exit(1);
        }
    }

    private static void check(boolean condition, String message) {
        if (!condition) {
            System.out.println("RESULT " + message);
            System.exit(1);
        }
    }

    private static boolean same(List<VectorSchemaRoot> a, List<VectorSchemaRoot> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (!a.get(i).contentToTSVString().equals(b.get(i).contentToTSVString())) {
                return false;
            }
        }
        return true;
    }

    private static VectorSchemaRoot batch(BufferAllocator allocator, int first, int rows) {
        VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
        BigIntVector ids = (BigIntVector) root.getVector("id");
        VarCharVector names = (VarCharVector) root.getVector("name");
        ids.allocateNew(rows);
        names.allocateNew(rows);
        for (int i = 0; i < rows; i++) {
            if ((first + i) % 7 == 0) {
                ids.setNull(i);
                names.setNull(i);
            } else {
                ids.set(i, (first + i) * 3L);
                names.setSafe(i, ("v" + (first + i)).getBytes(StandardCharsets.UTF_8));
            }
        }
        root.setRowCount(rows);
        return root;
    }

    /** Serves the batches for any ticket; keeps what a put sends. */
    private static final class Producer extends NoOpFlightProducer {
        private final BufferAllocator memory;
        private final List<VectorSchemaRoot> batches;
        final List<VectorSchemaRoot> received = new CopyOnWriteArrayList<>();

        Producer(BufferAllocator memory, List<VectorSchemaRoot> batches) {
            this.memory = memory;
            this.batches = batches;
        }

        @Override
        public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            DeviceFlight.serveRoots(listener, SCHEMA, batches.iterator(), memory);
        }

        @Override
        public Runnable acceptPut(CallContext context, FlightStream flightStream, StreamListener<PutResult> ackStream) {
            return () -> {
                if (!flightStream.getSchema().equals(SCHEMA)) {
                    ackStream.onError(CallStatus.INVALID_ARGUMENT.withDescription("schema").toRuntimeException());
                    return;
                }
                DeviceFlight.receiveRoots(flightStream, memory, received::add);
                ackStream.onCompleted();
            };
        }
    }
}
