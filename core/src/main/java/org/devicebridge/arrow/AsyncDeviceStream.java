package org.devicebridge.arrow;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.devicebridge.DeviceKind;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.internal.Native;

/**
 * The Arrow C async device stream, both sides. The handle is the consumer side: an
 * {@code ArrowAsyncDeviceStreamHandler} this library implements ({@link #open}), handed to a native producer,
 * and a pull API over what the producer pushes. The producer side is {@link #export}: it drives any
 * handler (Arrow C++'s, a native consumer's, or this library's own) from a C device stream.
 *
 * {@snippet lang=c :
 * struct ArrowAsyncDeviceStreamHandler {
 *   int (*on_schema)(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowSchema* stream_schema);
 *   int (*on_next_task)(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowAsyncTask* task,
 *                       const char* metadata);
 *   void (*on_error)(struct ArrowAsyncDeviceStreamHandler* self, int code, const char* message,
 *                    const char* metadata);
 *   void (*release)(struct ArrowAsyncDeviceStreamHandler* self);
 *   struct ArrowAsyncProducer* producer;
 *   void* private_data;
 * };
 * }
 *
 * <p>Flow: {@link #handler()} gives the struct to one producer; its {@code on_schema} (any thread) imports
 * and validates the schema and requests {@code window} batches; each {@code on_next_task} queues the task;
 * {@link #next} takes the oldest task on the caller's thread, requests one more batch (so at most
 * {@code window} tasks are ever outstanding), calls the task's {@code extract_data} and imports the device
 * array as {@link ArrowC#importDeviceArray(SchemaNode, MemorySegment, ValidationLevel)} does, at the
 * level given here. The task and stream metadata strings are not read.
 *
 * <p>A producer that breaks the protocol gets a non-zero return (it must then stop and release) and the
 * stream a sticky {@link ValidationException} of {@link Category#STREAM} that {@link #next} throws: a task
 * beyond the demand requested, {@code on_next_task} before {@code on_schema} or after the end, a second
 * {@code on_schema}, a NULL schema or producer, {@code on_error} after the end, a release without an end or an
 * error. An {@code on_error} before the end is thrown as an {@link ArrowStreamException}.
 *
 * <p>Every task is spent exactly once: extracted by {@link #next}, or handed back with
 * {@code extract_data(task, NULL)} when it arrives after {@link #cancel()}/{@link #close()} or is still queued
 * then; a task refused with a non-zero return (a protocol violation) is never touched, so the producer frees it. Every extracted array is owned by
 * the returned {@link ImportedArray}, or released before {@link #next} throws.
 *
 * <p>Thread safety: every method may be called from any thread; {@link #next} calls are serialised. The
 * producer may call the handler from any of its threads.
 */
public final class AsyncDeviceStream extends NativeHandle {
    /** The largest window: more batches in flight than this is a configuration error, not a stream. */
    public static final int MAX_WINDOW = 1 << 16;

    private final AsyncConsumerState state;
    private final ValidationLevel level;
    private final Object nextLock = new Object();

    private AsyncDeviceStream(AsyncConsumerState state, ValidationLevel level) {
        super("async device stream consumer", state::close);
        this.state = state;
        this.level = level;
    }

    /**
     * Makes a consumer whose handler requests at most {@code window} batches ahead of what {@link #next} took,
     * and imports each batch at {@code level} (device memory only at {@link ValidationLevel#NONE} or
     * {@link ValidationLevel#MINIMAL}, as for every device array).
     *
     * <p>Ownership: the caller owns the returned handle (close it); before {@link #handler()} is called its
     * {@code close()} frees the handler too, afterwards the producer's {@code release} does.
     *
     * @param window batches requested ahead, 1 to {@link #MAX_WINDOW}
     * @param level how much of each batch to check before it is used
     * @return a consumer waiting for its producer
     * @throws InvalidArgumentException if {@code window} is out of range
     */
    public static AsyncDeviceStream open(int window, ValidationLevel level) {
        requireNativeAccess();
        Objects.requireNonNull(level, "level");
        if (window < 1 || window > MAX_WINDOW) {
            throw new InvalidArgumentException("window", "expected 1 to " + MAX_WINDOW + " but found " + window);
        }
        return new AsyncDeviceStream(new AsyncConsumerState(window), level);
    }

