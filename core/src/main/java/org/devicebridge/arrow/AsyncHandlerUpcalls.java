package org.devicebridge.arrow;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.generated.arrow.ArrowAsyncDeviceStreamHandler;
import org.devicebridge.internal.Errno;
import org.devicebridge.internal.Native;

/**
 * The four upcalls of the {@code ArrowAsyncDeviceStreamHandler} behind an {@link AsyncDeviceStream}: each
 * finds its {@link AsyncConsumerState} by the handler's {@code private_data} and hands the call over. They run
 * on the producer's threads and never throw into native code; a call that finds no live handler (after its
 * release, or forged) is counted, logged as a warning and refused.
 */
final class AsyncHandlerUpcalls {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    /** Callbacks that found no live handler under their private_data (after release, or forged). */
    static final AtomicLong STALE_CALLS = new AtomicLong();

    private static final MethodHandles.Lookup L = MethodHandles.lookup();

    /** Made on first use, after the native-access check (a failed initialiser would last the JVM's life). */
    static final class Stubs {
        static final MemorySegment ON_SCHEMA = Native.upcallStub(L, AsyncHandlerUpcalls.class, "onSchema",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        static final MemorySegment ON_NEXT_TASK = Native.upcallStub(L, AsyncHandlerUpcalls.class, "onNextTask",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS));
        static final MemorySegment ON_ERROR = Native.upcallStub(L, AsyncHandlerUpcalls.class, "onError",
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS));
        static final MemorySegment RELEASE = Native.upcallStub(L, AsyncHandlerUpcalls.class, "release",
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

        private Stubs() {}
    }

    private AsyncHandlerUpcalls() {}

    private static AsyncConsumerState lookup(MemorySegment self, String callback) {
        MemorySegment h = self.reinterpret(ArrowAsyncDeviceStreamHandler.sizeof());
        AsyncConsumerState st = AsyncConsumerState.HANDLERS.get(h.get(ValueLayout.JAVA_LONG,
                ArrowAsyncDeviceStreamHandler.private_data$offset()));
        if (st == null) {
            STALE_CALLS.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "devicebridge: " + callback
                    + " called on an ArrowAsyncDeviceStreamHandler that was already released");
        }
        return st;
    }

    private static int onSchema(MemorySegment self, MemorySegment schemaPtr) {
        try {
            AsyncConsumerState st = lookup(self, "on_schema");
            return st == null ? Errno.EINVAL : st.schemaArrived(schemaPtr);
        } catch (Throwable t) {
            return Errno.EIO;
        }
    }

    private static int onNextTask(MemorySegment self, MemorySegment task, MemorySegment metadata) {
        try {
            AsyncConsumerState st = lookup(self, "on_next_task");
            return st == null ? Errno.EINVAL : st.taskArrived(task);
        } catch (Throwable t) {
            return Errno.EIO;
        }
    }

    private static void onError(MemorySegment self, int code, MemorySegment message, MemorySegment metadata) {
        try {
            AsyncConsumerState st = lookup(self, "on_error");
            if (st != null) {
                st.errorArrived(code, message.equals(MemorySegment.NULL) ? "" : Native.string(message));
            }
        } catch (Throwable t) {
            // nothing may cross into C; the stream keeps whatever failure it had
        }
    }

    private static void release(MemorySegment self) {
        try {
            MemorySegment h = self.reinterpret(ArrowAsyncDeviceStreamHandler.sizeof());
            AsyncConsumerState st = AsyncConsumerState.HANDLERS.remove(h.get(ValueLayout.JAVA_LONG,
                    ArrowAsyncDeviceStreamHandler.private_data$offset()));
            if (st == null) {
                STALE_CALLS.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING,
                        "devicebridge: release called on an ArrowAsyncDeviceStreamHandler that was already released");
                return;
            }
            st.releasedByProducer();
        } catch (Throwable t) {
            // nothing may cross into C
        }
    }
}
