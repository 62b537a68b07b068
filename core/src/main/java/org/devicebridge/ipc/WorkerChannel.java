package org.devicebridge.ipc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.HandleBusyException;
import org.devicebridge.HandleClosedException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.ipc.WorkerLink.Reply;
import org.devicebridge.ipc.WorkerProtocol.Kind;
import org.devicebridge.ipc.WorkerProtocol.Payload;

/**
 * A device batch or tensor handed to a worker process (CPython with CuPy, torch or cuDF; see
 * {@link #writeWorkerModule}) and its result taken back, through CUDA IPC, over a channel the caller already
 * has: the worker's output and input streams (a {@link Process}'s stdout and stdin, or a socket's). Nothing
 * crosses host memory but one line of JSON each way per call. The protocol, with its bounds, is the "Worker
 * channel" section of {@code docs/ipc-format.md}; the guide is {@code docs/worker.md}.
 *
 * <p><b>A call.</b> {@link #send(CudaArrowBatch, CudaStream)} exports the batch ({@link IpcExport#exportBatch}:
 * {@code cuMemAlloc} and IPC-shareable pool memory ({@link org.devicebridge.cuda.TransferOptions#withIpcShareable},
 * the pool sent once over the worker's socket) zero-copy, the default pool's copied once, as
 * {@link IpcExport#copiedBytes()} says) and writes its descriptor; {@link #receive(CudaStream, ValidationLevel, HostDeviceTransfer)} reads the worker's
 * result and maps it as a {@link CudaArrowBatch}; {@link #call(CudaArrowBatch, CudaStream)} does both. Results
 * come back in the order of the calls; several calls may be sent before their results are received.
 *
 * <p><b>Lifetime.</b> The acknowledgement rule of {@link IpcExport} holds: each export keeps its memory until
 * the worker's close message, which the channel passes on as it arrives (then it closes the export). The worker
 * keeps the allocations it mapped open between calls, so that only the first call pays the open; the channel
 * therefore holds its own reference to each such allocation, and once nothing else in this process holds it, the
 * next call (or {@link #close()}) tells the worker to unmap it and drops the reference when the worker confirms.
 * A received batch keeps the worker's memory mapped until it is closed; closing it sends the worker its close
 * message. Allocations and events the worker marks persistent (its reused result slabs) are mapped once and kept
 * by the channel until {@link #close()}, {@link #forceClose()} or the worker's exit; a batch holds its own reference.
 *
 * <p><b>Failures.</b> Every wait for the worker (the handshake, a write, a result, the goodbye) is bounded by
 * the channel's timeout. {@link PeerException} says what went wrong: {@link PeerException.Reason#EXITED} when
 * the worker's end of the channel closed (EOF, a broken pipe): its process is gone, which unmaps everything it
 * had mapped, so the channel force-closes every export and drops every reference at once: nothing stays held in
 * this process; {@link PeerException.Reason#TIMED_OUT} when it stalled: it may still read the memory, so
 * nothing is released until the caller ends the worker's process and calls {@link #forceClose()} (or the
 * worker's EOF arrives); {@link PeerException.Reason#FAILED} when its function raised: that call has no result,
 * the channel goes on. A line the protocol refuses is a {@link ValidationException} and ends the channel as a
 * stall does.
 *
 * <p>Thread-safe; calls are numbered as their sends take a lock, results handed out in that order. The channel
 * owns two daemon threads (a reader and a writer) and, after {@link #open}, both streams.
 */
public final class WorkerChannel implements AutoCloseable {
    static final String MODULE = "devicebridge_worker.py"; // a resource beside this class
    /** Why a worker did not answer as the protocol says. */
    public static final class PeerException extends DeviceBridgeException {
        private static final long serialVersionUID = 1L;

        /** What happened to the worker. */
        public enum Reason {
            /** Its end of the channel closed (EOF, broken pipe): it exited or was killed. */
            EXITED,
            /** It did not answer, or read what it was sent, within the channel's timeout. */
            TIMED_OUT,
            /** Its function raised: the call has no result; the channel goes on. */
            FAILED
        }

        /** What happened to the worker. */ private final Reason reason;

        /**
         * An exception for {@code reason}.
         *
         * @param reason what happened
         * @param message what went wrong, with the worker's own words where it sent any
         * @param cause the underlying failure, or {@code null}
         */
        public PeerException(Reason reason, String message, Throwable cause) {
            super(Objects.requireNonNull(reason, "reason") + ": " + message, cause);
            this.reason = reason;
        }

        /** {@return what happened to the worker} */
        public Reason reason() { return reason; }
    }

