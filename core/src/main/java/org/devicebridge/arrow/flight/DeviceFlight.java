package org.devicebridge.arrow.flight;

import static org.devicebridge.foreign.ArrowJavaCheck.requireFlight;
import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.util.Iterator;
import java.util.function.Consumer;
import org.apache.arrow.flight.FlightProducer.ServerStreamListener;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.OutboundStreamListener;
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
 * Device batches on Flight streams, for use inside the caller's own {@code FlightProducer} and with the
 * caller's own {@code FlightClient}: sending ({@code DoGet} answers, {@code DoPut} bodies) and receiving
 * ({@code DoGet} results, {@code DoPut} bodies).
 *
 * <p>Sending a device batch copies it once, by DMA, into host memory of the {@link DeviceCopies}' allocator
 * (with an allocator of {@code PinnedArrowMemory} the copy engine writes the Arrow buffers directly; one host
 * wait per batch), then hands those very buffers to the stream's root without a further copy (Arrow Java
 * reference counts), and Flight sends them. Receiving uploads each batch Flight delivered (into the host
 * memory of the server's or client's allocator: pinned there too for one direct DMA) on the caller's stream
 * and records an event after it.
 *
 * <p>The {@code ...Roots} forms do the same with host batches (no CUDA needed): Flight's own API with the
 * buffer moves, flow control, cancellation and ownership rules of the device forms.
 *
 * <p>Stateless and thread-safe; each call uses its stream from the calling thread only (as Flight requires).
 * Flight's own failures ({@code FlightRuntimeException}: a cancelled call, a closed connection, an error
 * from the peer) pass through unchanged.
 *
 * <p>Without {@code flight-core} (or Arrow Java) every entry point throws
 * {@link org.devicebridge.ArrowJavaUnavailableException} naming the missing jar, on every call: this
 * class names Flight's types only in its signatures, and the bodies that link against them are loaded after
 * the check.
 */
public final class DeviceFlight {
    private DeviceFlight() {}

    /**
     * Answers a {@code DoGet} with device batches: starts {@code listener} with a root of {@code schema} in
     * {@code copies}' allocator, sends every batch as {@link #send} does, and completes the stream. Each
     * batch waits until the client can take it (the listener's {@code isReady}, looked at again after short
     * pauses: its ready handler cannot run while a {@code DoGet} body blocks, so this sets the listener's
     * ready and cancel handlers only to end a pause early), and a cancelled call stops the stream (no error;
     * the count says how far it went; the batch being copied when the client cancelled is taken from the
     * iterator but not sent). A failure is reported to the client with
     * {@code listener.error} (Flight's {@code INTERNAL} status carrying the message, or the status of a
     * {@code FlightRuntimeException}) and then thrown: do not report it again.
     *
     * <p>Ownership: the batches are borrowed (the caller closes them; each is read before the next is taken
     * from the iterator); the caller keeps owning {@code listener}'s call and every part of {@code copies}.
     * The stream root is this call's and is closed before it returns or throws.
     *
     * @param listener the {@code DoGet} call's listener, not yet started
     * @param schema the schema of every batch (no dictionary-encoded field)
     * @param batches the device batches, of {@code copies}' device, each a struct array of {@code schema}'s fields
     * @param copies where the batches are copied to host memory, and on which stream
     * @return the number of batches sent
     * @throws UnsupportedFeatureException if {@code schema} has a dictionary-encoded field (nothing was sent)
     * @throws InvalidArgumentException if a batch's field types differ from {@code schema}'s
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if a driver call fails
     */
    public static long serve(ServerStreamListener listener, Schema schema, Iterator<? extends CudaArrowBatch> batches,
                             DeviceCopies copies) {
        requireNativeAccess();
        requireFlight("DeviceFlight.serve");
        return FlightCalls.serve(listener, schema, batches, copies);
    }

    /**
     * {@link #serve} for host batches: each root's buffers are handed to the stream's root without a copy
     * (sharing them by reference count) and sent.
     *
     * <p>Ownership: the roots are borrowed (the caller closes them, and may do so as soon as the next one is
     * taken from the iterator); the stream root is this call's and is closed before it returns or throws.
     *
     * @param listener the {@code DoGet} call's listener, not yet started
     * @param schema the schema of every root (no dictionary-encoded field)
     * @param roots the batches, each of {@code schema}'s fields, in memory of {@code allocator}'s root allocator
     * @param allocator allocates the stream's root
     * @return the number of batches sent
     * @throws UnsupportedFeatureException if {@code schema} has a dictionary-encoded field (nothing was sent)
     * @throws InvalidArgumentException if a root's field types differ from {@code schema}'s or its memory is of
     *         another root allocator
     */
    public static long serveRoots(ServerStreamListener listener, Schema schema, Iterator<? extends VectorSchemaRoot> roots,
                                  BufferAllocator allocator) {
        requireNativeAccess();
        requireFlight("DeviceFlight.serveRoots");
        return FlightCalls.serveRoots(listener, schema, roots, allocator);
    }

