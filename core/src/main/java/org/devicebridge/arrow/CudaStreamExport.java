package org.devicebridge.arrow;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import org.apache.arrow.vector.types.pojo.Schema;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.generated.arrow.ArrowDeviceArray;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * A CUDA {@code ArrowDeviceArrayStream} over an iterator of {@link CudaArrowBatch}es: {@code get_next}
 * exports the next batch with {@link CudaArrow#exportDeviceArray} (its sync event recorded on the stream
 * given at export) and closes the batch (the export keeps its memory). One upcall stub per callback, made
 * once; per-stream state in a registry keyed by {@code private_data}; callbacks never throw.
 */
final class CudaStreamExport {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.arrow");
    private static final int EINVAL = 22;
    private static final int EIO = 5;
    private static final int ENOMEM = 12;

    static final ExportRegistry<State> STREAMS = new ExportRegistry<>();

    private static final FunctionDescriptor GET = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.ADDRESS);
    private static final MethodHandles.Lookup L = MethodHandles.lookup();
    static final MemorySegment GET_SCHEMA = Native.upcallStub(L, CudaStreamExport.class, "getSchema", GET);
    static final MemorySegment GET_NEXT = Native.upcallStub(L, CudaStreamExport.class, "getNext", GET);
    static final MemorySegment GET_LAST_ERROR = Native.upcallStub(L, CudaStreamExport.class, "getLastError",
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    static final MemorySegment RELEASE = Native.upcallStub(L, CudaStreamExport.class, "release",
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    private static final long SIZE = ArrowDeviceArrayStream.sizeof();
    private static final long PRIVATE = ArrowDeviceArrayStream.private_data$offset();

    /** One exported stream; callbacks on it are serialised on this object. */
    static final class State {
        final Schema schema;
        final Iterator<? extends CudaArrowBatch> batches;
        final CudaStream stream;
        final int deviceType;
        long lastError;

        State(Schema schema, Iterator<? extends CudaArrowBatch> batches, CudaStream stream, int deviceType) {
            this.schema = schema;
            this.batches = batches;
            this.stream = stream;
            this.deviceType = deviceType;
        }

        synchronized int fail(Throwable t) {
            freeError();
            String message = t.getMessage() == null ? t.toString() : t.getClass().getSimpleName() + ": " + t.getMessage();
            try {
                byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
                MemorySegment s = Native.malloc(bytes.length + 1L);
                MemorySegment.copy(bytes, 0, s, ValueLayout.JAVA_BYTE, 0, bytes.length);
                s.set(ValueLayout.JAVA_BYTE, bytes.length, (byte) 0);
                lastError = s.address();
            } catch (Throwable ignored) {
                lastError = 0; // no memory for the message: get_last_error returns NULL, as allowed
            }
            return t instanceof OutOfMemoryError ? ENOMEM : t instanceof DeviceBridgeException
                    || t instanceof IllegalArgumentException ? EINVAL : EIO;
        }

        void freeError() {
            if (lastError != 0) {
                Native.free(MemorySegment.ofAddress(lastError));
                lastError = 0;
            }
        }
    }

    private CudaStreamExport() {}

    /** Fills {@code out} (sized); nothing can fail after the registration. */
    static void export(State state, MemorySegment out) {
        long key = STREAMS.register(state);
        ArrowDeviceArrayStream.device_type(out, state.deviceType);
        ArrowDeviceArrayStream.get_schema(out, GET_SCHEMA);
        ArrowDeviceArrayStream.get_next(out, GET_NEXT);
        ArrowDeviceArrayStream.get_last_error(out, GET_LAST_ERROR);
        out.set(ValueLayout.JAVA_LONG, PRIVATE, key);
        ArrowDeviceArrayStream.release(out, RELEASE);
    }

    private static State state(MemorySegment stream) {
        return STREAMS.get(stream.reinterpret(SIZE).get(ValueLayout.JAVA_LONG, PRIVATE));
    }

    // ---- upcalls: never throw ----

    private static int getSchema(MemorySegment stream, MemorySegment out) {
        State st = null;
        try {
            st = state(stream);
            if (st == null) {
                return EINVAL;
            }
            synchronized (st) {
                ArrowExport.exportSchema(st.schema, out.reinterpret(ArrowSchema.sizeof()));
                return 0;
            }
        } catch (Throwable t) {
            return fail(st, t);
        }
    }

    private static int getNext(MemorySegment stream, MemorySegment out) {
        State st = null;
        try {
            st = state(stream);
            if (st == null) {
                return EINVAL;
            }
            synchronized (st) {
                MemorySegment o = out.reinterpret(ArrowDeviceArray.sizeof());
                if (!st.batches.hasNext()) {
                    o.fill((byte) 0); // release == NULL: the end of the stream
                    return 0;
                }
                try (CudaArrowBatch batch = st.batches.next()) {
                    if (batch.deviceType() != st.deviceType) {
                        throw new IllegalArgumentException("expected batches of device type " + st.deviceType
                                + " but found " + batch.deviceType());
                    }
                    CudaArrow.exportDeviceArray(batch, st.stream, o);
                }
                return 0;
            }
        } catch (Throwable t) {
            return fail(st, t);
        }
    }

    private static MemorySegment getLastError(MemorySegment stream) {
        try {
            State st = state(stream);
            if (st == null) {
                return MemorySegment.NULL;
            }
            synchronized (st) {
                return MemorySegment.ofAddress(st.lastError);
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: get_last_error of a CUDA device stream failed", t);
            return MemorySegment.NULL;
        }
    }

    private static void release(MemorySegment stream) {
        try {
            MemorySegment s = stream.reinterpret(SIZE);
            if (ArrowDeviceArrayStream.release(s).equals(MemorySegment.NULL)) {
                return;
            }
            State st = STREAMS.remove(s.get(ValueLayout.JAVA_LONG, PRIVATE));
            ArrowDeviceArrayStream.release(s, MemorySegment.NULL);
            if (st != null) {
                synchronized (st) {
                    st.freeError();
                    if (st.batches instanceof AutoCloseable c) {
                        c.close();
                    }
                }
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: releasing a CUDA device stream failed", t);
        }
    }

    private static int fail(State st, Throwable t) {
        try {
            return st == null ? EIO : st.fail(t);
        } catch (Throwable again) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: reporting a CUDA device stream error failed", again);
            return EIO;
        }
    }
}
