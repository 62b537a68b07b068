package org.devicebridge.arrow.flight;

import java.util.Iterator;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.OutboundStreamListener;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;

/**
 * The bodies of {@link DeviceFlight}'s entry points and the loops {@link DeviceFlightClient} and
 * {@link DeviceFlightProducer} share. Every method here links against Arrow Flight, so this class is loaded only
 * after {@code ArrowJavaCheck.requireFlight} passed: {@link DeviceFlight} itself names Flight's types only in
 * its signatures (handed on unchanged, which verifying it does not load), so that without {@code flight-core}
 * its entry points throw the typed exception instead of a {@code NoClassDefFoundError}.
 */
final class FlightCalls {
    private FlightCalls() {}

    static long serve(ServerStreamListener listener, Schema schema, Iterator<? extends CudaArrowBatch> batches,
                      DeviceCopies copies) {
        return serve(listener, schema, Outgoing.devices(batches, copies));
    }

    static long serveRoots(ServerStreamListener listener, Schema schema, Iterator<? extends VectorSchemaRoot> roots,
                           BufferAllocator allocator) {
        return serve(listener, schema, Outgoing.roots(roots, allocator));
    }

    static long send(OutboundStreamListener out, VectorSchemaRoot streamRoot,
                     Iterator<? extends CudaArrowBatch> batches, DeviceCopies copies) {
        Objects.requireNonNull(copies, "copies").requireComplete();
        return send(out, streamRoot, batches, download(copies));
    }

    static long sendRoots(OutboundStreamListener out, VectorSchemaRoot streamRoot,
                          Iterator<? extends VectorSchemaRoot> roots) {
        return send(out, streamRoot, roots, Function.identity());
    }

    static long receive(FlightStream in, DeviceCopies copies, Consumer<? super DeviceFlightBatch> sink) {
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(copies, "copies").requireComplete();
        Objects.requireNonNull(sink, "sink");
        try (Uploads uploads = new Uploads(copies)) {
            long count = 0;
            while (in.next()) {
                DeviceFlightBatch batch = uploads.upload(in.getRoot(), in.getDictionaryProvider());
                count++;
                sink.accept(batch);
            }
            return count;
        }
    }

    static long receiveRoots(FlightStream in, BufferAllocator allocator, Consumer<? super VectorSchemaRoot> sink) {
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(allocator, "allocator");
        Objects.requireNonNull(sink, "sink");
        long count = 0;
        while (in.next()) {
            VectorSchemaRoot root = StreamRoots.share(in.getRoot(), allocator, "allocator");
            count++;
            sink.accept(root);
        }
        return count;
    }

    /** Device batch -> host root in {@code copies}' allocator: one DMA (direct where the allocator is pinned). */
    static Function<CudaArrowBatch, VectorSchemaRoot> download(DeviceCopies copies) {
        return batch -> CudaArrow.download(batch, copies);
    }

    static <T> long serve(ServerStreamListener listener, Schema schema, Outgoing<T> outgoing) {
        Objects.requireNonNull(listener, "listener");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(outgoing.allocator(), "allocator");
        Objects.requireNonNull(outgoing.items(), "batches");
        StreamRoots.requireNoDictionaries(schema);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, outgoing.allocator())) {
            long sent;
            try {
                listener.start(root);
                sent = send(listener, root, outgoing.items(), outgoing.toHost());
            } catch (RuntimeException | Error e) {
                reportTo(listener, e);
                throw e;
            }
            if (!listener.isCancelled()) {
                listener.completed();
            }
            return sent;
        }
    }

    /**
     * Sends every item through {@code streamRoot}: a host root {@code toHost} makes is closed once sent; one it
     * passes through (the item itself) stays the caller's.
     */
    static <T> long send(OutboundStreamListener out, VectorSchemaRoot streamRoot, Iterator<? extends T> items,
                         Function<? super T, VectorSchemaRoot> toHost) {
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(streamRoot, "streamRoot");
        Objects.requireNonNull(items, "batches");
        return send(out, streamRoot, items, toHost, Outbound.of(out));
    }

    static <T> long send(OutboundStreamListener out, VectorSchemaRoot streamRoot, Iterator<? extends T> items,
                         Function<? super T, VectorSchemaRoot> toHost, Outbound flow) {
        long sent = 0;
        while (!flow.cancelled() && items.hasNext()) {
            T item = Objects.requireNonNull(items.next(), "a batch");
            // The batch is made host-resident (a device batch's DMA) while the client still reads the one before.
            VectorSchemaRoot host = toHost.apply(item);
            try {
                if (!flow.awaitReady()) {
                    break;
                }
                StreamRoots.move(host, streamRoot, "batches");
            } finally {
                if (host != item) { // a root the conversion made; the caller's own root is passed through
                    host.close();
                }
            }
            out.putNext();
            sent++;
        }
        return sent;
    }

    /** Tells the client why the stream failed; a listener that cannot take it any more is passed over. */
    static void reportTo(OutboundStreamListener listener, Throwable failure) {
        FlightRuntimeException status = failure instanceof FlightRuntimeException f ? f
                : CallStatus.INTERNAL.withDescription(String.valueOf(failure.getMessage())).withCause(failure)
                        .toRuntimeException();
        try {
            listener.error(status);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}
