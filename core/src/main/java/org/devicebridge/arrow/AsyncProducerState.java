package org.devicebridge.arrow;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.foreign.ForeignImport;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowAsyncDeviceStreamHandler;
import org.devicebridge.generated.arrow.ArrowAsyncProducer;
import org.devicebridge.generated.arrow.ArrowAsyncTask;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Errno;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * One export of a C device stream to a native consumer's {@code ArrowAsyncDeviceStreamHandler}: the
 * {@code ArrowAsyncProducer} this library fills, its {@code request}/{@code cancel} upcalls, the
 * {@code extract_data} upcall of its tasks, and the loop that calls the handler.
 *
 * <p>The handler is only ever called from {@link #drive()}, which runs on the caller's executor and is never
 * scheduled twice at once ({@link #running}): so calls to the handler are serialised, and {@code request}
 * (which the consumer may call from inside {@code on_schema} or {@code on_next_task}) only adds demand and
 * schedules, never calls the handler itself. A task is spent by the consumer's one {@code extract_data}: the
 * array moves out (or is released for a NULL {@code out}); a second call finds no task and returns EINVAL.
 */
final class AsyncProducerState {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    static final ExportRegistry<AsyncProducerState> PRODUCERS = new ExportRegistry<>();
    /** Tasks handed to a consumer and not extracted yet, by their private_data. */
    static final ExportRegistry<Task> TASKS = new ExportRegistry<>();
    /** Upcalls that found no producer or task under their private_data (a task extracted twice, forged). */
    static final AtomicLong STALE_CALLS = new AtomicLong();

    private static final MethodHandles.Lookup L = MethodHandles.lookup();

    static final class Stubs {
        static final MemorySegment REQUEST = Native.upcallStub(L, AsyncProducerState.class, "request",
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
        static final MemorySegment CANCEL = Native.upcallStub(L, AsyncProducerState.class, "cancel",
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
        static final MemorySegment EXTRACT = Native.upcallStub(L, AsyncProducerState.class, "extractData",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));

        private Stubs() {}
    }

    /** A batch handed to the consumer in a task, and the export that keeps its producer struct for it. */
    record Task(AsyncProducerState owner, MemorySegment array) {}

    private final MemorySegment stream; // the moved ArrowDeviceArrayStream, owned
    private final MemorySegment handler; // the consumer's, sized
    private final MemorySegment producer; // ArrowAsyncProducer followed by the one ArrowAsyncTask handed out per call
    private final MemorySegment task;
    private final DeviceKind deviceType;
    private final Executor executor;
    private final long key;
    final CompletableFuture<Void> done = new CompletableFuture<>();

    // under this
    private long demand;
    private boolean schemaSent;
    private boolean cancelled;
    private boolean running;
    private boolean finished;
    private boolean producerFreed;
    private int outstandingTasks;
    private RuntimeException requestError;

    AsyncProducerState(MemorySegment stream, MemorySegment handler, Executor executor) {
        this.stream = stream;
        this.handler = handler;
        this.executor = executor;
        this.deviceType = ArrowC.deviceType(ArrowDeviceArrayStream.device_type(stream));
        this.producer = Native.calloc(ArrowAsyncProducer.sizeof() + ArrowAsyncTask.sizeof());
        this.task = producer.asSlice(ArrowAsyncProducer.sizeof(), ArrowAsyncTask.sizeof());
        this.key = PRODUCERS.register(this);
        ArrowAsyncProducer.device_type(producer, deviceType.code());
        ArrowAsyncProducer.request(producer, Stubs.REQUEST);
        ArrowAsyncProducer.cancel(producer, Stubs.CANCEL);
        producer.set(ValueLayout.JAVA_LONG, ArrowAsyncProducer.private_data$offset(), key);
        ArrowAsyncTask.extract_data(task, Stubs.EXTRACT);
        ArrowAsyncDeviceStreamHandler.producer(handler, producer);
    }

    /** Runs {@link #drive()} on the executor unless it runs already or the export is over. */
    void schedule() {
        synchronized (this) {
            if (running || finished) {
                return;
            }
            running = true;
        }
        try {
            executor.execute(this::drive);
        } catch (Throwable t) {
            synchronized (this) {
                running = false;
            }
            finish(Errno.EIO, "the executor refused the export's work: " + t, t);
        }
    }

    private enum Step { SCHEMA, NEXT, REQUEST_ERROR, CANCELLED }

    private void drive() {
        try {
            for (;;) {
                Step step;
                synchronized (this) {
                    if (finished) {
                        running = false;
                        return;
                    } else if (requestError != null) {
                        step = Step.REQUEST_ERROR;
                    } else if (!schemaSent) {
                        step = Step.SCHEMA;
                    } else if (cancelled) {
                        step = Step.CANCELLED;
                    } else if (demand > 0) {
                        demand--;
                        step = Step.NEXT;
                    } else {
                        running = false;
                        return;
                    }
                }
                switch (step) {
                    case SCHEMA -> sendSchema();
                    case NEXT -> sendNext();
                    case REQUEST_ERROR -> finish(Errno.EINVAL, requestError.getMessage(), requestError);
                    case CANCELLED -> finish(0, null, null);
                }
            }
        } catch (Throwable t) {
            // nothing here may be lost: the consumer hears of it, then the handler is released
            synchronized (this) {
                running = false;
            }
            finish(t instanceof OutOfMemoryError ? Errno.ENOMEM : Errno.EIO, String.valueOf(t), t);
        }
    }

    private void sendSchema() {
        MemorySegment out = Native.calloc(ArrowSchema.sizeof());
        try {
            int rc = ArrowDeviceArrayStream.get_schema.invoke(ArrowDeviceArrayStream.get_schema(stream), stream, out);
            if (rc != 0) {
                finishWithStreamError("get_schema", rc);
                return;
            }
            synchronized (this) {
                schemaSent = true;
            }
            int ret = ArrowAsyncDeviceStreamHandler.on_schema.invoke(ArrowAsyncDeviceStreamHandler.on_schema(handler),
                    handler, out);
            if (ret != 0) {
                finish(0, null, new ArrowStreamException("on_schema", ret, "the consumer refused the schema"));
            }
        } finally {
            // the consumer moved it; released here only if it did not (a refusal that left it live)
            MemorySegment fn = ArrowSchema.release(out);
            if (!fn.equals(MemorySegment.NULL)) {
                ArrowSchema.release.invoke(fn, out);
            }
            Native.free(out);
        }
    }

    private void sendNext() {
        MemorySegment out = Native.calloc(ArrowDeviceArray.sizeof());
        boolean handed = false;
        try {
            int rc = ArrowDeviceArrayStream.get_next.invoke(ArrowDeviceArrayStream.get_next(stream), stream, out);
            if (rc != 0) {
                finishWithStreamError("get_next", rc);
                return;
            }
            if (ArrowArray.release(out).equals(MemorySegment.NULL)) {
                int ret = ArrowAsyncDeviceStreamHandler.on_next_task.invoke(
                        ArrowAsyncDeviceStreamHandler.on_next_task(handler), handler, MemorySegment.NULL,
                        MemorySegment.NULL);
                finish(0, null, ret == 0 ? null
                        : new ArrowStreamException("on_next_task", ret, "the consumer refused the end of the stream"));
                return;
            }
            int batchDevice = ArrowDeviceArray.device_type(out);
            if (batchDevice != deviceType.code()) {
                ValidationException e = new ValidationException(Category.DEVICE, "device_type",
                        "expected the stream's device type " + deviceType.code() + " but found " + batchDevice);
                finish(Errno.EINVAL, e.getMessage(), e);
                return;
            }
            synchronized (this) {
                outstandingTasks++;
            }
            long taskKey = TASKS.register(new Task(this, out));
            handed = true;
            task.set(ValueLayout.JAVA_LONG, ArrowAsyncTask.private_data$offset(), taskKey);
            int ret = ArrowAsyncDeviceStreamHandler.on_next_task.invoke(
                    ArrowAsyncDeviceStreamHandler.on_next_task(handler), handler, task, MemorySegment.NULL);
            if (ret != 0) {
                Task refused = TASKS.remove(taskKey); // refused: the consumer may not extract it any more
                if (refused != null) {
                    ForeignImport.Kind.ARROW_DEVICE_ARRAY.release(refused.array());
                    taskSpent();
                }
                finish(0, null, new ArrowStreamException("on_next_task", ret, "the consumer refused a task"));
            }
        } finally {
            if (!handed) {
                ForeignImport.Kind.ARROW_DEVICE_ARRAY.release(out); // calls release only if a batch was written
            }
        }
    }

    private void finishWithStreamError(String callback, int rc) {
        MemorySegment text = ArrowDeviceArrayStream.get_last_error.invoke(
                ArrowDeviceArrayStream.get_last_error(stream), stream);
        ArrowStreamException e = new ArrowStreamException(callback, rc, Native.string(text));
        finish(rc, e.getMessage(), e);
    }

    /**
     * Ends the export once: {@code on_error(code, message)} when {@code code} is non-zero, then the handler's
     * {@code release}, then the producer struct and the source stream are freed, and {@link #done} completes
     * ({@code failure} or normally).
     */
    private void finish(int code, String message, Throwable failure) {
        synchronized (this) {
            if (finished) {
                return;
            }
            finished = true;
        }
        try {
            if (code != 0) {
                try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
                    ArrowAsyncDeviceStreamHandler.on_error.invoke(ArrowAsyncDeviceStreamHandler.on_error(handler),
                            handler, code, a.allocateFrom(message == null ? "" : message), MemorySegment.NULL);
                }
            }
            ArrowAsyncDeviceStreamHandler.release.invoke(ArrowAsyncDeviceStreamHandler.release(handler), handler);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.WARNING, "devicebridge: the async consumer's handler failed", t);
        } finally {
            PRODUCERS.remove(key);
            freeProducerIfUnused();
            ForeignImport.Kind.ARROW_DEVICE_ARRAY_STREAM.release(stream);
            if (failure == null) {
                done.complete(null);
            } else {
                done.completeExceptionally(failure);
            }
        }
    }

    /**
     * Frees the producer struct once the export finished and every task it handed out was spent. Tasks keep it:
     * a consumer may call {@code request} for a task it took before the release came, after it (Arrow C++'s
     * consumer does), and then finds a finished export, not freed memory.
     */
    private void freeProducerIfUnused() {
        synchronized (this) {
            if (!finished || outstandingTasks > 0 || producerFreed) {
                return;
            }
            producerFreed = true;
        }
        Native.free(producer);
    }

    private void taskSpent() {
        synchronized (this) {
            outstandingTasks--;
        }
        freeProducerIfUnused();
    }

    // ---- upcalls: never throw ----

    private static AsyncProducerState lookup(MemorySegment self) {
        MemorySegment p = self.reinterpret(ArrowAsyncProducer.sizeof());
        AsyncProducerState st = PRODUCERS.get(p.get(ValueLayout.JAVA_LONG, ArrowAsyncProducer.private_data$offset()));
        if (st == null) {
            STALE_CALLS.incrementAndGet();
        }
        return st;
    }

    private static void request(MemorySegment self, long n) {
        try {
            AsyncProducerState st = lookup(self);
            if (st != null) {
                st.requested(n);
            }
        } catch (Throwable t) {
            // nothing may cross into C
        }
    }

    private void requested(long n) {
        synchronized (this) {
            if (finished || cancelled) {
                return; // after cancel, request is a no-op by the spec
            }
            if (n <= 0) {
                if (requestError == null) {
                    requestError = new ValidationException(Category.STREAM, "request",
                            "expected a demand n > 0 but found " + n);
                }
            } else {
                demand = demand > Long.MAX_VALUE - n ? Long.MAX_VALUE : demand + n;
            }
        }
        schedule();
    }

    private static void cancel(MemorySegment self) {
        try {
            AsyncProducerState st = lookup(self);
            if (st != null) {
                synchronized (st) {
                    st.cancelled = true;
                }
                st.schedule();
            }
        } catch (Throwable t) {
            // nothing may cross into C
        }
    }

    private static int extractData(MemorySegment self, MemorySegment out) {
        try {
            MemorySegment t = self.reinterpret(ArrowAsyncTask.sizeof());
            Task spent = TASKS.remove(t.get(ValueLayout.JAVA_LONG, ArrowAsyncTask.private_data$offset()));
            if (spent == null) {
                STALE_CALLS.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING, "devicebridge: extract_data called on a task that was "
                        + "already extracted (a task may be extracted once)");
                return Errno.EINVAL;
            }
            MemorySegment array = spent.array();
            try {
                if (out.equals(MemorySegment.NULL)) {
                    ForeignImport.Kind.ARROW_DEVICE_ARRAY.release(array); // the consumer does not want the data
                } else {
                    MemorySegment.copy(array, 0, out.reinterpret(ArrowDeviceArray.sizeof()), 0,
                            ArrowDeviceArray.sizeof());
                    Native.free(array); // moved: the consumer owns the array now
                }
            } finally {
                spent.owner().taskSpent();
            }
            return 0;
        } catch (Throwable t) {
            return Errno.EIO;
        }
    }
}
