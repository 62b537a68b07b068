package org.devicebridge.arrow.flight;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.Criteria;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.CudaEvent;

/**
 * A ready {@code FlightProducer} for the simple case: named datasets of device batches, served on
 * {@code DoGet} ({@link DeviceFlight#serve}) and received on {@code DoPut} ({@link DeviceFlight#receive})
 * into device memory on the {@link DeviceCopies}' device and stream. A dataset's name is its descriptor's
 * single path element (or its command as UTF-8) and its ticket's bytes (UTF-8); {@code GetFlightInfo} and
 * {@code ListFlights} describe the datasets (one endpoint each, on this server). Services with their own
 * naming, authorisation or storage write their own producer with {@link DeviceFlight}.
 *
 * <p>Ownership: this producer owns the batches of its datasets: given with {@link #add}, received by a
 * {@code DoPut}, released by {@link #take}, replaced, or {@link #close()} (each closed once no {@code DoGet}
 * reads it any more). The caller keeps owning every part of the copies, and closes the server before this
 * producer and this producer before them. Thread-safe: concurrent {@code DoGet}s of a dataset share its
 * batches (read-only); concurrent calls share the copies' stream and transfer, which serialises them.
 */
public final class DeviceFlightProducer extends NoOpFlightProducer implements AutoCloseable {
    private final DeviceCopies copies;
    private final Map<String, Dataset> datasets = new ConcurrentHashMap<>();

    /**
     * A producer with no dataset.
     *
     * @param copies the device, stream and host memory of every copy; borrowed (keep it open while the
     *     producer serves)
     */
    public DeviceFlightProducer(DeviceCopies copies) {
        this.copies = Objects.requireNonNull(copies, "copies");
    }

