package org.devicebridge.arrow.flight;

import static org.devicebridge.foreign.ArrowJavaCheck.requireFlight;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.util.Iterator;
import java.util.Objects;
import java.util.function.Consumer;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaUnavailableException;

/**
 * The client side: {@code DoGet} into device memory (or host memory) and {@code DoPut} of device batches
 * (or host batches), through a {@code FlightClient} the caller built, with the caller's {@link CallOption}s
 * (deadlines, headers, credentials) handed to Flight unchanged; TLS and authentication are the client's.
 * Received batches arrive in the memory of the client's allocator ({@code FlightClient.builder(allocator,
 * location)}): build it with a {@code PinnedArrowMemory} allocator and each batch goes to the device in one
 * direct DMA.
 *
 * <p>Ownership: this object borrows the client (the caller closes it, after the calls made through this
 * object). Thread-safe as the client is: concurrent calls are separate Flight calls.
 *
 * <p>Without {@code flight-core} (or Arrow Java) {@link #of} throws
 * {@link org.devicebridge.ArrowJavaUnavailableException} naming the missing jar, on every call: this
 * class names Flight's types only in its signatures, and the calls that link against them are loaded after
 * the check.
 */
public final class DeviceFlightClient {
    private final FlightClient client;

    private DeviceFlightClient(FlightClient client) {
        this.client = client;
    }

    /**
     * Device batch calls through {@code client}.
     *
     * @param client the caller's client; borrowed
     * @return a view of the client
     */
    public static DeviceFlightClient of(FlightClient client) {
        requireNativeAccess();
        requireFlight("DeviceFlightClient.of");
        Objects.requireNonNull(client, "client");
        return new DeviceFlightClient(client);
    }

    /**
     * {@code DoGet} into device memory: the stream of {@code ticket} is received as
     * {@link DeviceFlight#receive} does (each batch uploaded on {@code copies}' stream, an event recorded
     * after it), then closed.
     *
     * <p>Ownership: {@code sink} owns each batch from the moment it is called, even if it throws (ending the
     * call with its exception; the rest of the stream is cancelled). The caller keeps owning every part of
     * {@code copies}.
     *
     * @param ticket names the stream
     * @param copies the device, the caller's stream ordering the uploads, and the staging of pageable memory
     * @param sink receives each device batch in order
     * @param options Flight's call options, handed through
     * @return the number of batches received
     * @throws org.apache.arrow.flight.FlightRuntimeException for Flight's failures (unchanged)
     * @throws CudaUnavailableException without a CUDA driver
     * @throws UnsupportedFeatureException if a column's type cannot be uploaded
     * @throws CudaException if a driver call fails
     */
    public long fetch(Ticket ticket, DeviceCopies copies, Consumer<? super DeviceFlightBatch> sink,
                      CallOption... options) {
        return ClientCalls.fetch(client, ticket, copies, sink, options);
    }

    /**
     * {@code DoGet} into host memory: each batch becomes a root of {@code allocator} holding the buffers
     * Flight read into (no copy; see {@link DeviceFlight#receiveRoots}).
     *
     * <p>Ownership: {@code sink} owns each root from the moment it is called, even if it throws.
     *
     * @param ticket names the stream
     * @param allocator the client's allocator or one of its root allocator
     * @param sink receives each root in order
     * @param options Flight's call options, handed through
     * @return the number of batches received
     * @throws org.apache.arrow.flight.FlightRuntimeException for Flight's failures (unchanged)
     * @throws InvalidArgumentException if {@code allocator} is of another root allocator than the client's
     */
    public long fetchRoots(Ticket ticket, BufferAllocator allocator, Consumer<? super VectorSchemaRoot> sink,
                           CallOption... options) {
        return ClientCalls.fetchRoots(client, ticket, allocator, sink, options);
    }

    /**
     * {@code DoPut} of device batches: a stream of {@code schema} is started with a root in {@code copies}'
     * allocator, every batch is sent as {@link DeviceFlight#send} does (one DMA into host memory, then to
     * Flight without a further copy), the stream is completed, and the server's answer awaited. Metadata the
     * server sends back ({@code PutResult}) is read and dropped.
     *
     * <p>Ownership: the batches are borrowed; the caller keeps owning every part of {@code copies}. The
     * stream root is this call's and is closed before it returns or throws. After a throw the call has been
     * cancelled (or failed on the server's side).
     *
     * @param descriptor names the stream on the server
     * @param schema the schema of every batch (no dictionary-encoded field)
     * @param batches the device batches, of {@code copies}' device
     * @param copies where the batches are copied to host memory, and on which stream
     * @param options Flight's call options, handed through
     * @return the number of batches sent
     * @throws org.apache.arrow.flight.FlightRuntimeException for Flight's failures and the server's error (unchanged)
     * @throws UnsupportedFeatureException if {@code schema} has a dictionary-encoded field (nothing was sent)
     * @throws InvalidArgumentException if a batch's field types differ from {@code schema}'s
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if a driver call fails
     */
    public long put(FlightDescriptor descriptor, Schema schema, Iterator<? extends CudaArrowBatch> batches,
                    DeviceCopies copies, CallOption... options) {
        return ClientCalls.put(client, descriptor, schema, Outgoing.devices(batches, copies), options);
    }

    /**
     * {@code DoPut} of host batches: each root's buffers become the stream root's without a copy (see
     * {@link DeviceFlight#sendRoots}); otherwise as {@link #put}.
     *
     * <p>Ownership: the roots are borrowed; the stream root is this call's.
     *
     * @param descriptor names the stream on the server
     * @param schema the schema of every root (no dictionary-encoded field)
     * @param roots the batches, in memory of {@code allocator}'s root allocator
     * @param allocator allocates the stream's root
     * @param options Flight's call options, handed through
     * @return the number of batches sent
     * @throws org.apache.arrow.flight.FlightRuntimeException for Flight's failures and the server's error (unchanged)
     * @throws UnsupportedFeatureException if {@code schema} has a dictionary-encoded field (nothing was sent)
     * @throws InvalidArgumentException if a root's field types differ from {@code schema}'s or its memory is of
     *         another root allocator
     */
    public long putRoots(FlightDescriptor descriptor, Schema schema, Iterator<? extends VectorSchemaRoot> roots,
                         BufferAllocator allocator, CallOption... options) {
        return ClientCalls.put(client, descriptor, schema, Outgoing.roots(roots, allocator), options);
    }
}
