package org.devicebridge.arrow;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * Exported ArrowArrayStream / ArrowDeviceArrayStream: the state of each stream, and its four callbacks
 * per struct kind (one upcall stub each, made once). Callbacks never throw: a failure of the source (an
 * {@link ArrowReader} that throws, a batch that cannot be exported) becomes an errno returned by
 * {@code get_schema}/{@code get_next} and a message returned by {@code get_last_error}; the error is
 * sticky, as the C Stream Interface lets a consumer assume.
 */
final class ExportStreams {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    static final int EIO = 5;
    static final int ENOMEM = 12;
    static final int EINVAL = 22;
    static final int ARROW_DEVICE_CPU = 1;

    static final ExportRegistry<State> STREAMS = new ExportRegistry<>();
    static final AtomicLong STREAM_RELEASES = new AtomicLong();

    private static final FunctionDescriptor GET = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.ADDRESS);
    private static final FunctionDescriptor ERROR = FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS);
    private static final FunctionDescriptor RELEASE = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);

    private static final MethodHandles.Lookup L = MethodHandles.lookup();
    static final MemorySegment GET_SCHEMA = Native.upcallStub(L, ExportStreams.class, "getSchema", GET);
    static final MemorySegment GET_NEXT = Native.upcallStub(L, ExportStreams.class, "getNext", GET);
    static final MemorySegment GET_LAST_ERROR = Native.upcallStub(L, ExportStreams.class, "getLastError", ERROR);
    static final MemorySegment RELEASE_STREAM = Native.upcallStub(L, ExportStreams.class, "release", RELEASE);
    static final MemorySegment DEVICE_GET_SCHEMA = Native.upcallStub(L, ExportStreams.class, "deviceGetSchema", GET);
    static final MemorySegment DEVICE_GET_NEXT = Native.upcallStub(L, ExportStreams.class, "deviceGetNext", GET);
    static final MemorySegment DEVICE_GET_LAST_ERROR = Native.upcallStub(L, ExportStreams.class,
            "deviceGetLastError", ERROR);
    static final MemorySegment DEVICE_RELEASE_STREAM = Native.upcallStub(L, ExportStreams.class, "deviceRelease",
            RELEASE);

    static final long STREAM_SIZE = ArrowArrayStream.sizeof();
    static final long DEVICE_STREAM_SIZE = ArrowDeviceArrayStream.sizeof();
    private static final long STREAM_PRIVATE = ArrowArrayStream.private_data$offset();
    private static final long STREAM_RELEASE = ArrowArrayStream.release$offset();
    private static final long DEVICE_PRIVATE = ArrowDeviceArrayStream.private_data$offset();
    private static final long DEVICE_RELEASE = ArrowDeviceArrayStream.release$offset();

    private ExportStreams() {}

    /** Where a stream's batches come from. */
    interface Source {
        Schema schema() throws Exception;

        /** The next batch, or {@code null} at the end. */
        VectorSchemaRoot next() throws Exception;

        DictionaryProvider provider();

        void close() throws Exception;
    }

    static Source of(ArrowReader reader) {
        return new Source() {
            @Override
            public Schema schema() throws Exception {
                return reader.getVectorSchemaRoot().getSchema();
            }

            @Override
            public VectorSchemaRoot next() throws Exception {
                return reader.loadNextBatch() ? reader.getVectorSchemaRoot() : null;
            }

            @Override
            public DictionaryProvider provider() {
                return reader;
            }

            @Override
            public void close() throws Exception {
                reader.close();
            }
        };
    }

    static Source of(Schema schema, Iterator<? extends VectorSchemaRoot> batches, DictionaryProvider provider) {
        return new Source() {
            @Override
            public Schema schema() {
                return schema;
            }

            @Override
            public VectorSchemaRoot next() {
                return batches.hasNext() ? batches.next() : null;
            }

            @Override
            public DictionaryProvider provider() {
                return provider;
            }

            @Override
            public void close() throws Exception {
                if (batches instanceof AutoCloseable c) {
                    c.close();
                }
            }
        };
    }

    /** One exported stream. Callbacks on one stream are serialised on this object. */
    static final class State {
        final Source source;
        final boolean device;
        long lastError; // malloc'ed C string or 0
        int errorCode;

        State(Source source, boolean device) {
            this.source = source;
            this.device = device;
        }

        synchronized int fail(Throwable t) {
            errorCode = t instanceof OutOfMemoryError ? ENOMEM
                    : t instanceof DeviceBridgeException ? EINVAL : EIO;
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

    /** Fills {@code out} (already sized) with a new stream over {@code source}; nothing can fail after registration. */
    static void export(Source source, boolean device, MemorySegment out) {
        long key = STREAMS.register(new State(source, device));
        if (device) {
            ArrowDeviceArrayStream.device_type(out, ARROW_DEVICE_CPU);
            ArrowDeviceArrayStream.get_schema(out, DEVICE_GET_SCHEMA);
            ArrowDeviceArrayStream.get_next(out, DEVICE_GET_NEXT);
            ArrowDeviceArrayStream.get_last_error(out, DEVICE_GET_LAST_ERROR);
            out.set(ValueLayout.JAVA_LONG, DEVICE_PRIVATE, key);
            ArrowDeviceArrayStream.release(out, DEVICE_RELEASE_STREAM);
        } else {
            ArrowArrayStream.get_schema(out, GET_SCHEMA);
            ArrowArrayStream.get_next(out, GET_NEXT);
            ArrowArrayStream.get_last_error(out, GET_LAST_ERROR);
            out.set(ValueLayout.JAVA_LONG, STREAM_PRIVATE, key);
            ArrowArrayStream.release(out, RELEASE_STREAM);
        }
    }

    // ---- upcalls: never throw ----

    private static State state(MemorySegment stream, boolean device) {
        long off = device ? DEVICE_PRIVATE : STREAM_PRIVATE;
        MemorySegment s = stream.reinterpret(device ? DEVICE_STREAM_SIZE : STREAM_SIZE);
        return STREAMS.get(s.get(ValueLayout.JAVA_LONG, off));
    }

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        return doGetSchema(stream, out, false);
    }

    private static int deviceGetSchema(MemorySegment stream, MemorySegment out) {
        return doGetSchema(stream, out, true);
    }

    private static int doGetSchema(MemorySegment stream, MemorySegment out, boolean device) {
        State st = null;
        try {
            st = state(stream, device);
            if (st == null) {
                return EINVAL;
            }
            synchronized (st) {
                if (st.errorCode != 0) {
                    return st.errorCode;
                }
                if (out.equals(MemorySegment.NULL)) {
                    st.setError("get_schema: the output ArrowSchema pointer is NULL");
                    return EINVAL;
                }
                ExportSchemaWriter.export(ExportSchemaWriter.asStructField(st.source.schema()),
                        st.source.provider(), out.reinterpret(ExportRuntime.SCHEMA_SIZE));
                return 0;
            }
        } catch (Throwable t) {
            return failed(st, t);
        }
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        return doGetNext(stream, out, false);
    }

    private static int deviceGetNext(MemorySegment stream, MemorySegment out) {
        return doGetNext(stream, out, true);
    }

    private static int doGetNext(MemorySegment stream, MemorySegment out, boolean device) {
        State st = null;
        try {
            st = state(stream, device);
            if (st == null) {
                return EINVAL;
            }
            synchronized (st) {
                if (st.errorCode != 0) {
                    return st.errorCode;
                }
                if (out.equals(MemorySegment.NULL)) {
                    st.setError("get_next: the output array pointer is NULL");
                    return EINVAL;
                }
                MemorySegment o = out.reinterpret(device ? ArrowDeviceArray.sizeof() : ExportRuntime.ARRAY_SIZE);
                VectorSchemaRoot batch = st.source.next();
                if (batch == null) {
                    // end of stream: a released array
                    o.set(ValueLayout.JAVA_LONG, ExportRuntime.ARRAY_RELEASE_OFF, 0L);
                    return 0;
                }
                if (device) {
                    ArrowExport.exportDeviceArrayInto(batch, st.source.provider(), o);
                } else {
                    ExportArrayWriter.exportRoot(batch, st.source.provider(), o);
                }
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
                return EIO;
            }
            LOG.log(System.Logger.Level.DEBUG, "devicebridge: exported stream reports an error", t);
            return st.fail(t);
        } catch (Throwable t2) {
            return EIO;
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
            MemorySegment s = stream.reinterpret(device ? DEVICE_STREAM_SIZE : STREAM_SIZE);
            State st = STREAMS.remove(s.get(ValueLayout.JAVA_LONG, device ? DEVICE_PRIVATE : STREAM_PRIVATE));
            s.set(ValueLayout.JAVA_LONG, device ? DEVICE_RELEASE : STREAM_RELEASE, 0L);
            if (st == null) {
                ExportRuntime.STALE_RELEASES.incrementAndGet();
                LOG.log(System.Logger.Level.WARNING,
                        "devicebridge: release called on an exported stream that was already released");
                return;
            }
            STREAM_RELEASES.incrementAndGet();
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
