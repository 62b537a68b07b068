package org.devicebridge.arrow;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.generated.arrow.ArrowAsyncDeviceStreamHandler;
import org.devicebridge.internal.Errno;

/**
 * The producer side of the Arrow C async device stream: drives a native consumer's
 * {@code ArrowAsyncDeviceStreamHandler} from a C device stream. The source is any
 * {@code ArrowDeviceArrayStream}: one this library exported (Arrow Java batches through
 * {@code org.devicebridge.arrow.java.ArrowJava}, CUDA batches through {@code org.devicebridge.arrow.cuda})
 * or a native one.
 *
 * <p>What the consumer sees: {@code producer} set, then {@code on_schema} with the stream's schema; after each
 * {@code request(n)} at most {@code n} more {@code on_next_task} calls, one batch each, whose
 * {@code extract_data} moves the batch's {@code ArrowDeviceArray} (and with it its sync event) out, or
 * releases it for a NULL {@code out}; {@code on_next_task(NULL)} at the end; {@code on_error} when the source
 * fails or the consumer breaks the protocol ({@code request} with {@code n <= 0}); and in every case exactly one
 * {@code release} of the handler. The {@code ArrowAsyncProducer} is freed once the release came and every
 * task handed out was extracted, so a consumer may still call {@code request} (a no-op then) for a task it took
 * before the release, as Arrow C++'s consumer does. A {@code cancel} ends
 * the stream with just the release. Handler callbacks come one at a time, on {@code executor}'s threads, never
 * from inside {@code request} or {@code cancel}; a task may be extracted from any thread, also after the release.
 */
public final class AsyncDeviceStreamExport {
    private AsyncDeviceStreamExport() {}

    /**
     * Moves the stream at {@code arrowDeviceArrayStreamPtr} and starts feeding it to {@code handlerPtr}. Pulls
     * from the stream ({@code get_schema}, {@code get_next}) on {@code executor}, one task at a time, only while
     * the consumer's demand lasts; returns at once.
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
     * @throws org.devicebridge.InvalidArgumentException if a pointer is a heap or read-only segment
     */
    public static CompletableFuture<Void> exportStream(MemorySegment arrowDeviceArrayStreamPtr,
                                                       MemorySegment handlerPtr, Executor executor) {
        requireNativeAccess();
        Objects.requireNonNull(arrowDeviceArrayStreamPtr, "arrowDeviceArrayStreamPtr");
        Objects.requireNonNull(handlerPtr, "handlerPtr");
        Objects.requireNonNull(executor, "executor");
        MemorySegment handler = handlerPtr.equals(MemorySegment.NULL) ? handlerPtr
                : handlerPtr.reinterpret(ArrowAsyncDeviceStreamHandler.sizeof());
        ValidationException badHandler = checkHandler(handler);
        AsyncProducerState st = ForeignImport.take(ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM,
                arrowDeviceArrayStreamPtr, owned -> {
                    if (badHandler != null) {
                        throw badHandler;
                    }
                    try {
                        return new AsyncProducerState(owned, handler, executor);
                    } catch (RuntimeException | Error e) {
                        refuse(handler, e);
                        throw e;
                    }
                });
        st.schedule();
        return st.done;
    }

    private static ValidationException checkHandler(MemorySegment h) {
        if (h.equals(MemorySegment.NULL)) {
            return new ValidationException(Category.NULL_POINTER, "handler",
                    "expected an ArrowAsyncDeviceStreamHandler but found NULL");
        }
        String[] names = {"on_schema", "on_next_task", "on_error", "release"};
        MemorySegment[] fns = {ArrowAsyncDeviceStreamHandler.on_schema(h), ArrowAsyncDeviceStreamHandler.on_next_task(h),
                ArrowAsyncDeviceStreamHandler.on_error(h), ArrowAsyncDeviceStreamHandler.release(h)};
        for (int i = 0; i < names.length; i++) {
            if (fns[i].equals(MemorySegment.NULL)) {
                return new ValidationException(i == 3 ? Category.RELEASED : Category.NULL_POINTER,
                        "handler." + names[i], "expected a callback but found NULL");
            }
        }
        return null;
    }

    /** A handler whose stream cannot be exported still hears why, then is released (as Arrow C++ does). */
    private static void refuse(MemorySegment handler, Throwable why) {
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            ArrowAsyncDeviceStreamHandler.on_error.invoke(ArrowAsyncDeviceStreamHandler.on_error(handler), handler,
                    Errno.EINVAL, a.allocateFrom(String.valueOf(why.getMessage())), MemorySegment.NULL);
            ArrowAsyncDeviceStreamHandler.release.invoke(ArrowAsyncDeviceStreamHandler.release(handler), handler);
        }
    }

    /** Producers not finished yet, and tasks handed out and not extracted (tests watch both). */
    static int liveExports() {
        return AsyncProducerState.PRODUCERS.size() + AsyncProducerState.TASKS.size();
    }
}
