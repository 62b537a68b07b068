package org.devicebridge.arrow.flight;

import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightProducer.CallContext;
import org.apache.arrow.flight.FlightProducer.StreamListener;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ExportedStruct;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.java.ArrowJava;

/**
 * What a {@code DoPut} to a producer may do, under {@link PutOptions}: the policy is asked before the first
 * batch and again at the install; each batch is counted and sized from the buffers Flight received, its
 * bytes reserved in the store's total, validated at FULL if asked, and only then landed (uploaded to the
 * device); the finished put is installed as one dataset. Any failure cancels the put with a Flight status
 * naming the cause, after everything the put held was freed: the landing closed (its copies finished), the
 * landed batches closed, the reservation given back. The store is unchanged unless the whole put succeeded.
 *
 * <p>The landing is a parameter so that the CPU tests run this logic with host batches; the producer lands
 * on the device with {@link Uploads}. Stateless beyond its options; thread-safe.
 */
final class PutAdmission {
    /** Turns each received batch into a batch the store holds, in order; one per put, one thread. */
    interface Landing<B> extends AutoCloseable {
        /**
         * Lands the batch now in {@code root}; Flight may reuse {@code root} once this returns.
         *
         * <p>Ownership: after a return the caller owns the result; after a throw nothing new is held.
         */
        B land(VectorSchemaRoot root, DictionaryProvider dictionaries);

        /** Finishes what the landed batches still read (their copies); the landed batches stay the caller's. */
        @Override
        void close();
    }

    private final PutOptions options;