    /**
     * Adds (or replaces) the dataset {@code name}: {@code batches}, ready for work on the copies' stream
     * (made on it, or the stream made to wait for them). An event is recorded on the copies' stream for each
     * batch, which {@link #take} hands back with it.
     *
     * <p>Ownership: after a return this producer owns the batches (a replaced dataset is closed once no
     * {@code DoGet} reads it). After a throw the caller still owns them.
     *
     * @param name the dataset's name
     * @param schema the batches' schema (no dictionary-encoded field)
     * @param batches device batches of the copies' device
     * @throws UnsupportedFeatureException if {@code schema} has a dictionary-encoded field
     * @throws InvalidArgumentException if a batch is of another device
     */
    public void add(String name, Schema schema, List<? extends CudaArrowBatch> batches) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(schema, "schema");
        StreamRoots.requireNoDictionaries(schema);
        for (CudaArrowBatch b : List.copyOf(batches)) {
            if (b.device() != copies.device()) {
                throw new InvalidArgumentException("batches", "expected batches of device " + copies.device()
                        + " but found one of device " + b.device());
            }
        }
        List<DeviceFlightBatch> owned = new ArrayList<>(batches.size());
        try {
            for (CudaArrowBatch b : batches) {
                CudaEvent ready = CudaEvent.acquire(copies.device());
                ready.record(copies.stream());
                owned.add(new DeviceFlightBatch(b, ready));
            }
        } catch (RuntimeException | Error e) {
            owned.forEach(o -> o.ready().close());
            throw e;
        }
        install(name, schema, owned);
    }

    /**
     * Removes the dataset {@code name} and hands its batches to the caller, waiting for the {@code DoGet}s
     * still reading it.
     *
     * @param name the dataset's name
     * @return the batches with their events, which the caller owns; empty if there is no such dataset
     * @throws org.apache.arrow.flight.FlightRuntimeException ({@code CANCELLED}) if interrupted while waiting;
     *         the dataset is then closed by its last reader
     */
    public List<DeviceFlightBatch> take(String name) {
        Dataset d = datasets.remove(Objects.requireNonNull(name, "name"));
        return d == null ? List.of() : d.take();
    }

    /**
     * The names of the datasets now held.
     *
     * @return a sorted snapshot
     */
    public Set<String> names() {
        return new TreeSet<>(datasets.keySet());
    }

    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
        String name = new String(ticket.getBytes(), StandardCharsets.UTF_8);
        Dataset d = acquire(name);
        if (d == null) {
            listener.error(CallStatus.NOT_FOUND.withDescription("no dataset " + name).toRuntimeException());
            return;
        }
        try {
            Iterator<CudaArrowBatch> batches = d.batches.stream().map(DeviceFlightBatch::batch).iterator();
            DeviceFlight.serve(listener, d.schema, batches, copies);
        } catch (RuntimeException e) {
            // serve has told the client already
        } finally {
            d.release();
        }
    }

    @Override
    public Runnable acceptPut(CallContext context, FlightStream flightStream, StreamListener<PutResult> ackStream) {
        return () -> {
            List<DeviceFlightBatch> received = new ArrayList<>();
            try {
                String name = nameOf(flightStream.getDescriptor());
                StreamRoots.requireNoDictionaries(flightStream.getSchema());
                DeviceFlight.receive(flightStream, copies, received::add);
                install(name, flightStream.getSchema(), received);
            } catch (RuntimeException e) {
                received.forEach(DeviceFlightBatch::close);
                ackStream.onError(CallStatus.INTERNAL.withDescription(String.valueOf(e.getMessage())).withCause(e)
                        .toRuntimeException());
                return;
            }
            ackStream.onCompleted();
        };
    }

    @Override
    public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
        String name = nameOf(descriptor);
        Dataset d = acquire(name);
        if (d == null) {
            throw CallStatus.NOT_FOUND.withDescription("no dataset " + name).toRuntimeException();
        }
        try {
            return d.info(name, descriptor);
        } finally {
            d.release();
        }
    }

    @Override
    public void listFlights(CallContext context, Criteria criteria, StreamListener<FlightInfo> listener) {
        for (String name : names()) {
            Dataset d = acquire(name);
            if (d != null) {
                try {
                    listener.onNext(d.info(name, FlightDescriptor.path(name)));
                } finally {
                    d.release();
                }
            }
        }
        listener.onCompleted();
    }

    /**
     * Closes every dataset (each once no {@code DoGet} reads it any more). Idempotent; datasets added
     * afterwards are held until taken or until the next close.
     */
    @Override
    public void close() {
        for (String name : List.copyOf(datasets.keySet())) {
            Dataset d = datasets.remove(name);
            if (d != null) {
                d.release();
            }
        }
    }

    private void install(String name, Schema schema, List<DeviceFlightBatch> batches) {
        Dataset old = datasets.put(name, new Dataset(schema, batches));
        if (old != null) {
            old.release();
        }
    }

    private Dataset acquire(String name) {
        Dataset d = datasets.get(name);
        return d != null && d.acquire() ? d : null;
    }

    private static String nameOf(FlightDescriptor descriptor) {
        if (descriptor.isCommand()) {
            return new String(descriptor.getCommand(), StandardCharsets.UTF_8);
        }
        List<String> path = descriptor.getPath();
        if (path.size() != 1) {
            throw CallStatus.INVALID_ARGUMENT.withDescription("expected a descriptor path of one element but found "
                    + path).toRuntimeException();
        }
        return path.get(0);
    }

    /**
     * One dataset and its users: the producer's map holds one use, each reading call one more; the batches
     * are closed (or handed over by {@link #take}) when the last use ends.
     */
    private static final class Dataset {
        private final Schema schema;
        private final List<DeviceFlightBatch> batches;
        private int uses = 1;
        private boolean handedOver;

        Dataset(Schema schema, List<DeviceFlightBatch> batches) {
            this.schema = schema;
            this.batches = List.copyOf(batches);
        }

        synchronized boolean acquire() {
            if (uses == 0) {
                return false;
            }
            uses++;
            return true;
        }

        void release() {
            boolean last;
            synchronized (this) {
                last = --uses == 0 && !handedOver;
                notifyAll();
            }
            if (last) {
                batches.forEach(DeviceFlightBatch::close);
            }
        }

        /** Ends the map's use and waits for the readers; the batches are then the caller's. */
        List<DeviceFlightBatch> take() {
            synchronized (this) {
                uses--;
                boolean interrupted = false;
                while (uses > 0) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                        break;
                    }
                }
                if (interrupted) {
                    uses++;
                    Thread.currentThread().interrupt();
                } else {
                    handedOver = true;
                    return batches;
                }
            }
            release();
            throw CallStatus.CANCELLED.withDescription("interrupted while waiting for readers").toRuntimeException();
        }

        FlightInfo info(String name, FlightDescriptor descriptor) {
            long rows = 0;
            for (DeviceFlightBatch b : batches) {
                rows += b.batch().length();
            }
            Ticket ticket = new Ticket(name.getBytes(StandardCharsets.UTF_8));
            return new FlightInfo(schema, descriptor, List.of(new FlightEndpoint(ticket)), -1, rows);
        }
    }
}