    private final WorkerLink link;
    private final WorkerState state = new WorkerState();
    private final WorkerReplies replies;
    private final WorkerPools pools = new WorkerPools();
    private final Object sendLock = new Object();
    private long sent;

    private WorkerChannel(InputStream fromWorker, OutputStream toWorker, Duration timeout) {
        this.link = new WorkerLink(fromWorker, toWorker, state);
        this.replies = new WorkerReplies(link, state, timeout);
    }

    /**
     * Starts the channel's reader and writer threads on the worker's streams and greets the worker: writes
     * {@code hello} and waits for the worker's {@code hello} (which it sends once it has loaded CuPy, so
     * {@code timeout} must cover the worker's start).
     *
     * <p>Ownership: after a return the channel owns both streams (it closes them in {@link #close()} and
     * {@link #forceClose()}); after a throw they are closed and the threads stop.
     *
     * @param fromWorker what the worker writes (a process's {@link Process#getInputStream()}, a socket's input)
     * @param toWorker what the worker reads (a process's {@link Process#getOutputStream()}, a socket's output)
     * @param timeout the longest wait for the worker, for this greeting and every later wait
     * @return the channel, which the caller owns
     * @throws PeerException {@code EXITED} if the worker's end closed, {@code TIMED_OUT} if it did not greet in time
     * @throws ValidationException if its greeting breaks the protocol
     * @throws org.devicebridge.InvalidArgumentException if {@code timeout} is not positive
     */
    public static WorkerChannel open(InputStream fromWorker, OutputStream toWorker, Duration timeout) {
        Objects.requireNonNull(fromWorker, "fromWorker");
        Objects.requireNonNull(toWorker, "toWorker");
        WorkerReplies.requirePositive(timeout);
        WorkerChannel c = new WorkerChannel(fromWorker, toWorker, timeout);
        c.link.start();
        try {
            c.replies.write(WorkerProtocol.hello());
            Reply r = c.replies.next();
            if (r.header().kind() != Kind.HELLO) {
                throw c.replies.refuse("kind", "expected the worker's \"hello\" but found \"" + r.header().kind().wire() + "\"");
            }
            c.pools.offered(r.header());
            return c;
        } catch (RuntimeException | Error e) {
            c.forceClose();
            throw e;
        }
    }

    /**
     * Writes the Python worker module ({@value #MODULE}: the loop that maps what the channel sends into CuPy,
     * runs the caller's function and sends the result back; see {@code docs/worker.md}) into {@code directory}.
     *
     * @param directory an existing directory
     * @return the module's path, to run as {@code python <path>} or to import
     * @throws IOException if it cannot be written
     */
    public static Path writeWorkerModule(Path directory) throws IOException {
        Objects.requireNonNull(directory, "directory");
        Path target = directory.resolve(MODULE);
        try (InputStream in = WorkerChannel.class.getResourceAsStream(MODULE)) {
            if (in == null) {
                throw new IOException("the resource " + MODULE + " is missing from the devicebridge jar");
            }
            Files.write(target, in.readAllBytes());
        }
        return target;
    }

    /**
     * Hands {@code batch} to the worker: exports it ({@link IpcExport#exportBatch} with {@code COPY_UNSHAREABLE}, but
     * IPC-shareable pool memory zero-copy where the worker and the driver can share the pool; its event recorded on
     * {@code stream}) and writes the call.
     *
     * <p>Ownership: after a return the channel owns the export (it closes it when the worker's close message
     * comes, force-closes it when the worker is gone); the returned export is borrowed, to read
     * {@link IpcExport#copiedBytes()} or {@link IpcExport#isAcknowledged()}. The caller keeps owning
     * {@code batch} (it may close it at once) and {@code stream}. After a throw nothing was exported, or (a
     * {@link PeerException} while writing) the export stays with the channel as above.
     *
     * @param batch the device batch; borrowed
     * @param stream a stream of the batch's device on which it is ready; borrowed
     * @return the export, owned by the channel
     * @throws PeerException if the worker is gone or does not read within the timeout
     * @throws HandleClosedException if the channel is closed or ended by an earlier failure
     * @throws DeviceBridgeException if sending a pool over the worker's socket fails ({@code errno} named)
     * @throws org.devicebridge.UnsupportedFeatureException and the other failures of {@link IpcExport#exportBatch}
     */
    public IpcExport send(CudaArrowBatch batch, CudaStream stream) {
        Objects.requireNonNull(batch, "batch");
        Objects.requireNonNull(stream, "stream");
        state.requireOpen();
        IpcBatchExport export = IpcBatchExport.export(batch, stream, IpcExport.Memory.COPY_UNSHAREABLE,
                new IpcBatchExport.Sources(pools, state.events()));
        List<byte[]> handles = export.descriptor().handles();
        List<DeviceBuffer> allocations = new ArrayList<>(handles.size());
        for (int k = 0; k < handles.size(); k++) {
            allocations.add(k == export.copyHandle() ? null : export.allocation(k));
        }
        IpcExport exported = new IpcExport(export);
        post(new Call(exported.id(), exported, Payload.ARROW_BATCH, handles, allocations, exported.descriptor(),
                export.persistentEvent()));
        return exported;
    }

