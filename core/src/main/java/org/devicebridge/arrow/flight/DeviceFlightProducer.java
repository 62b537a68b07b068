package org.devicebridge.arrow.flight;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.Criteria;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.NoOpFlightProducer;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.cuda.CudaEvent;

/**
 * A ready {@code FlightProducer} for the simple case: named datasets of device batches, served on
 * {@code DoGet} ({@link DeviceFlight#serve}) and received on {@code DoPut} ({@link DeviceFlight#receive})
 * into device memory on the {@link DeviceCopies}' device and stream. A dataset's name is its descriptor's
 * single path element (or its command as UTF-8) and its ticket's bytes (UTF-8); {@code GetFlightInfo} and
 * {@code ListFlights} describe the datasets (one endpoint each, on this server). Services with their own
 * naming or storage write their own producer with {@link DeviceFlight}.
 *
 * <p>Puts are input from other processes and are admitted under {@link PutOptions}: bytes per batch, per
 * put and in total, batches per put, the validation level, and a policy deciding from the
 * caller's authenticated identity who may create or replace which dataset. Each batch is checked before it
 * is uploaded; a put over a limit, refused by the policy or failing validation is cancelled with a Flight
 * status naming the cause ({@code RESOURCE_EXHAUSTED}, {@code UNAUTHORIZED} (gRPC's
 * {@code PERMISSION_DENIED}), {@code INVALID_ARGUMENT}), everything it sent is freed, and the datasets are
 * as they were: a put replaces a dataset only once all of it has arrived.
 *
 * <p>Ownership: this producer owns the batches of its datasets: given with {@link #add}, received by a
 * {@code DoPut}, released by {@link #take}, replaced, or {@link #close()} (each closed once no {@code DoGet}
 * reads it any more). The caller keeps owning every part of the copies, and closes the server before this
 * producer and this producer before them. Thread-safe: concurrent {@code DoGet}s of a dataset share its
 * batches (read-only); concurrent calls share the copies' stream and transfer, which serialises them.
 *
 * <p>Needs {@code flight-core} to load at all: this class extends Flight's {@code NoOpFlightProducer}, so
 * without Flight on the class or module path the JVM throws {@code NoClassDefFoundError} where it is first
 * named, before any check of this library can run (the other classes of this package throw
 * {@link org.devicebridge.ArrowJavaUnavailableException} instead). A server that hands this
 * producer to a {@code FlightServer} has Flight anyway.
 */
public final class DeviceFlightProducer extends NoOpFlightProducer implements AutoCloseable {
    private final DeviceCopies copies;
    private final PutAdmission admission;
    private final Datasets<DeviceFlightBatch> datasets = new Datasets<>(DeviceFlightBatch::close);

    /**
     * A producer with no dataset that admits puts under {@link PutOptions#defaults()}.
     *
     * @param copies the device, stream and host memory of every copy; borrowed (keep it open while the
     *     producer serves)
     */
    public DeviceFlightProducer(DeviceCopies copies) {
        this(copies, PutOptions.defaults());
    }

    /**
     * A producer with no dataset that admits puts under {@code options}.
     *
     * @param copies the device, stream and host memory of every copy; borrowed (keep it open while the
     *     producer serves)
     * @param options the limits, validation level and policy of {@code DoPut}
     */
    public DeviceFlightProducer(DeviceCopies copies, PutOptions options) {
        this.copies = Objects.requireNonNull(copies, "copies").requireComplete();
        this.admission = new PutAdmission(options);
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
            if (b.device().ordinal() != copies.device().ordinal()) {
                throw new InvalidArgumentException("batches", "expected batches of device " + copies.device().ordinal()
                        + " but found one of device " + b.device().ordinal());
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
        datasets.put(name, schema, owned);
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
        return datasets.take(name);
    }

    /**
     * The names of the datasets now held.
     *
     * @return a sorted snapshot
     */
    public Set<String> names() {
        return datasets.names();
    }

    @Override
    public void getStream(CallContext context, Ticket ticket, ServerStreamListener listener) {
        String name = new String(ticket.getBytes(), StandardCharsets.UTF_8);
        Datasets.Dataset<DeviceFlightBatch> d = datasets.acquire(name);
        if (d == null) {
            listener.error(CallStatus.NOT_FOUND.withDescription("no dataset " + name).toRuntimeException());
            return;
        }
        try {
            Iterator<CudaArrowBatch> batches = d.batches().stream().map(DeviceFlightBatch::batch).iterator();
            DeviceFlight.serve(listener, d.schema(), batches, copies);
        } catch (RuntimeException e) {
            // serve has told the client already
        } finally {
            d.release();
        }
    }

    /**
     * Receives a put into device memory as {@link DeviceFlight#receive} does, under this producer's
     * {@link PutOptions}: each batch is counted, sized from its received buffers, reserved in the total and
     * (at FULL) validated before it is uploaded. The dataset is installed once the whole put arrived and the
     * policy allows it. Any failure (a limit, the policy, validation, the upload, the client's cancellation,
     * an {@code Error}) ends the put with a Flight status after its uploads finished, its device batches were
     * closed and its reservation given back; the datasets are then as they were.
     */
    @Override
    public Runnable acceptPut(CallContext context, FlightStream flightStream, StreamListener<PutResult> ackStream) {
        return () -> admission.accept(context, flightStream, ackStream, datasets, this::uploads);
    }

    @Override
    public FlightInfo getFlightInfo(CallContext context, FlightDescriptor descriptor) {
        String name = PutAdmission.nameOf(descriptor);
        Datasets.Dataset<DeviceFlightBatch> d = datasets.acquire(name);
        if (d == null) {
            throw CallStatus.NOT_FOUND.withDescription("no dataset " + name).toRuntimeException();
        }
        try {
            return info(d, name, descriptor);
        } finally {
            d.release();
        }
    }

    @Override
    public void listFlights(CallContext context, Criteria criteria, StreamListener<FlightInfo> listener) {
        for (String name : names()) {
            Datasets.Dataset<DeviceFlightBatch> d = datasets.acquire(name);
            if (d != null) {
                try {
                    listener.onNext(info(d, name, FlightDescriptor.path(name)));
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
        datasets.close();
    }

    /** A put's landing: the uploads of one received stream on the copies' device and stream. */
    private PutAdmission.Landing<DeviceFlightBatch> uploads() {
        Uploads uploads = new Uploads(copies);
        return new PutAdmission.Landing<>() {
            @Override
            public DeviceFlightBatch land(VectorSchemaRoot root, DictionaryProvider dictionaries) {
                return uploads.upload(root, dictionaries);
            }

            @Override
            public void close() {
                uploads.close();
            }
        };
    }

    private static FlightInfo info(Datasets.Dataset<DeviceFlightBatch> d, String name, FlightDescriptor descriptor) {
        long rows = 0;
        for (DeviceFlightBatch b : d.batches()) {
            rows += b.batch().length();
        }
        Ticket ticket = new Ticket(name.getBytes(StandardCharsets.UTF_8));
        return new FlightInfo(d.schema(), descriptor, List.of(new FlightEndpoint(ticket)), -1, rows);
    }
}
