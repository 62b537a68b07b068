package org.devicebridge.foreign;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Errno;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * The one exporter of C streams, for host and device streams alike: an {@code ArrowArrayStream} or an
 * {@code ArrowDeviceArrayStream} over a {@link Source} (Arrow Java batches from {@code arrow.java}, device
 * batches from {@code arrow.cuda}). Four upcall stubs per struct kind, made once; per-stream state in one
 * {@link ExportRegistry} keyed by {@code private_data}; one errno rule and one last-error slot.
 *
 * <p>Callbacks never throw: a failure of the source becomes an errno returned by {@code get_schema} /
 * {@code get_next} ({@link Errno#ENOMEM} for an {@link OutOfMemoryError}, {@link Errno#EINVAL} for this
 * library's exceptions and {@link IllegalArgumentException}, {@link Errno#EIO} otherwise) and a message
 * returned by {@code get_last_error}; the error is sticky, as the C Stream Interface lets a consumer assume.
 * Callbacks on one stream are serialised.
 */
public final class StreamExport {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");

    private static final ExportRegistry<State> STREAMS = new ExportRegistry<>();
    /** Release calls that found no stream under their private_data (a second release, a forged struct). */
    private static final AtomicLong STALE_RELEASES = new AtomicLong();

    private static final FunctionDescriptor GET = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.ADDRESS);
    private static final FunctionDescriptor ERROR = FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS);
    private static final FunctionDescriptor RELEASE = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);

    private static final MethodHandles.Lookup L = MethodHandles.lookup();
    /**
     * The callback stubs and struct sizes, made on first use (an export, after the native-access check): a class
     * whose initialiser threw (the stubs and the generated layouts make restricted calls) would fail with
     * {@code NoClassDefFoundError} for the JVM's life.
     */
    private static final class Stubs {
        static final MemorySegment GET_SCHEMA = Native.upcallStub(L, StreamExport.class, "getSchema", GET);
        static final MemorySegment GET_NEXT = Native.upcallStub(L, StreamExport.class, "getNext", GET);
        static final MemorySegment GET_LAST_ERROR = Native.upcallStub(L, StreamExport.class, "getLastError", ERROR);
        static final MemorySegment RELEASE_STREAM = Native.upcallStub(L, StreamExport.class, "release", RELEASE);
        static final MemorySegment DEVICE_GET_SCHEMA = Native.upcallStub(L, StreamExport.class,
                "deviceGetSchema", GET);
        static final MemorySegment DEVICE_GET_NEXT = Native.upcallStub(L, StreamExport.class, "deviceGetNext", GET);
        static final MemorySegment DEVICE_GET_LAST_ERROR = Native.upcallStub(L, StreamExport.class,
                "deviceGetLastError", ERROR);
        static final MemorySegment DEVICE_RELEASE_STREAM = Native.upcallStub(L, StreamExport.class,
                "deviceRelease", RELEASE);

        static final long STREAM_SIZE = ArrowArrayStream.sizeof();
        static final long DEVICE_STREAM_SIZE = ArrowDeviceArrayStream.sizeof();
        static final long STREAM_PRIVATE = ArrowArrayStream.private_data$offset();
        static final long STREAM_RELEASE = ArrowArrayStream.release$offset();
        static final long DEVICE_PRIVATE = ArrowDeviceArrayStream.private_data$offset();
        static final long DEVICE_RELEASE = ArrowDeviceArrayStream.release$offset();

        private Stubs() {}
    }

    private StreamExport() {}

    /**
     * Where a stream's schema and batches come from. Called on the consumer's thread, one call at a time per
     * stream; whatever a method throws becomes the stream's error.
     */
    public interface Source {
        /** Exports the schema into {@code out} (an {@code ArrowSchema}, sized); the consumer owns it after a return. */
        void exportSchema(MemorySegment out) throws Exception;

        /**
         * Exports the next batch into {@code out} (sized: an {@code ArrowArray} for a host stream, an
         * {@code ArrowDeviceArray} for a device stream) and returns {@code true}; returns {@code false} at the
         * end of the stream without writing. The consumer owns a written batch.
         */
        boolean exportNext(MemorySegment out) throws Exception;

        /** Frees what the source holds; called once, when the consumer releases the stream. */
        void close() throws Exception;
    }

    /**
     * Fills {@code out} (an {@code ArrowArrayStream}, sized) with a new stream over {@code source}. Nothing can
     * fail after the registration: after a return the stream owns {@code source}; after a throw the caller
     * still owns it and {@code out} is untouched.
     */
    public static void exportHost(Source source, MemorySegment out) {
        Objects.requireNonNull(source, "source");
        long key = STREAMS.register(new State(source));
        ArrowArrayStream.get_schema(out, Stubs.GET_SCHEMA);
        ArrowArrayStream.get_next(out, Stubs.GET_NEXT);
        ArrowArrayStream.get_last_error(out, Stubs.GET_LAST_ERROR);
        out.set(ValueLayout.JAVA_LONG, Stubs.STREAM_PRIVATE, key);
        ArrowArrayStream.release(out, Stubs.RELEASE_STREAM);
    }

    /**
     * Fills {@code out} (an {@code ArrowDeviceArrayStream}, sized) with a new stream of {@code deviceType} over
     * {@code source}. Ownership as in {@link #exportHost}.
     */
    public static void exportDevice(Source source, DeviceKind deviceType, MemorySegment out) {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(deviceType, "deviceType");
        long key = STREAMS.register(new State(source));
        ArrowDeviceArrayStream.device_type(out, deviceType.code());
        ArrowDeviceArrayStream.get_schema(out, Stubs.DEVICE_GET_SCHEMA);
        ArrowDeviceArrayStream.get_next(out, Stubs.DEVICE_GET_NEXT);
        ArrowDeviceArrayStream.get_last_error(out, Stubs.DEVICE_GET_LAST_ERROR);
        out.set(ValueLayout.JAVA_LONG, Stubs.DEVICE_PRIVATE, key);
        ArrowDeviceArrayStream.release(out, Stubs.DEVICE_RELEASE_STREAM);
    }

    /** Exported streams not released yet (tests assert this returns to its baseline). */
    public static int liveStreams() {
        return STREAMS.size();
    }

    /** Release calls that found no stream to release since the JVM started (tests assert it does not grow). */
    public static long staleReleases() {
        return STALE_RELEASES.get();
    }

    /** One exported stream. Callbacks on one stream are serialised on this object. */
    private static final class State {
        final Source source;
        long lastError; // malloc'ed C string or 0
        int errorCode;

        State(Source source) {
            this.source = source;
        }

        synchronized int fail(Throwable t) {
            errorCode = t instanceof OutOfMemoryError ? Errno.ENOMEM
                    : t instanceof DeviceBridgeException || t instanceof IllegalArgumentException ? Errno.EINVAL
                    : Errno.EIO;
            String message = t.getMessage() == null ? t.toString() : t.getClass().getSimpleName() + ": " + t.getMessage();
            setError(message);
            return errorCode;
        }

        void setError(String message) {
            freeError();
            try {
                byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
                MemorySegment s = Native.malloc(bytes.length + 1L);
                MemorySegment.copy(bytes, 0, s, ValueLayout.JAVA_BYTE, 0, bytes.length);
                s.set(ValueLayout.JAVA_BYTE, bytes.length, (byte) 0);
                lastError = s.address();
            } catch (Throwable t) {
                lastError = 0; // no memory for the message: get_last_error returns NULL, as allowed
            }
        }

        void freeError() {
            if (lastError != 0) {
                Native.free(MemorySegment.ofAddress(lastError));
                lastError = 0;
            }
        }
    }

    // ---- upcalls: never throw ----

    private static State state(MemorySegment stream, boolean device) {
        long off = device ? Stubs.DEVICE_PRIVATE : Stubs.STREAM_PRIVATE;
        MemorySegment s = stream.reinterpret(device ? Stubs.DEVICE_STREAM_SIZE : Stubs.STREAM_SIZE);
        return STREAMS.get(s.get(ValueLayout.JAVA_LONG, off));
    }

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        return doGetSchema(stream, out, false);
    }

    private static int deviceGetSchema(MemorySegment stream, MemorySegment out) {
        return doGetSchema(stream, out, true);
    }

    private static int doGetSchema(MemorySegment stream, MemorySegment out, boolean device) {
        return call(stream, out, device, "get_schema: the output ArrowSchema pointer is NULL", (source, o) -> {
            source.exportSchema(o.reinterpret(ArrowSchema.sizeof()));
        });
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        return doGetNext(stream, out, false);
    }

    private static int deviceGetNext(MemorySegment stream, MemorySegment out) {
        return doGetNext(stream, out, true);
    }

    private static int doGetNext(MemorySegment stream, MemorySegment out, boolean device) {
        return call(stream, out, device, "get_next: the output array pointer is NULL", (source, o) -> {
            MemorySegment array = o.reinterpret(device ? ArrowDeviceArray.sizeof() : ArrowArray.sizeof());
            if (!source.exportNext(array)) {
                array.fill((byte) 0); // end of stream: a released array (release == NULL)
            }
        });
    }

    /** The body of {@code get_schema} or {@code get_next}: fills {@code out} from {@code source}. */
    @FunctionalInterface
    private interface Callback {
        void run(Source source, MemorySegment out) throws Exception;
    }

    /**
     * Runs {@code body} for the stream at {@code stream}, serialised on it: an unknown stream is
     * {@code EINVAL}, a sticky error is returned again, a NULL {@code out} is {@code EINVAL} with
     * {@code nullOut} as the last error, and whatever {@code body} throws becomes the stream's error.
     */
    private static int call(MemorySegment stream, MemorySegment out, boolean device, String nullOut, Callback body) {
        State st = null;
        try {
            st = state(stream, device);
            if (st == null) {
                return Errno.EINVAL;
            }
            synchronized (st) {
                if (st.errorCode != 0) {
                    return st.errorCode;
                }
                if (out.equals(MemorySegment.NULL)) {
                    st.setError(nullOut);
                    return Errno.EINVAL;
                }
                body.run(st.source, out);
                return 0;
            }
        } catch (Throwable t) {
            return failed(st, t);
        }
    }

    private static int failed(State st, Throwable t) {
        try {
            if (st == null) {
                LOG.log(System.Logger.Level.ERROR, "devicebridge: exported stream callback failed", t);
                return Errno.EIO;
            }
            LOG.log(System.Logger.Level.DEBUG, "devicebridge: exported stream reports an error", t);
            return st.fail(t);
        } catch (Throwable t2) {
            return Errno.EIO;
        }
    }

    private static MemorySegment getLastError(MemorySegment stream) {
        return doGetLastError(stream, false);
    }

    private static MemorySegment deviceGetLastError(MemorySegment stream) {
        return doGetLastError(stream, true);
    }

    private static MemorySegment doGetLastError(MemorySegment stream, boolean device) {
        try {
            State st = state(stream, device);
            if (st == null) {
                return MemorySegment.NULL;
            }
            synchronized (st) {
                return st.lastError == 0 ? MemorySegment.NULL : MemorySegment.ofAddress(st.lastError);
            }
        } catch (Throwable t) {
            return MemorySegment.NULL;
        }
    }

    private static void release(MemorySegment stream) {
        doRelease(stream, false);
    }

    private static void deviceRelease(MemorySegment stream) {
        doRelease(stream, true);
    }

    private static void doRelease(MemorySegment stream, boolean device) {
        try {
            MemorySegment s = stream.reinterpret(device ? Stubs.DEVICE_STREAM_SIZE : Stubs.STREAM_SIZE);
            State st = STREAMS.remove(s.get(ValueLayout.JAVA_LONG, device ? Stubs.DEVICE_PRIVATE : Stubs.STREAM_PRIVATE));
            s.set(ValueLayout.JAVA_LONG, device ? Stubs.DEVICE_RELEASE : Stubs.STREAM_RELEASE, 0L);
            if (st == null) {
                STALE_RELEASES.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING,
                        "devicebridge: release called on an exported stream that was already released");
                return;
            }
            synchronized (st) {
                st.freeError();
                try {
                    st.source.close();
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, "devicebridge: closing the source of an exported stream failed", t);
                }
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing an exported stream failed", t);
        }
    }
}