    /**
     * Sends device batches on a started stream (a server's {@code DoGet} listener, or the listener of a
     * client's {@code startPut}) whose root is {@code streamRoot}: each batch is copied by DMA into host
     * memory of {@code copies}' allocator (directly into the Arrow buffers where it is pinned; one host wait
     * per batch, ordered on {@code copies}' stream after the work queued there before), its buffers become
     * {@code streamRoot}'s without a copy, and {@code putNext} sends them. Neither starts nor completes the
     * stream. On a server listener each batch is copied while the client still reads the one before, then
     * waits until the listener {@code isReady} (as {@link #serve} says), and a cancelled call stops the loop;
     * a client's {@code putNext} waits for the transport itself.
     *
     * <p>Ownership: the batches are borrowed; the caller keeps owning {@code out}, {@code streamRoot} (which
     * holds the last batch sent when this returns) and every part of {@code copies}. After a throw the
     * stream is as the failure left it: the caller reports the error ({@code out.error}).
     *
     * @param out a started stream
     * @param streamRoot the root the stream was started with, in memory of {@code copies}' root allocator
     * @param batches the device batches, of {@code copies}' device, each of {@code streamRoot}'s fields
     * @param copies where the batches are copied to host memory, and on which stream
     * @return the number of batches sent
     * @throws InvalidArgumentException if a batch's field types differ from the stream's, or {@code streamRoot}'s
     *         memory is of another root allocator than {@code copies}'
     * @throws CudaUnavailableException without a CUDA driver
     * @throws CudaException if a driver call fails
     */
    public static long send(OutboundStreamListener out, VectorSchemaRoot streamRoot,
                            Iterator<? extends CudaArrowBatch> batches, DeviceCopies copies) {
        requireNativeAccess();
        requireFlight("DeviceFlight.send");
        return FlightCalls.send(out, streamRoot, batches, copies);
    }

    /**
     * {@link #send} for host batches: each root's buffers become {@code streamRoot}'s without a copy.
     *
     * <p>Ownership: the roots are borrowed; the caller keeps owning {@code out} and {@code streamRoot}.
     *
     * @param out a started stream
     * @param streamRoot the root the stream was started with
     * @param roots the batches, each of {@code streamRoot}'s fields, in memory of its root allocator
     * @return the number of batches sent
     * @throws InvalidArgumentException if a root's field types differ from the stream's or its memory is of
     *         another root allocator
     */
    public static long sendRoots(OutboundStreamListener out, VectorSchemaRoot streamRoot,
                                 Iterator<? extends VectorSchemaRoot> roots) {
        requireNativeAccess();
        requireFlight("DeviceFlight.sendRoots");
        return FlightCalls.sendRoots(out, streamRoot, roots);
    }

    /**
     * Receives a Flight stream (a {@code DoPut} body on the server, or a {@code DoGet} result on the client)
     * into device memory: each batch Flight delivers is uploaded into one allocation of {@code copies}'
     * device with copies ordered on {@code copies}' stream (straight from the Arrow buffers where they are
     * pinned: build the {@code FlightServer} or {@code FlightClient} with a {@code PinnedArrowMemory}
     * allocator), an event is recorded on that stream after them, and {@code sink} gets both. The copies
     * are queued without a host wait and overlap Flight's reading of the next batch: the host waits for
     * them (one wait per batch) when that batch has arrived, or before this returns, and only then lets
     * Flight have the host buffers back. Returns at the end of the stream. Dictionary-encoded columns are
     * uploaded with their dictionaries (synchronously).
     *
     * <p>Ownership: {@code sink} owns each batch from the moment it is called, even if it throws (it closes
     * the batch); a sink that throws ends the loop with its exception. The caller keeps owning {@code in}
     * (closing it cancels what is left of the stream) and every part of {@code copies}. After a throw the
     * batches already given to {@code sink} stay its own; nothing else is held.
     *
     * @param in the stream; its root's memory is read by the upload, in {@code in}'s thread
     * @param copies the device, the stream that orders the uploads, and the staging of pageable memory
     * @param sink receives each device batch in order
     * @return the number of batches received
     * @throws CudaUnavailableException without a CUDA driver
     * @throws UnsupportedFeatureException if a column's type cannot be uploaded
     * @throws CudaException if a driver call fails
     */
    public static long receive(FlightStream in, DeviceCopies copies, Consumer<? super DeviceFlightBatch> sink) {
        requireNativeAccess();
        requireFlight("DeviceFlight.receive");
        return FlightCalls.receive(in, copies, sink);
    }

    /**
     * Receives a Flight stream into host memory: each batch Flight delivers becomes a new root in
     * {@code allocator} holding the very buffers Flight read into (no copy; pinned memory when the server or
     * client was built with a {@code PinnedArrowMemory} allocator), and {@code sink} gets it. Dictionaries
     * stay with {@code in} ({@code in.getDictionaryProvider()}, valid until it is closed).
     *
     * <p>Ownership: {@code sink} owns each root from the moment it is called, even if it throws (it closes
     * the root); a sink that throws ends the loop with its exception. The caller keeps owning {@code in}.
     *
     * @param in the stream
     * @param allocator allocates the roots handed out: the allocator {@code in} reads into, or one of its
     *     root allocator (a child, to account for them apart)
     * @param sink receives each root in order
     * @return the number of batches received
     * @throws InvalidArgumentException if {@code allocator} is of another root allocator than {@code in}'s
     */
    public static long receiveRoots(FlightStream in, BufferAllocator allocator, Consumer<? super VectorSchemaRoot> sink) {
        requireNativeAccess();
        requireFlight("DeviceFlight.receiveRoots");
        return FlightCalls.receiveRoots(in, allocator, sink);
    }
}
