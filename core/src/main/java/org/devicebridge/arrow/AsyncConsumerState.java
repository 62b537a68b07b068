package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.arrow.ArrowAsyncDeviceStreamHandler;
import org.devicebridge.generated.arrow.ArrowAsyncProducer;
import org.devicebridge.generated.arrow.ArrowAsyncTask;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Errno;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * The state behind one {@link AsyncDeviceStream}: the {@code ArrowAsyncDeviceStreamHandler} this library
 * fills, its four upcalls, the queue of tasks the producer handed over and the demand account. Upcalls come on
 * the producer's threads ({@link AsyncHandlerUpcalls}) and never throw: a protocol violation becomes the stream's sticky failure (thrown by
 * the consumer's next call) and a non-zero return, which tells the producer to stop and release.
 *
 * <p>Two monitors, never nested: this object guards the queue and the flags; {@link #producerLock} guards
 * calls into the producer ({@code request}, {@code cancel}), so that none runs once the producer released the
 * handler (after which its struct may be gone).
 */
final class AsyncConsumerState {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    static final ExportRegistry<AsyncConsumerState> HANDLERS = new ExportRegistry<>();

    /** A task copied out of the producer's struct, which lives only for the {@code on_next_task} call. */
    record Task(MemorySegment extractData, MemorySegment privateData) {}

    final int window;
    final MemorySegment handler;
    final long key;
    private final Object producerLock = new Object();
    private boolean producerGone; // under producerLock: the producer released the handler

    // under this
    private final ArrayDeque<Task> queue = new ArrayDeque<>();
    private SchemaNode schema;
    private MemorySegment producer;
    private DeviceKind deviceType;
    private long requested;
    private long received;
    private boolean ended;
    private boolean released;
    private boolean cancelled;
    private boolean closed;
    private boolean handedOver;
    private RuntimeException failure;
    private String errorMessage = "";

    AsyncConsumerState(int window) {
        this.window = window;
        this.handler = Native.calloc(ArrowAsyncDeviceStreamHandler.sizeof());
        this.key = HANDLERS.register(this);
        ArrowAsyncDeviceStreamHandler.on_schema(handler, AsyncHandlerUpcalls.Stubs.ON_SCHEMA);
        ArrowAsyncDeviceStreamHandler.on_next_task(handler, AsyncHandlerUpcalls.Stubs.ON_NEXT_TASK);
        ArrowAsyncDeviceStreamHandler.on_error(handler, AsyncHandlerUpcalls.Stubs.ON_ERROR);
        ArrowAsyncDeviceStreamHandler.release(handler, AsyncHandlerUpcalls.Stubs.RELEASE);
        handler.set(ValueLayout.JAVA_LONG, ArrowAsyncDeviceStreamHandler.private_data$offset(), key);
    }

    // ---- the consumer's side (the handle's threads) ----

    synchronized MemorySegment handOver() {
        if (released) {
            throw new org.devicebridge.HandleClosedException("the ArrowAsyncDeviceStreamHandler was already "
                    + "released by its producer");
        }
        handedOver = true;
        return handler;
    }

    synchronized SchemaNode awaitSchema(long deadlineNanos) throws InterruptedException {
        while (schema == null) {
            if (failure != null) {
                throw failure;
            }
            if (released || cancelled || closed) {
                throw new ArrowStreamException("on_schema", Errno.ECANCELED, "the stream ended before its schema came");
            }
            waitUntil(deadlineNanos, "schema");
        }
        return schema;
    }

    /** The next task and the schema, or {@code null} at the end (or after cancel). */
    synchronized Task take(long deadlineNanos) throws InterruptedException {
        for (;;) {
            if (closed || cancelled) {
                return null;
            }
            if (failure != null) {
                throw failure;
            }
            Task t = queue.poll();
            if (t != null) {
                return t;
            }
            if (ended || released) {
                return null;
            }
            waitUntil(deadlineNanos, "batch");
        }
    }

    private void waitUntil(long deadlineNanos, String what) throws InterruptedException {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new ArrowStreamException("next", Errno.ETIMEDOUT, "no " + what
                    + " came before the timeout; the stream is still live: call again, cancel or close it");
        }
        java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
    }

    synchronized SchemaNode schema() {
        return schema;
    }

    synchronized DeviceKind deviceType() {
        return deviceType;
    }

    synchronized String errorMessage() {
        return errorMessage;
    }

    /** Records {@code e} as the stream's failure unless one is already recorded; returns the one kept. */
    synchronized RuntimeException fail(RuntimeException e) {
        if (failure == null) {
            failure = e;
        }
        notifyAll();
        return failure;
    }

    /** Keeps the window full: one more batch for the one just taken, unless the stream is over. */
    void replenish() {
        synchronized (this) {
            if (ended || released || cancelled || closed || failure != null) {
                return;
            }
            requested++;
        }
        callProducer(false, 1);
    }

    void cancel() {
        List<Task> drop;
        boolean call;
        synchronized (this) {
            if (cancelled || closed) {
                return;
            }
            cancelled = true;
            drop = drainQueue();
            call = producer != null && !ended && !released;
            notifyAll();
        }
        discardAll(drop);
        if (call) {
            callProducer(true, 0);
        }
    }

    /** The handle's release step: cancel, drop queued tasks, free the handler if no producer holds it. */
    void close() {
        List<Task> drop;
        boolean call;
        boolean freeNow;
        synchronized (this) {
            if (closed) {
                return;
            }
            call = producer != null && !ended && !released && !cancelled;
            closed = true;
            drop = drainQueue();
            freeNow = !handedOver && !released;
            notifyAll();
        }
        discardAll(drop);
        if (call) {
            callProducer(true, 0);
        }
        if (freeNow && HANDLERS.remove(key) != null) {
            Native.free(handler);
        }
    }

    private List<Task> drainQueue() {
        List<Task> drop = new ArrayList<>(queue);
        queue.clear();
        return drop;
    }

    private static void discardAll(List<Task> tasks) {
        for (Task t : tasks) {
            discard(t);
        }
    }

    /**
     * Calls the task's {@code extract_data} into {@code out} (an {@code ArrowDeviceArray}, or NULL to drop the
     * data); the task is spent after this call, whatever it returns.
     */
    static int extract(Task t, MemorySegment out) {
        MemorySegment self = Native.calloc(ArrowAsyncTask.sizeof());
        try {
            ArrowAsyncTask.extract_data(self, t.extractData());
            ArrowAsyncTask.private_data(self, t.privateData());
            return ArrowAsyncTask.extract_data.invoke(t.extractData(), self, out);
        } finally {
            Native.free(self);
        }
    }

    /** Lets the producer clean up a task whose data nobody will read (the spec's {@code extract_data(task, NULL)}). */
    static void discard(Task t) {
        int rc = extract(t, MemorySegment.NULL);
        if (rc != 0) {
            LOG.log(System.Logger.Level.DEBUG, "devicebridge: dropping an async task: extract_data returned " + rc);
        }
    }

    private void callProducer(boolean cancel, long n) {
        synchronized (producerLock) {
            if (producerGone) {
                return;
            }
            MemorySegment p;
            synchronized (this) {
                p = producer;
            }
            if (cancel) {
                ArrowAsyncProducer.cancel.invoke(ArrowAsyncProducer.cancel(p), p);
            } else {
                ArrowAsyncProducer.request.invoke(ArrowAsyncProducer.request(p), p, n);
            }
        }
    }

    // ---- what the producer's calls do (AsyncHandlerUpcalls calls these) ----

    int schemaArrived(MemorySegment schemaPtr) {
        MemorySegment p = ArrowAsyncDeviceStreamHandler.producer(handler);
        synchronized (this) {
            if (schema != null || ended) {
                return refuse(schemaPtr, "on_schema", "expected on_schema once but found a second call");
            }
            if (closed || cancelled) {
                return refuse(schemaPtr, null, null);
            }
        }
        if (schemaPtr.equals(MemorySegment.NULL)) {
            fail(new ValidationException(Category.NULL_POINTER, "on_schema.stream_schema",
                    "expected an ArrowSchema but found NULL"));
            return Errno.EINVAL;
        }
        try {
            if (p.equals(MemorySegment.NULL)) {
                return refuse(schemaPtr, "producer", "expected the producer to be set before on_schema but found NULL");
            }
            MemorySegment prod = p.reinterpret(ArrowAsyncProducer.sizeof());
            if (ArrowAsyncProducer.request(prod).equals(MemorySegment.NULL)
                    || ArrowAsyncProducer.cancel(prod).equals(MemorySegment.NULL)) {
                return refuse(schemaPtr, "producer", "expected request and cancel callbacks but found NULL");
            }
            DeviceKind type = ArrowC.deviceType(ArrowAsyncProducer.device_type(prod));
            SchemaNode root;
            try (ImportedSchema s = ArrowC.importSchema(schemaPtr.reinterpret(ArrowSchema.sizeof()))) {
                root = s.root();
            }
            synchronized (this) {
                producer = prod;
                deviceType = type;
                schema = root;
                requested = window; // counted before the call: a task may come before request returns
                notifyAll();
            }
            callProducer(false, window);
            return 0;
        } catch (ValidationException e) {
            fail(e);
            return Errno.EINVAL;
        }
    }

    /** Releases the producer's schema, records the violation (when {@code path} is set) and refuses. */
    private int refuse(MemorySegment schemaPtr, String path, String message) {
        if (!schemaPtr.equals(MemorySegment.NULL)) {
            MemorySegment s = schemaPtr.reinterpret(ArrowSchema.sizeof());
            MemorySegment fn = ArrowSchema.release(s);
            if (!fn.equals(MemorySegment.NULL)) {
                ArrowSchema.release.invoke(fn, s);
            }
        }
        if (path != null) {
            fail(new ValidationException(Category.STREAM, path, message));
        }
        return Errno.EINVAL;
    }

    int taskArrived(MemorySegment taskPtr) {
        Task task = null;
        if (!taskPtr.equals(MemorySegment.NULL)) {
            MemorySegment t = taskPtr.reinterpret(ArrowAsyncTask.sizeof());
            task = new Task(ArrowAsyncTask.extract_data(t), ArrowAsyncTask.private_data(t));
            if (task.extractData().equals(MemorySegment.NULL)) {
                fail(new ValidationException(Category.NULL_POINTER, "on_next_task.task.extract_data",
                        "expected a callback but found NULL"));
                return Errno.EINVAL;
            }
        }
        String violation = null;
        synchronized (this) {
            if (ended) {
                violation = "expected no on_next_task after the end of the stream (a NULL task) but found one";
            } else if (schema == null && !closed && !cancelled) {
                violation = "expected on_schema before on_next_task but found on_next_task first";
            } else if (task == null) {
                ended = true;
                notifyAll();
                return 0;
            } else if (closed || cancelled) {
                violation = null; // a task the producer had in flight when it was told to stop: handed back below
            } else if (failure != null) {
                violation = ""; // the stream failed already: refused, with nothing new to record
            } else if (received >= requested) {
                violation = "expected at most " + requested + " tasks (the demand requested) but found task "
                        + (received + 1);
            } else {
                received++;
                queue.add(task);
                notifyAll();
                return 0;
            }
        }
        if (violation == null) {
            discard(task); // accepted but unwanted: the producer cleans up in extract_data(task, NULL)
            return 0;
        }
        // Refused: the task stays the producer's, which frees it after the non-zero return (as Arrow C++ does).
        if (!violation.isEmpty()) {
            fail(new ValidationException(Category.STREAM, "on_next_task", violation));
        }
        return Errno.EINVAL;
    }

    synchronized void errorArrived(int code, String message) {
        errorMessage = message;
        if (ended) {
            fail(new ValidationException(Category.STREAM, "on_error", "expected no on_error after the end of the "
                    + "stream but found one (code " + code + Errno.nameSuffix(code) + ": " + message + ")"));
        } else {
            fail(new ArrowStreamException("on_error", code, message));
        }
    }

    void releasedByProducer() {
        synchronized (producerLock) {
            producerGone = true;
        }
        synchronized (this) {
            released = true;
            if (!ended && failure == null && !cancelled && !closed) {
                failure = new ValidationException(Category.STREAM, "release", "expected the end of the stream (a "
                        + "NULL task) or on_error before release but found neither");
            }
            notifyAll();
        }
        ArrowAsyncDeviceStreamHandler.release(handler, MemorySegment.NULL);
        Native.free(handler);
    }
}
