package org.devicebridge.arrow.flight;

import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.SCHEMA;
import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.assertBatch;
import static org.devicebridge.arrow.flight.DeviceFlightLoopbackTest.batch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightServer;
import org.apache.arrow.flight.FlightStatusCode;
import org.apache.arrow.flight.Location;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.cuda.PinnedArrowMemory;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link DeviceFlightProducer}'s put limits on the real device path: a put whose second batch crosses
 * {@code maxStreamBytes} is cancelled with {@code RESOURCE_EXHAUSTED} after its first batch was uploaded, and
 * that batch's device memory is freed (the driver's count back to its baseline), no dataset is installed, and
 * a put within the limit then lands with its values.
 */
@RequiresCuda
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeviceFlightPutGpuTest {
    private static final Device DEVICE = Device.cuda(0);

    @Test
    void aPutOverMaxStreamBytesFreesTheDeviceBatchesItHadUploaded() throws Exception {
        long deviceBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        try (PinnedArrowMemory pinned = PinnedArrowMemory.create();
             BufferAllocator serverMemory = pinned.newRootAllocator();
             BufferAllocator clientMemory = ArrowMemory.newRootAllocator();
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 1 << 20)) {
            // a batch of 4000 rows has about 70 KiB of buffers: the first fits, the second crosses the limit
            PutOptions options = PutOptions.defaults().withMaxStreamBytes(100 * 1024);
            try (DeviceFlightProducer producer = new DeviceFlightProducer(new DeviceCopies(serverMemory, transfer, stream),
                    options)) {
                FlightServer server = FlightServer.builder(serverMemory, Location.forGrpcInsecure("127.0.0.1", 0),
                        producer).build().start();
                try (FlightClient client = FlightClient.builder(clientMemory,
                        Location.forGrpcInsecure("127.0.0.1", server.getPort())).build()) {
                    FlightRuntimeException e = assertThrows(FlightRuntimeException.class,
                            () -> put(client, clientMemory, "big", 4000, 4000, 4000));
                    assertEquals(FlightStatusCode.RESOURCE_EXHAUSTED, e.status().code(), e.getMessage());
                    assertTrue(e.status().description().contains("maxStreamBytes"), e.getMessage());
                    assertEquals(Set.of(), producer.names());
                    stream.synchronize();
                    assertEquals(deviceBefore, CudaCounters.snapshot().deviceBytesOutstanding(),
                            "the uploaded batch of the refused put was freed");

                    put(client, clientMemory, "small", 10, 20);
                    List<DeviceFlightBatch> got = producer.take("small");
                    try {
                        assertEquals(2, got.size());
                        int first = 0;
                        for (int i = 0; i < got.size(); i++) {
                            stream.waitEvent(got.get(i).ready());
                            try (VectorSchemaRoot back = CudaArrow.download(got.get(i).batch(),
                                    new DeviceCopies(clientMemory, transfer, stream))) {
                                assertBatch(back, first, i == 0 ? 10 : 20);
                            }
                            first += 10;
                        }
                    } finally {
                        got.forEach(DeviceFlightBatch::close);
                    }
                } finally {
                    server.shutdown();
                    assertTrue(server.awaitTermination(10, TimeUnit.SECONDS));
                    server.close();
                }
            }
            stream.synchronize();
            assertEquals(0, serverMemory.getAllocatedMemory(), "server memory released");
            assertEquals(0, clientMemory.getAllocatedMemory(), "client memory released");
        }
        assertEquals(deviceBefore, CudaCounters.snapshot().deviceBytesOutstanding(), "device memory freed");
    }

    private static void put(FlightClient client, BufferAllocator memory, String name, int... rows) {
        List<VectorSchemaRoot> sent = new ArrayList<>();
        int first = 0;
        for (int r : rows) {
            sent.add(batch(memory, first, r));
            first += r;
        }
        try {
            DeviceFlightClient.of(client).putRoots(FlightDescriptor.path(name), SCHEMA, sent.iterator(), memory);
        } finally {
            sent.forEach(VectorSchemaRoot::close);
        }
    }
}