    /**
     * The producer side: moves the stream at {@code arrowDeviceArrayStreamPtr} and starts feeding it to
     * {@code handlerPtr}. Pulls from the stream ({@code get_schema}, {@code get_next}) on {@code executor}, one
     * task at a time, only while the consumer's demand lasts; returns at once. The source is any
     * {@code ArrowDeviceArrayStream}: one this library exported (Arrow Java batches through
     * {@code org.devicebridge.arrow.java.ArrowJava}, CUDA batches through {@code org.devicebridge.arrow.cuda})
     * or a native one.
     *
     * <p>What the consumer sees: {@code producer} set, then {@code on_schema} with the stream's schema; after
     * each {@code request(n)} at most {@code n} more {@code on_next_task} calls, one batch each, whose
     * {@code extract_data} moves the batch's {@code ArrowDeviceArray} (and with it its sync event) out, or
     * releases it for a NULL {@code out}; {@code on_next_task(NULL)} at the end; {@code on_error} when the source
     * fails or the consumer breaks the protocol ({@code request} with {@code n <= 0}); and in every case exactly
     * one {@code release} of the handler. The {@code ArrowAsyncProducer} is freed once the release came and every
     * task handed out was extracted, so a consumer may still call {@code request} (a no-op then) for a task it
     * took before the release, as Arrow C++'s consumer does. A {@code cancel} ends the stream with just the
     * release. Handler callbacks come one at a time, on {@code executor}'s threads, never from inside
     * {@code request} or {@code cancel}; a task may be extracted from any thread, also after the release.
     *
     * <p>Ownership: after a return the export owns the stream (released when the export ends) and the
     * handler's consumer gets its {@code release} exactly once; every batch handed over is the consumer's from
     * its {@code extract_data}. After a throw the stream has been released (or was not live), and a handler
     * with all four callbacks has had {@code on_error} and {@code release}; one without them was not touched.
     *
     * @param arrowDeviceArrayStreamPtr the source {@code ArrowDeviceArrayStream}, moved
     * @param handlerPtr the consumer's {@code ArrowAsyncDeviceStreamHandler}, its four callbacks set
     * @param executor runs the export's work (a task per burst of demand); must not run it on the caller's
     *     thread inside {@code request} (a direct executor would call the handler re-entrantly)
     * @return completes when the handler was released: normally at the end of the stream or after a cancel;
     *     exceptionally with {@link ArrowStreamException} for a source that failed or a consumer that refused
     *     (a non-zero {@code on_schema} / {@code on_next_task}), {@link ValidationException} for a consumer
     *     that broke the protocol or a batch on another device than the stream's
     * @throws ValidationException if the stream or the handler is NULL, released or lacks a callback, or
     *     ({@link Category#DEVICE}) the stream's device type is unknown
     * @throws InvalidArgumentException if a pointer is a heap or read-only segment
     */
    public static CompletableFuture<Void> export(MemorySegment arrowDeviceArrayStreamPtr, MemorySegment handlerPtr,
                                                 Executor executor) {
        requireNativeAccess();
        return AsyncStreamExport.exportStream(arrowDeviceArrayStreamPtr, handlerPtr, executor);
    }

    /**
     * The {@code ArrowAsyncDeviceStreamHandler*} to give to exactly one producer (for example Arrow C++'s
     * {@code ExportAsyncRecordBatchReader}). From the first call on, the producer owns calling its
     * {@code release} once, which frees it; later calls return the same pointer.
     *
     * <p>Ownership: after a return the producer it is given to must release it; after a throw nothing changed.
     *
     * @return the handler struct, sized
     * @throws org.devicebridge.HandleClosedException if this handle is closed or the producer released the handler
     */
    public MemorySegment handler() {
        ensureLive();
        return state.handOver();
    }

