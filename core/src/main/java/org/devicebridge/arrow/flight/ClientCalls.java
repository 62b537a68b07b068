package org.devicebridge.arrow.flight;

import java.util.Iterator;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightClient.ClientStreamListener;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.SyncPutListener;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;

/**
 * The bodies of {@link DeviceFlightClient}'s calls, on the client it wraps. Every method here links against
 * Arrow Flight, so this class is loaded only after {@code DeviceFlightClient.of} checked that Flight loads.
 */
final class ClientCalls {
    private ClientCalls() {}

    static long fetch(FlightClient client, Ticket ticket, DeviceCopies copies,
                      Consumer<? super DeviceFlightBatch> sink, CallOption... options) {
        Objects.requireNonNull(ticket, "ticket");
        Objects.requireNonNull(copies, "copies").requireComplete();
        Objects.requireNonNull(sink, "sink");
        return read(client, ticket, options, in -> FlightCalls.receive(in, copies, sink));
    }

    static long fetchRoots(FlightClient client, Ticket ticket, BufferAllocator allocator,
                           Consumer<? super VectorSchemaRoot> sink, CallOption... options) {
        Objects.requireNonNull(ticket, "ticket");
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(sink, "sink");
        return read(client, ticket, options, in -> FlightCalls.receiveRoots(in, allocator, sink));
    }

    static long put(FlightClient client, FlightDescriptor descriptor, Schema schema,
                    Iterator<? extends CudaArrowBatch> batches, DeviceCopies copies, CallOption... options) {
        Objects.requireNonNull(copies, "copies").requireComplete();
        return write(client, descriptor, schema, copies.allocator(), batches, FlightCalls.download(copies), true,
                options);
    }

    static long putRoots(FlightClient client, FlightDescriptor descriptor, Schema schema,
                         Iterator<? extends VectorSchemaRoot> roots, BufferAllocator allocator, CallOption... options) {
        return write(client, descriptor, schema, allocator, roots, Function.identity(), false, options);
    }

    /** One {@code DoGet}: the stream is closed (what is left of it cancelled) whatever {@code body} does. */
    private static long read(FlightClient client, Ticket ticket, CallOption[] options,
                             java.util.function.ToLongFunction<FlightStream> body) {
        FlightStream in = client.getStream(ticket, options);
        Throwable failure = null;
        try {
            return body.applyAsLong(in);
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            closeStream(in, failure);
        }
    }

    private static <T> long write(FlightClient client, FlightDescriptor descriptor, Schema schema,
                                  BufferAllocator allocator, Iterator<? extends T> items,
                                  Function<? super T, VectorSchemaRoot> toHost, boolean ownsHost,
                                  CallOption... options) {
        Objects.requireNonNull(descriptor, "descriptor");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(items, "batches");
        StreamRoots.requireNoDictionaries(schema);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
             SyncPutListener answers = new SyncPutListener()) {
            ClientStreamListener out = client.startPut(descriptor, root, answers, options);
            long sent;
            try {
                sent = FlightCalls.send(out, root, items, toHost, ownsHost);
            } catch (RuntimeException | Error e) {
                FlightCalls.reportTo(out, e);
                throw e;
            }
            out.completed();
            out.getResult();
            return sent;
        }
    }

    /** Closes a {@code DoGet} stream; a failure of the close is added to {@code failure}, or thrown if none. */
    private static void closeStream(FlightStream in, Throwable failure) {
        try {
            in.close();
        } catch (Exception e) {
            if (failure != null) {
                failure.addSuppressed(e);
            } else if (e instanceof RuntimeException r) {
                throw r;
            } else {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                throw CallStatus.INTERNAL.withDescription("closing the stream failed: " + e).withCause(e)
                        .toRuntimeException();
            }
        }
    }
}
