package org.devicebridge.arrow.flight;

import java.util.Objects;
import java.util.function.Consumer;
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

    /**
     * One {@code DoPut} of {@code outgoing} ({@link Outgoing#devices} or {@link Outgoing#roots}, made by the
     * caller after its own checks): the stream root is closed before this returns or throws.
     */
    static <T> long put(FlightClient client, FlightDescriptor descriptor, Schema schema, Outgoing<T> outgoing,
                        CallOption... options) {
        Objects.requireNonNull(descriptor, "descriptor");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(outgoing.allocator(), "allocator");
        Objects.requireNonNull(outgoing.items(), "batches");
        StreamRoots.requireNoDictionaries(schema);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, outgoing.allocator());
             SyncPutListener answers = new SyncPutListener()) {
            ClientStreamListener out = client.startPut(descriptor, root, answers, options);
            long sent;
            try {
                sent = FlightCalls.send(out, root, outgoing.items(), outgoing.toHost());
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