    PutAdmission(PutOptions options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    PutOptions options() {
        return options;
    }

    /**
     * Runs one put into {@code store} and answers it on {@code ack}: completed once the dataset is installed,
     * or an error status. Never throws: every failure, {@code Error}s included, is reported to the client.
     *
     * <p>Ownership: after a return the store owns what the put installed; nothing else the put made is held.
     * The caller keeps owning {@code in} (Flight closes it with the call).
     */
    <B> void accept(CallContext context, FlightStream in, StreamListener<PutResult> ack, Datasets<B> store,
                    Supplier<? extends Landing<B>> landings) {
        Put<B> put = new Put<>(store);
        Throwable failure = null;
        try {
            String name = nameOf(in.getDescriptor());
            String peer = Objects.requireNonNullElse(context.peerIdentity(), "");
            requireAllowed(peer, name, store.exists(name));
            Schema schema = in.getSchema();
            StreamRoots.requireNoDictionaries(schema);
            put.receive(in, landings);
            boolean[] existed = {false};
            boolean installed = store.install(name, schema, put.received, put.reserved, exists -> {
                existed[0] = exists;
                return options.allows(peer, name, exists);
            });
            if (!installed) {
                throw refused(peer, name, existed[0]);
            }
            put.installed = true;
        } catch (RuntimeException | Error e) {
            failure = e;
        } finally {
            if (!put.installed) {
                failure = put.abandon(failure);
            }
        }
        try {
            if (failure == null) {
                ack.onCompleted();
            } else {
                ack.onError(statusOf(failure));
            }
        } catch (RuntimeException e) {
            // the call is over (the client cancelled it): there is nobody left to tell
        }
    }

    /** A dataset's name: its descriptor's single path element, or its command as UTF-8. */
    static String nameOf(FlightDescriptor descriptor) {
        if (descriptor.isCommand()) {
            return new String(descriptor.getCommand(), StandardCharsets.UTF_8);
        }
        List<String> path = descriptor.getPath();
        if (path.size() != 1) {
            throw CallStatus.INVALID_ARGUMENT.withDescription("expected a descriptor path of one element but found "
                    + path.size() + " elements").toRuntimeException();
        }
        return path.get(0);
    }

    private void requireAllowed(String peer, String name, boolean exists) {
        if (!options.allows(peer, name, exists)) {
            throw refused(peer, name, exists);
        }
    }

    private static FlightRuntimeException refused(String peer, String name, boolean exists) {
        return CallStatus.UNAUTHORIZED.withDescription(String.format(Locale.ROOT,
                "policy: the put policy refused to %s dataset '%s' for peer '%s'", exists ? "replace" : "create",
                name, peer)).toRuntimeException();
    }

    private static FlightRuntimeException exhausted(String message) {
        return CallStatus.RESOURCE_EXHAUSTED.withDescription(message).toRuntimeException();
    }

    /** The status the client gets for {@code failure}. */
    private static FlightRuntimeException statusOf(Throwable failure) {
        if (failure instanceof FlightRuntimeException f) {
            return f;
        }
        CallStatus status = failure instanceof InvalidArgumentException || failure instanceof ValidationException
                ? CallStatus.INVALID_ARGUMENT
                : failure instanceof UnsupportedFeatureException ? CallStatus.UNIMPLEMENTED : CallStatus.INTERNAL;
        return status.withDescription(String.valueOf(failure.getMessage())).withCause(failure).toRuntimeException();
    }

    /**
     * The bytes of the buffers Flight received for the batch in {@code root}: sizes from the message, not
     * from the batch's contents (nothing of which is trusted yet).
     */
    static long bytesOf(VectorSchemaRoot root) {
        long total = 0;
        for (FieldVector v : root.getFieldVectors()) {
            total = Math.addExact(total, bytesOf(v));
        }
        return total;
    }

    private static long bytesOf(FieldVector vector) {
        long total = 0;
        for (ArrowBuf b : vector.getFieldBuffers()) {
            total = Math.addExact(total, b.capacity());
        }
        for (FieldVector child : vector.getChildrenFromFields()) {
            total = Math.addExact(total, bytesOf(child));
        }
        return total;
    }

    /** One put in progress: what it landed and reserved, freed by {@link #abandon} unless installed. */
    private final class Put<B> {
        private final Datasets<B> store;
        private final List<B> received = new ArrayList<>();
        private long reserved;
        private boolean installed;

        Put(Datasets<B> store) {
            this.store = store;
        }

        void receive(FlightStream in, Supplier<? extends Landing<B>> landings) {
            long streamBytes = 0;
            try (Landing<B> landing = landings.get();
                 FullCheck full = options.validation() == ValidationLevel.FULL ? new FullCheck(in.getSchema()) : null) {
                while (in.next()) {
                    int index = received.size();
                    if (index >= options.maxBatches()) {
                        throw exhausted(String.format(Locale.ROOT, "maxBatches: the put sent more than the limit of "
                                + "%d batches (batches[%d] arrived)", options.maxBatches(), index));
                    }
                    VectorSchemaRoot root = in.getRoot();
                    long bytes = bytesOf(root);
                    if (bytes > options.maxBatchBytes()) {
                        throw exhausted(String.format(Locale.ROOT, "maxBatchBytes: batches[%d] has %d bytes, above the "
                                + "limit of %d", index, bytes, options.maxBatchBytes()));
                    }
                    if (bytes > options.maxStreamBytes() - streamBytes) {
                        throw exhausted(String.format(Locale.ROOT, "maxStreamBytes: batches[%d] of %d bytes brings the "
                                + "put to %d bytes, above the limit of %d", index, bytes, streamBytes + bytes,
                                options.maxStreamBytes()));
                    }
                    if (!store.reserve(bytes, options.maxTotalBytes())) {
                        throw exhausted(String.format(Locale.ROOT, "maxTotalBytes: batches[%d] of %d bytes would bring "
                                + "the producer's put datasets above the limit of %d bytes (%d held now)", index, bytes,
                                options.maxTotalBytes(), store.bytesHeld()));
                    }
                    reserved += bytes;
                    streamBytes += bytes;
                    received.add(null); // the slot first: the landed batch is never without an owner
                    try {
                        if (full != null) {
                            full.check(root);
                        }
                        received.set(index, landing.land(root, in.getDictionaryProvider()));
                    } catch (ValidationException e) {
                        throw CallStatus.INVALID_ARGUMENT.withDescription(String.format(Locale.ROOT,
                                "batches[%d] failed validation at %s: %s", index, options.validation(), e.getMessage()))
                                .withCause(e).toRuntimeException();
                    }
                }
            }
        }

        /** Frees what the put holds; a failure of that is added to {@code failure}, or returned if none. */
        Throwable abandon(Throwable failure) {
            try {
                store.discard(received.stream().filter(Objects::nonNull).toList());
            } catch (RuntimeException | Error e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            } finally {
                received.clear();
                store.giveBack(reserved);
                reserved = 0;
            }
            return failure;
        }
    }

    /** FULL validation on the host: the batch viewed as the export would write it and checked at FULL. */
    private static final class FullCheck implements AutoCloseable {
        private final ImportedSchema schema;

        FullCheck(Schema schema) {
            try (ExportedStruct exported = ExportedStruct.allocateSchema(out -> ArrowJava.exportSchema(schema, null, out))) {
                this.schema = ArrowC.importSchema(exported.segment());
            }
        }

        void check(VectorSchemaRoot root) {
            try (Arena arena = Arena.ofConfined()) {
                // the view is the check; the arena's close drops its references (the root keeps its buffers)
                ArrowC.viewArray(schema.root(), ArrowJava.viewRoot(root, null, arena), ValidationLevel.FULL);
            }
        }

        @Override
        public void close() {
            schema.close();
        }
    }
}
