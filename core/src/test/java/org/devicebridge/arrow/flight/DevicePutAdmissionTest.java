package org.devicebridge.arrow.flight;

import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.SCHEMA;
import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.assertBatch;
import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.flight.CallHeaders;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.HeaderCallOption;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.auth2.CallHeaderAuthenticator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.arrow.ValidationLevel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link DeviceFlightProducer}'s put admission ({@link PutAdmission} over a {@link Datasets} store) on a real
 * Flight server and client on 127.0.0.1, with the producer's device upload replaced by a host landing: each
 * limit cancels the put with a status naming it and frees what the put had landed and reserved, the policy
 * allows or refuses creates and replaces with the caller's authenticated identity, FULL validation refuses
 * what DEFAULT lets through, an {@code Error} is reported and cleaned up as well, and the datasets are
 * unchanged after every refusal. Every allocator back to zero after each test.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DevicePutAdmissionTest {
    private static final String USER = "x-devicebridge-user";

    private BufferAllocator serverMemory;
    private BufferAllocator clientMemory;
    private HostProducer producer;
    private FlightServer server;
    private FlightClient client;

    @BeforeEach
    void memory() {
        serverMemory = new RootAllocator();
        clientMemory = new RootAllocator();
    }

    /** Starts the server with {@code options}; the caller's identity is the value of the {@link #USER} header. */
    private void start(PutOptions options) throws Exception {
        producer = new HostProducer(serverMemory, options);
        CallHeaderAuthenticator byHeader = headers -> {
            String user = headers.get(USER);
            String identity = user == null ? "" : user;
            return () -> identity;
        };
        server = FlightServer.builder(serverMemory, Location.forGrpcInsecure("127.0.0.1", 0), producer)
                .headerAuthenticator(byHeader).build().start();
        client = FlightClient.builder(clientMemory, Location.forGrpcInsecure("127.0.0.1", server.getPort())).build();
    }

    @AfterEach
    void stop() throws Exception {
        if (client != null) {
            client.close();
            server.shutdown();
            assertTrue(server.awaitTermination(10, TimeUnit.SECONDS), "server stopped");
            server.close();
            producer.store.close();
            assertEquals(0, producer.store.bytesHeld(), "every reservation given back");
            assertEquals(producer.landed.get(), producer.closed.get(), "every landed batch closed");
        }
        // a refused put's messages still in flight are freed by gRPC's threads as the call winds down, which
        // may end after the server's termination: wait for them (bounded), then require every byte back
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (serverMemory.getAllocatedMemory() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, serverMemory.getAllocatedMemory(), "server memory released");
        assertEquals(0, clientMemory.getAllocatedMemory(), "client memory released");
        serverMemory.close();
        clientMemory.close();
    }

    /** Puts batches of {@code rows[i]} rows each (values from 0 on) as {@code name}, as {@code user} if not null. */
    private void put(String name, String user, int... rows) {
        List<VectorSchemaRoot> sent = new ArrayList<>();
        int first = 0;
        for (int r : rows) {
            sent.add(batch(clientMemory, first, r));
            first += r;
        }
        CallHeaders headers = new FlightCallHeaders();
        if (user != null) {
            headers.insert(USER, user);
        }
        try {
            DeviceFlightClient.of(client).putRoots(FlightDescriptor.path(name), SCHEMA, sent.iterator(), clientMemory,
                    new HeaderCallOption(headers));
        } finally {
            sent.forEach(VectorSchemaRoot::close);
        }
    }

    private void put(String name, int... rows) {
        put(name, null, rows);
    }

    /** The put's failure, which must carry {@code code} and every one of {@code words} in its message. */
    private static FlightRuntimeException refusal(FlightStatusCode code, Runnable put, String... words) {
        FlightRuntimeException e = assertThrows(FlightRuntimeException.class, put::run);
        assertEquals(code, e.status().code(), e.getMessage());
        for (String w : words) {
            assertTrue(e.status().description().contains(w), "'" + w + "' in: " + e.status().description());
        }
        return e;
    }

    /** Checks that the store holds {@code name} as put with {@code rows}, and nothing else is reserved. */
    private void assertHeld(String name, int... rows) {
        Datasets.Dataset<VectorSchemaRoot> d = producer.store.acquire(name);
        assertTrue(d != null, "dataset " + name + " held");
        try {
            assertEquals(rows.length, d.batches().size());
            int first = 0;
            for (int i = 0; i < rows.length; i++) {
                assertBatch(d.batches().get(i), first, rows[i]);
                first += rows[i];
            }
        } finally {
            d.release();
        }
    }

    /** The bytes the admission counts for the landed batches of every dataset held. */
    private long bytesOfDatasets() {
        long total = 0;
        for (String name : producer.store.names()) {
            Datasets.Dataset<VectorSchemaRoot> d = producer.store.acquire(name);
            try {
                for (VectorSchemaRoot r : d.batches()) {
                    total += PutAdmission.bytesOf(r);
                }
            } finally {
                d.release();
            }
        }
        return total;
    }

    @Test
    void aPutWithinTheLimitsIsInstalledAndItsBytesAreCountedUntilTaken() throws Exception {
        start(PutOptions.defaults());
        put("d", 10, 500);
        assertHeld("d", 10, 500);
        assertEquals(bytesOfDatasets(), producer.store.bytesHeld());
        assertTrue(producer.store.bytesHeld() > 0);
        List<VectorSchemaRoot> taken = producer.store.take("d");
        assertEquals(0, producer.store.bytesHeld(), "a taken dataset's bytes are no longer the producer's");
        taken.forEach(VectorSchemaRoot::close);
        producer.closed.addAndGet(taken.size());
    }

    @Test
    void moreBatchesThanMaxBatchesCancelThePutAndFreeWhatItLanded() throws Exception {
        start(PutOptions.defaults().withMaxBatches(2));
        refusal(FlightStatusCode.RESOURCE_EXHAUSTED, () -> put("d", 5, 5, 5), "maxBatches", "limit of 2", "batches[2]");
        assertEquals(2, producer.landed.get(), "the first two batches were landed");
        assertEquals(2, producer.closed.get(), "and closed when the third was refused");
        assertEquals(Set.of(), producer.store.names());
        assertEquals(0, producer.store.bytesHeld());
        put("d", 5, 5);
        assertHeld("d", 5, 5);
    }

    @Test
    void aBatchAboveMaxBatchBytesIsRefusedBeforeItIsLanded() throws Exception {
        start(PutOptions.defaults().withMaxBatchBytes(16 * 1024));
        refusal(FlightStatusCode.RESOURCE_EXHAUSTED, () -> put("d", 10, 10_000), "maxBatchBytes", "batches[1]",
                "limit of 16384");
        assertEquals(1, producer.landed.get(), "the big batch never reached the landing");
        assertEquals(1, producer.closed.get());
        assertEquals(Set.of(), producer.store.names());
        assertEquals(0, producer.store.bytesHeld());
    }

    @Test
    void aPutAboveMaxStreamBytesIsRefusedAtTheBatchThatCrossesIt() throws Exception {
        start(PutOptions.defaults().withMaxBatchBytes(64 * 1024).withMaxStreamBytes(100 * 1024));
        refusal(FlightStatusCode.RESOURCE_EXHAUSTED, () -> put("d", 4000, 4000, 4000, 4000, 4000), "maxStreamBytes",
                "limit of 102400");
        assertTrue(producer.landed.get() >= 1 && producer.landed.get() < 5, "landed " + producer.landed.get());
        assertEquals(producer.landed.get(), producer.closed.get());
        assertEquals(Set.of(), producer.store.names());
        assertEquals(0, producer.store.bytesHeld());
    }

    @Test
    void maxTotalBytesCountsTheDatasetsHeldAndATakeGivesTheRoomBack() throws Exception {
        start(PutOptions.defaults().withMaxTotalBytes(100 * 1024));
        put("a", 4000);
        long held = producer.store.bytesHeld();
        assertTrue(held > 50 * 1024 && held < 100 * 1024, "one put holds " + held + " bytes");
        refusal(FlightStatusCode.RESOURCE_EXHAUSTED, () -> put("b", 4000), "maxTotalBytes", "limit of 102400");
        assertEquals(Set.of("a"), producer.store.names(), "the datasets are unchanged");
        assertHeld("a", 4000);
        assertEquals(held, producer.store.bytesHeld(), "the refused put's reservation was given back");
        List<VectorSchemaRoot> taken = producer.store.take("a");
        taken.forEach(VectorSchemaRoot::close);
        producer.closed.addAndGet(taken.size());
        put("b", 4000);
        assertHeld("b", 4000);
    }

    /** Four puts at once, room for two: the reservation is atomic, so exactly two are installed whatever the order. */
    @Test
    void concurrentPutsNeverHoldMoreThanMaxTotalBytes() throws Exception {
        start(PutOptions.defaults());
        put("probe", 4000);
        long one = producer.store.bytesHeld();
        List<VectorSchemaRoot> probe = producer.store.take("probe");
        probe.forEach(VectorSchemaRoot::close);
        producer.closed.addAndGet(probe.size());
        client.close();
        server.shutdown();
        assertTrue(server.awaitTermination(10, TimeUnit.SECONDS));
        server.close();
        producer.store.close();
        assertEquals(producer.landed.get(), producer.closed.get());

        start(PutOptions.defaults().withMaxTotalBytes(2 * one + one / 2));
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<FlightStatusCode>> results = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String name = "c" + i;
                Callable<FlightStatusCode> call = () -> {
                    try {
                        put(name, 4000);
                        return FlightStatusCode.OK;
                    } catch (FlightRuntimeException e) {
                        return e.status().code();
                    }
                };
                results.add(pool.submit(call));
            }
            List<FlightStatusCode> codes = new ArrayList<>();
            for (Future<FlightStatusCode> f : results) {
                codes.add(f.get(30, TimeUnit.SECONDS));
            }
            assertEquals(2, codes.stream().filter(c -> c == FlightStatusCode.OK).count(), codes.toString());
            assertEquals(2, codes.stream().filter(c -> c == FlightStatusCode.RESOURCE_EXHAUSTED).count(), codes.toString());
        } finally {
            pool.shutdownNow();
        }
        assertEquals(2, producer.store.names().size());
        assertEquals(2 * one, producer.store.bytesHeld());
        assertEquals(bytesOfDatasets(), producer.store.bytesHeld());
    }

    @Test
    void thePolicyGetsTheAuthenticatedIdentityTheNameAndWhetherItExists() throws Exception {
        List<String> asked = new CopyOnWriteArrayList<>();
        start(PutOptions.defaults().withPolicy((peer, name) -> {
            asked.add(peer + "/" + name + "/false");
            return true;
        }, (peer, name) -> {
            asked.add(peer + "/" + name + "/true");
            return true;
        }));
        put("d", "alice", 3);
        put("d", "bob", 4);
        assertEquals(List.of("alice/d/false", "alice/d/false", "bob/d/true", "bob/d/true"), asked,
                "asked before the first batch and again at the install");
        assertHeld("d", 4);
        assertEquals(1, producer.closed.get(), "bob's put replaced alice's, whose batch was closed");
    }

    @Test
    void aPolicyThatRefusesCreatesCancelsThePutBeforeAnyBatchIsLanded() throws Exception {
        start(PutOptions.defaults().withPolicy((peer, name) -> peer.equals("admin"),
                (peer, name) -> peer.equals("admin")));
        refusal(FlightStatusCode.UNAUTHORIZED, () -> put("d", "mallory", 5, 5), "create", "'d'", "'mallory'");
        assertEquals(0, producer.landed.get());
        assertEquals(Set.of(), producer.store.names());
        put("d", "admin", 5);
        assertHeld("d", 5);
    }

    @Test
    void theDefaultPolicyRefusesToReplaceAndTheDatasetIsUnchanged() throws Exception {
        start(PutOptions.defaults());
        put("d", "alice", 7, 8);
        long held = producer.store.bytesHeld();
        refusal(FlightStatusCode.UNAUTHORIZED, () -> put("d", "mallory", 100), "replace", "'d'", "'mallory'");
        assertEquals(Set.of("d"), producer.store.names());
        assertHeld("d", 7, 8);
        assertEquals(held, producer.store.bytesHeld());
        assertEquals(2, producer.landed.get(), "the refused put landed nothing");
    }

    @Test
    void aPolicyThatAllowsReplacingSwapsTheDatasetOnlyAfterTheWholePut() throws Exception {
        start(PutOptions.defaults().withPolicy((peer, name) -> true, (peer, name) -> true).withMaxBatches(2));
        put("d", 7, 8);
        long held = producer.store.bytesHeld();
        // a replacing put that fails half-way leaves the old dataset in place
        refusal(FlightStatusCode.RESOURCE_EXHAUSTED, () -> put("d", 1, 1, 1), "maxBatches");
        assertHeld("d", 7, 8);
        assertEquals(held, producer.store.bytesHeld());
        put("d", 20);
        assertHeld("d", 20);
        assertEquals(bytesOfDatasets(), producer.store.bytesHeld(), "the replaced dataset's bytes were given back");
        assertEquals(producer.landed.get() - 1, producer.closed.get(), "all but the new batch closed");
    }

    /** Invalid UTF-8 in a utf8 column: DEFAULT does not read values, FULL does and names the field's path. */
    @Test
    void fullValidationRefusesWhatDefaultLetsThroughWithThePath() throws Exception {
        start(PutOptions.defaults().withValidation(ValidationLevel.FULL));
        Runnable bad = () -> {
            try (VectorSchemaRoot root = batch(clientMemory, 1, 3)) {
                ((VarCharVector) root.getVector("name")).setSafe(1, new byte[] {(byte) 0xC3, (byte) 0x28});
                DeviceFlightClient.of(client).putRoots(FlightDescriptor.path("d"), SCHEMA, List.of(root).iterator(),
                        clientMemory);
            }
        };
        FlightRuntimeException e = refusal(FlightStatusCode.INVALID_ARGUMENT, bad, "batches[0]", "FULL", "children[1]");
        assertTrue(e.status().description().toLowerCase(java.util.Locale.ROOT).contains("utf-8"), e.getMessage());
        assertEquals(0, producer.landed.get());
        assertEquals(Set.of(), producer.store.names());
        assertEquals(0, producer.store.bytesHeld());
        stop();
        memory();
        start(PutOptions.defaults());
        bad.run();
        assertEquals(Set.of("d"), producer.store.names(), "DEFAULT does not read the values");
    }

    @Test
    void anErrorWhileLandingIsReportedAndEverythingThePutHeldIsFreed() throws Exception {
        start(PutOptions.defaults());
        producer.failAt = 1;
        refusal(FlightStatusCode.INTERNAL, () -> put("d", 5, 5, 5), "landing failed");
        assertEquals(1, producer.landed.get());
        assertEquals(1, producer.closed.get());
        assertEquals(Set.of(), producer.store.names());
        assertEquals(0, producer.store.bytesHeld());
    }

    @Test
    void aDescriptorPathOfTwoElementsIsInvalid() throws Exception {
        start(PutOptions.defaults());
        try (VectorSchemaRoot root = batch(clientMemory, 0, 2)) {
            refusal(FlightStatusCode.INVALID_ARGUMENT, () -> DeviceFlightClient.of(client).putRoots(
                    FlightDescriptor.path("a", "b"), SCHEMA, List.of(root).iterator(), clientMemory), "one element");
        }
        assertEquals(Set.of(), producer.store.names());
    }

    @Test
    void optionsRefuseNonPositiveLimitsAndLevelsBelowDefault() {
        PutOptions d = PutOptions.defaults();
        assertEquals(PutOptions.DEFAULT_MAX_BATCH_BYTES, d.maxBatchBytes());
        assertEquals(ValidationLevel.DEFAULT, d.validation());
        assertTrue(d.mayCreate().test("", "d"), "anyone may create by default");
        assertFalse(d.mayReplace().test("admin", "d"), "nobody may replace by default");
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> d.withMaxTotalBytes(0));
        assertEquals("maxTotalBytes", e.parameter());
        assertEquals("maxBatches", assertThrows(InvalidArgumentException.class, () -> d.withMaxBatches(-1)).parameter());
        assertEquals("validation", assertThrows(InvalidArgumentException.class,
                () -> d.withValidation(ValidationLevel.MINIMAL)).parameter());
        assertThrows(NullPointerException.class, () -> d.withPolicy(null, (peer, name) -> true));
        assertThrows(NullPointerException.class, () -> d.withPolicy((peer, name) -> true, null));
    }

    /** The admission over a host store: each batch lands as a root sharing the buffers Flight received. */
    static final class HostProducer extends NoOpFlightProducer {
        final AtomicInteger landed = new AtomicInteger();
        final AtomicInteger closed = new AtomicInteger();
        final Datasets<VectorSchemaRoot> store = new Datasets<>(r -> {
            closed.incrementAndGet();
            r.close();
        });
        /** The landing throws an {@code Error} for the batch of this index (-1: never). */
        volatile int failAt = -1;
        private final BufferAllocator memory;
        private final PutAdmission admission;

        HostProducer(BufferAllocator memory, PutOptions options) {
            this.memory = memory;
            this.admission = new PutAdmission(options);
        }

        @Override
        public Runnable acceptPut(CallContext context, FlightStream flightStream, StreamListener<PutResult> ackStream) {
            return () -> admission.accept(context, flightStream, ackStream, store, () -> new PutAdmission.Landing<>() {
                private int index;

                @Override
                public VectorSchemaRoot land(VectorSchemaRoot root, DictionaryProvider dictionaries) {
                    if (index++ == failAt) {
                        throw new AssertionError("landing failed on purpose");
                    }
                    VectorSchemaRoot copy = StreamRoots.share(root, memory, "root");
                    landed.incrementAndGet();
                    return copy;
                }

                @Override
                public void close() {}
            });
        }
    }
}