    /**
     * Waits for the producer's schema.
     *
     * @param timeout how long to wait
     * @return the stream's schema, validated; plain Java data
     * @throws ArrowStreamException with errno {@code ETIMEDOUT} if none came in time (the stream stays live), or
     *         the producer's {@code on_error} before its schema
     * @throws ValidationException if the schema or the producer is malformed
     * @throws InterruptedException if the thread was interrupted while waiting
     */
    public SchemaNode schema(Duration timeout) throws InterruptedException {
        ensureLive();
        return state.awaitSchema(deadline(timeout));
    }

    /** {@return the producer's device type, or {@code null} before its schema came} */
    public DeviceKind deviceType() {
        return state.deviceType();
    }

    /**
     * Waits for the next batch and imports it.
     *
     * <p>Ownership: after a return the caller owns the batch (close it); after a throw the task was spent
     * and its array (if extracted) released. The consumer stays the caller's to close in both cases.
     *
     * @param timeout how long to wait for the producer
     * @return the batch, or {@code null} at the end of the stream and after {@link #cancel()}
     * @throws ArrowStreamException the producer's {@code on_error}, a non-zero {@code extract_data}, or errno
     *         {@code ETIMEDOUT} if no batch came in time (the stream stays live)
     * @throws ValidationException for a batch that is malformed or on another device type than the producer's,
     *         or ({@link Category#STREAM}) a producer that broke the protocol
     * @throws InterruptedException if the thread was interrupted while waiting
     * @throws org.devicebridge.HandleClosedException if this handle is closed
     */
    public ImportedArray next(Duration timeout) throws InterruptedException {
        long deadline = deadline(timeout);
        synchronized (nextLock) {
            ensureLive();
            AsyncConsumerState.Task task = state.take(deadline);
            if (task == null) {
                return null;
            }
            state.replenish();
            return extractAndImport(task);
        }
    }

    private ImportedArray extractAndImport(AsyncConsumerState.Task task) {
        MemorySegment out = Native.calloc(ArrowDeviceArray.sizeof());
        try {
            int rc = AsyncConsumerState.extract(task, out);
            if (rc != 0) {
                // The producer follows a failed extract_data with on_error; its message may already be here.
                throw state.fail(new ArrowStreamException("extract_data", rc, state.errorMessage()));
            }
            if (ArrowArray.release(out).equals(MemorySegment.NULL)) {
                throw state.fail(new ValidationException(Category.STREAM, "extract_data",
                        "expected a live ArrowDeviceArray after a successful extract_data but found a released one"));
            }
            int batchDevice = ArrowDeviceArray.device_type(out);
            DeviceKind expected = state.deviceType();
            if (batchDevice != expected.code()) {
                ForeignImport.take(ForeignImport.Kind.ARROW_DEVICE_ARRAY, out, owned -> {
                    throw new ValidationException(Category.DEVICE, "device_type", "expected the producer's device type "
                            + expected.code() + " but found " + batchDevice);
                });
            }
            return ArrowC.importDeviceArray(state.schema(), out, level);
        } finally {
            Native.free(out);
        }
    }

    /**
     * Asks the producer to stop ({@code cancel}), hands back every queued task, and makes {@link #next} return
     * {@code null}. Tasks the producer still delivers are handed back as they come. Idempotent, any thread.
     */
    public void cancel() {
        state.cancel();
    }

    /** {@return the batches requested ahead of what {@link #next} took} */
    public int window() {
        return state.window;
    }

    private static long deadline(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new InvalidArgumentException("timeout", "expected a non-negative duration but found " + timeout);
        }
        long now = System.nanoTime();
        long nanos = timeout.compareTo(Duration.ofDays(365)) > 0 ? Duration.ofDays(365).toNanos() : timeout.toNanos();
        return now + nanos;
    }

    /** Handlers this JVM made that no producer released and no close freed yet (tests watch it). */
    static int liveHandlers() {
        return AsyncConsumerState.HANDLERS.size();
    }
}