    /**
     * Hands the tensor {@code spec} describes, in {@code buffer} (a {@code cuMemAlloc} allocation), to the worker:
     * exports it ({@link IpcExport#exportTensor}, its event recorded on {@code stream}) and writes the call.
     *
     * <p>Ownership: as {@link #send(CudaArrowBatch, CudaStream)}: the channel owns the returned export; the
     * caller keeps {@code buffer} and {@code stream}.
     *
     * @param buffer the allocation holding the tensor; borrowed
     * @param spec the tensor
     * @param stream the stream its data is written on; borrowed
     * @return the export, owned by the channel
     * @throws PeerException if the worker is gone or does not read within the timeout
     * @throws HandleClosedException if the channel is closed or ended by an earlier failure
     * @throws org.devicebridge.UnsupportedFeatureException and the other failures of {@link IpcExport#exportTensor}
     */
    public IpcExport send(DeviceBuffer buffer, TensorSpec spec, CudaStream stream) {
        Objects.requireNonNull(buffer, "buffer");
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(stream, "stream");
        state.requireOpen();
        IpcTensorExport export = IpcTensorExport.export(buffer, spec, stream, state.events());
        IpcExport exported = new IpcExport(export);
        post(new Call(exported.id(), exported, Payload.TENSOR, List.of(export.descriptor().memHandle()),
                List.of(buffer), exported.descriptor(), export.persistentEvent()));
        return exported;
    }

    /**
     * A call to write: the export's id and handle on it, what it carries, its handles and the allocations they
     * name (null for one the worker must not keep mapped), the descriptor line, and whether its event is pooled.
     */
    private record Call(String id, IpcExport export, Payload payload, List<byte[]> handles,
                        List<DeviceBuffer> allocations, String descriptor, boolean persistentEvent) {}

    /** Registers the export, picks what the worker may keep mapped or must unmap, and writes the call. */
    private void post(Call c) {
        try {
            synchronized (sendLock) {
                state.register(c.id(), c.export());
                List<Integer> transientHandles = new ArrayList<>();
                List<String> unmap = state.keepMapped(c.handles(), c.allocations(), transientHandles);
                String call = WorkerProtocol.withRetired(WorkerProtocol.withPersistentEvent(WorkerProtocol.call(++sent,
                        c.payload(), unmap, transientHandles, pools.announce()), c.persistentEvent()),
                        state.results().retired());
                link.post(call, c.descriptor());
            }
        } catch (RuntimeException | Error e) {
            state.forget(c.id(), e);
            throw e;
        }
        replies.write(); // waits for the queue to drain up to the call: a worker that does not read is a stall
    }

