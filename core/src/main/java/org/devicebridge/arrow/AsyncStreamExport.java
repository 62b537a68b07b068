package org.devicebridge.arrow;

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
 * The producer side of the Arrow C async device stream, behind {@link AsyncDeviceStream#export}: checks the
 * handler, moves the stream and starts the {@link AsyncProducerState} that feeds it.
 */
final class AsyncStreamExport {
    private AsyncStreamExport() {}

    /** {@link AsyncDeviceStream#export}, whose Javadoc says what it does and who owns what. */
    static CompletableFuture<Void> exportStream(MemorySegment arrowDeviceArrayStreamPtr, MemorySegment handlerPtr,
                                                Executor executor) {
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
