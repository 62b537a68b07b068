package org.devicebridge.arrow.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.AsyncPoison;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Flight's receive (through {@link DeviceFlightClient#fetch}) and {@link DeviceFlightProducer}'s put upload
 * each batch without a host wait: batches in pinned Arrow memory whose export writes views of its own (the
 * sender's views carry non-zero padding), the receiving stream blocked behind memsets, and every block the
 * pinned pool can lend poisoned with 0xEE while that stream is provably still busy (more memsets and another
 * round otherwise, a failure after the last); after a synchronisation the device batches must hold the
 * sender's values. Over a 127.0.0.1 loopback.
 */
@RequiresCuda
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DeviceFlightAsyncGpuTest {
    private static final int DEVICE = 0;
    private static final int ROWS = 4096;
    private static final int BATCHES = 3;
    private static final Schema VIEWS = new Schema(List.of(Field.nullable("s", ArrowType.Utf8View.INSTANCE)));

    private PinnedArrowMemory pinned;
    private BufferAllocator serverMemory;
    private BufferAllocator clientMemory;
    private BufferAllocator plainMemory;
    private CudaStream serverStream;
    private CudaStream clientStream;
    private HostDeviceTransfer serverTransfer;
    private HostDeviceTransfer clientTransfer;
    private AsyncPoison poison;
    private DeviceFlightProducer devices;
    private FlightServer server;
    private ExecutorService putter;
    private long deviceBytesBefore;

    @BeforeEach
    void start() throws Exception {
        deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        pinned = PinnedArrowMemory.create(1); // a freed block is lent again at once
        serverMemory = pinned.newRootAllocator();
        clientMemory = pinned.newRootAllocator();
        plainMemory = ArrowMemory.newRootAllocator();
        serverStream = CudaStream.create(Device.cuda(DEVICE));
        clientStream = CudaStream.create(Device.cuda(DEVICE));
        serverTransfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
        clientTransfer = HostDeviceTransfer.create(Device.cuda(DEVICE), 1 << 20);
        poison = new AsyncPoison(DEVICE);
        devices = new DeviceFlightProducer(new DeviceCopies(serverMemory, serverTransfer, serverStream));
        server = FlightServer.builder(serverMemory, Location.forGrpcInsecure("127.0.0.1", 0), new Producer())
                .build().start();
        putter = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void stop() throws Exception {
        putter.shutdownNow();
        server.shutdown();
        assertTrue(server.awaitTermination(10, TimeUnit.SECONDS));
        server.close();
        devices.close();
        serverStream.synchronize();
        clientStream.synchronize();
        poison.close();
        serverTransfer.close();
        clientTransfer.close();
        serverStream.close();
        clientStream.close();
        assertEquals(0, serverMemory.getAllocatedMemory(), "server memory released");
        assertEquals(0, clientMemory.getAllocatedMemory(), "client memory released");
        assertEquals(0, plainMemory.getAllocatedMemory(), "plain memory released");
        serverMemory.close();
        clientMemory.close();
        plainMemory.close();
        pinned.close();
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
    }

    /** DoGet serves {@link #BATCHES} padded view roots from host memory; DoPut goes to {@link #devices}. */
    private final class Producer extends NoOpFlightProducer {
        @Override
        public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
            List<VectorSchemaRoot> roots = new ArrayList<>();
            try {
                for (int b = 0; b < BATCHES; b++) {
                    roots.add(AsyncPoison.viewRoot(serverMemory, AsyncPoison.values(ROWS, b * ROWS)));
                }
                DeviceFlight.serveRoots(listener, VIEWS, roots.iterator(), serverMemory);
            } finally {
                roots.forEach(VectorSchemaRoot::close);
            }
        }

        @Override
        public Runnable acceptPut(CallContext context, FlightStream flightStream,
                                  FlightProducer.StreamListener<PutResult> ackStream) {
            return devices.acceptPut(context, flightStream, ackStream);
        }
    }

    private FlightClient client() {
        return FlightClient.builder(clientMemory, Location.forGrpcInsecure("127.0.0.1", server.getPort())).build();
    }

    /** The batches' values, downloaded on {@code s} after it was synchronized, compared with the sender's. */
    private void assertValues(List<DeviceFlightBatch> got, CudaStream s, HostDeviceTransfer transfer) {
        for (int b = 0; b < got.size(); b++) {
            try (VectorSchemaRoot down = CudaArrow.download(got.get(b).batch(), new DeviceCopies(plainMemory, transfer, s))) {
                assertEquals(AsyncPoison.values(ROWS, b * ROWS), AsyncPoison.strings(down),
                        "batch " + b + " holds the sender's views, not the pool's next borrower's");
            }
        }
    }

    @Test
    void fetchKeepsEachBatchsExportUntilItsCopiesRan() throws Exception {
        AsyncPoison.untilPoisonedWhileBusy(memsets -> {
            List<DeviceFlightBatch> got = new ArrayList<>();
            boolean[] busy = {true};
            try (FlightClient client = client()) {
                poison.block(clientStream, memsets);
                long n = DeviceFlightClient.of(client).fetch(new Ticket("views".getBytes(StandardCharsets.UTF_8)),
                        new DeviceCopies(clientMemory, clientTransfer, clientStream), b -> {
                            got.add(b); // the upload of b was queued behind the memsets and has returned
                            busy[0] &= AsyncPoison.poisonedWhileBusy(pinned.pool(), clientStream);
                            poison.block(clientStream, memsets); // the next batch's copies wait behind these
                        });
                assertEquals(BATCHES, n);
                clientStream.synchronize();
                if (busy[0]) {
                    assertValues(got, clientStream, clientTransfer);
                }
                return busy[0];
            } finally {
                got.forEach(DeviceFlightBatch::close);
            }
        });
    }

    @Test
    void putKeepsTheExportUntilTheServersCopiesRan() throws Exception {
        // a first put, unblocked, warms the connection and both JITs: the measured ones then reach the server's
        // upload while the memsets queued before them still run
        try (FlightClient client = client();
             VectorSchemaRoot root = AsyncPoison.viewRoot(clientMemory, AsyncPoison.values(ROWS, 0))) {
            assertEquals(1, DeviceFlightClient.of(client).putRoots(FlightDescriptor.path("warm-up"), VIEWS,
                    List.of(root).iterator(), clientMemory));
        }
        devices.take("warm-up").forEach(DeviceFlightBatch::close);
        int[] round = {0};
        AsyncPoison.untilPoisonedWhileBusy(memsets -> {
            String name = "put" + round[0]++;
            CountDownLatch sendTheEnd = new CountDownLatch(1);
            boolean busy = true;
            try (FlightClient client = client();
                 VectorSchemaRoot root = AsyncPoison.viewRoot(clientMemory, AsyncPoison.values(ROWS, 0))) {
                poison.block(serverStream, memsets);
                long uploadsBefore = CudaCounters.snapshot().memAllocAsyncCalls();
                Future<Long> put = putter.submit(() -> DeviceFlightClient.of(client).putRoots(
                        FlightDescriptor.path(name), VIEWS, oneThenWait(root, sendTheEnd), clientMemory));
                try {
                    // the server's upload allocated the batch's device memory: its copies are being queued
                    while (CudaCounters.snapshot().memAllocAsyncCalls() == uploadsBefore) {
                        if (put.isDone()) {
                            put.get(); // its failure
                            fail("the put ended before the server uploaded: " + name);
                        }
                        Thread.onSpinWait();
                    }
                    for (int pass = 0; pass < 3; pass++) { // the later passes follow the server's return for sure
                        busy &= AsyncPoison.poisonedWhileBusy(pinned.pool(), serverStream);
                    }
                } finally {
                    sendTheEnd.countDown();
                }
                assertEquals(1, put.get(60, TimeUnit.SECONDS));
            }
            List<DeviceFlightBatch> got = devices.take(name);
            try {
                serverStream.synchronize();
                if (busy) {
                    assertValues(got, serverStream, serverTransfer);
                }
                return busy;
            } finally {
                got.forEach(DeviceFlightBatch::close);
            }
        });
    }

    /** Yields {@code root}, then waits for {@code end} before saying there is no more (the put stays open). */
    private static Iterator<VectorSchemaRoot> oneThenWait(VectorSchemaRoot root, CountDownLatch end) {
        return new Iterator<>() {
            private boolean given;

            @Override
            public boolean hasNext() {
                if (!given) {
                    return true;
                }
                try {
                    end.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }

            @Override
            public VectorSchemaRoot next() {
                if (given) {
                    throw new NoSuchElementException();
                }
                given = true;
                return root;
            }
        };
    }
}