    /**
     * Takes the worker's next result and maps it as a batch (see {@link IpcImport#importBatch}: the worker's
     * memory, zero-copy; {@code stream} waits on the worker's event). Closing the batch unmaps the memory and
     * sends the worker its close message.
     *
     * <p>Ownership: after a return the caller owns the batch; after a throw nothing is mapped (and the worker was
     * told so, where the result could be read).
     *
     * @param stream a stream of the result's device, on which the caller will use it; borrowed
     * @param level how much to check before the batch is used
     * @param transfer host copies for DEFAULT and FULL; may be null at NONE and MINIMAL; borrowed
     * @return the worker's result
     * @throws PeerException {@code FAILED} if the worker's function raised (the channel goes on), {@code EXITED}
     *         or {@code TIMED_OUT} if the worker is gone or stalled
     * @throws ValidationException if the result breaks the protocol or the descriptor format, or fails
     *         {@code level}'s checks
     * @throws HandleClosedException if the channel is closed or ended by an earlier failure
     */
    public CudaArrowBatch receive(CudaStream stream, ValidationLevel level, HostDeviceTransfer transfer) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(level, "level");
        Reply r = nextResult(Payload.ARROW_BATCH);
        IpcBatchDescriptor d = IpcBatchDescriptor.parse(r.descriptor());
        Runnable tell = state.teller(link, d.closeMessage());
        try {
            return IpcBatchImport.open(d, new IpcBatchImport.Target(level, stream, transfer), tell,
                    state.results().mappings(r.header(), d.handles().size())).batch();
        } catch (RuntimeException | Error e) {
            tell.run();
            throw e;
        }
    }

    /**
     * Takes the worker's next result as a tensor (see {@link IpcImport#importTensor}). Closing the tensor unmaps
     * the memory and sends the worker its close message.
     *
     * <p>Ownership: after a return the caller owns the tensor; after a throw nothing is mapped.
     *
     * @param stream the stream the caller will use the tensor on; borrowed
     * @param options what to accept
     * @return the worker's result
     * @throws PeerException as {@link #receive(CudaStream, ValidationLevel, HostDeviceTransfer)}, and its other
     *         exceptions ({@link ValidationException}, {@link HandleClosedException}) alike
     */
    public ImportedTensor receiveTensor(CudaStream stream, ImportOptions options) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(options, "options");
        IpcTensorDescriptor d = IpcTensorDescriptor.parse(nextResult(Payload.TENSOR).descriptor());
        Runnable tell = state.teller(link, d.closeMessage());
        try {
            return IpcTensorImport.open(d, stream, options, tell);
        } catch (RuntimeException | Error e) {
            tell.run();
            throw e;
        }
    }

    /**
     * {@link #send(CudaArrowBatch, CudaStream)} then {@link #receive(CudaStream, ValidationLevel,
     * HostDeviceTransfer)} at {@link ValidationLevel#MINIMAL} on the same stream: one round trip.
     *
     * <p>Ownership: after a return the caller owns the result and keeps {@code batch}; after a throw nothing is
     * mapped and the export is the channel's.
     *
     * @param batch the device batch; borrowed
     * @param stream a stream of its device; borrowed
     * @return the worker's result, which the caller owns
     * @throws PeerException as {@link #send(CudaArrowBatch, CudaStream)} and {@link #receive}
     */
    public CudaArrowBatch call(CudaArrowBatch batch, CudaStream stream) {
        send(batch, stream);
        return receive(stream, ValidationLevel.MINIMAL, null);
    }

    /** {@return what the channel keeps open of the worker's results (for tests: the counts of opens)} */
    WorkerResults results() { return state.results(); }

    /** {@return the channel's pool of interprocess events (for tests: how many it created)} */
    IpcEventPool<IpcEventPool.SharedEvent> events() { return state.events(); }

    /** The next reply, which must be the result (or error) of the next call, with {@code payload}. */
    Reply nextResult(Payload payload) {
        return replies.nextResult(payload);
    }

    /**
     * Says goodbye: writes {@code bye}, waits for the worker's {@code bye} (it has closed every mapping), closes
     * what the worker had not acknowledged yet and drops every reference, then closes the streams. Idempotent;
     * after the worker exited it only releases.
     *
     * @throws HandleBusyException if a received batch or tensor is still open (nothing changed: close it, then
     *         close again), or the channel ended on a stall or a refused line while memory is still shared (end
     *         the worker's process, then {@link #forceClose()})
     * @throws PeerException if the worker does not say goodbye within the timeout (nothing released)
     */
    @Override
    public void close() {
        switch (state.beginClose()) {
            case DONE -> {
                return;
            }
            case RELEASE -> {
                forceClose();
                return;
            }
            case BYE -> { } // below
        }
        state.results().clear(); // no result is open: the worker may free its slabs at bye
        try {
            replies.write(WorkerProtocol.bye());
            while (true) {
                Reply r = replies.next();
                if (r.header().kind() == Kind.BYE) {
                    break;
                } // a result or error of a call never received is skipped: the worker frees results at bye
                if (r.header().kind() != Kind.ERROR && r.header().kind() != Kind.RESULT) {
                    throw replies.refuse("kind", "expected the worker's \"bye\" but found \"" + r.header().kind().wire() + "\"");
                }
            }
        } catch (PeerException e) {
            if (e.reason() != PeerException.Reason.EXITED) {
                throw e;
            }
        }
        forceClose();
    }

    /**
     * Releases everything without the worker's word (for a worker whose process is gone): force-closes every
     * export not yet acknowledged, drops every reference to memory the worker mapped, closes the streams.
     * Received batches and tensors stay the caller's. Idempotent.
     */
    public void forceClose() {
        state.releaseAll();
        link.close();
    }

    @Override
    public String toString() {
        synchronized (sendLock) {
            return "WorkerChannel[" + state + ", " + sent + " calls sent, " + replies + ", " + pools + "]";
        }
    }
}
