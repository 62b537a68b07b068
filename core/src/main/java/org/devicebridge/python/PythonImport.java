package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import org.devicebridge.DeviceBridgeException;

/**
 * Asks a Python producer (a NumPy array, a PyTorch or CuPy tensor, a pyarrow array, table or reader) for
 * its data through the capsule protocols; the capsules are then taken with
 * {@link Capsules#take(PyObjectRef, CapsuleKind, java.util.function.Function)}.
 *
 * <p>Each method returns new capsules the caller owns (close them once taken; a capsule closed without
 * being taken releases its data through its destructor).
 *
 * <p>Stateless and thread-safe: each method takes the GIL itself.
 */
public final class PythonImport {
    private PythonImport() {}

    /**
     * The highest DLPack version this library asks for in {@code max_version} (DLPack 1.3, as it implements);
     * producers answer with a versioned capsule for any 1.x they support. Private: an array is mutable.
     */
    private static final int[] MAX_DLPACK_VERSION = {1, 3};

    /**
     * {@code producer.__dlpack__(stream=stream, max_version=(1, 3))}: a capsule named
     * {@code dltensor_versioned}, or {@code dltensor} from a producer that predates DLPack 1.0 (one that
     * rejects {@code max_version} with a {@code TypeError} is asked again without it, as DLPack's Python
     * specification prescribes). Use {@link Capsules#kindOf} to tell which.
     *
     * @param stream the consumer's stream, which the producer makes wait for its work (for CUDA: the
     *        {@code CUstream} as an integer, 1 for the legacy default stream, 2 for the per-thread default
     *        stream, -1 for no synchronisation); empty for None (the CPU, or "use the default")
     * <p>After a return the caller owns the capsule (and, through it, the tensor until a consumer takes
     * it); after a throw the caller owns nothing new.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return a new reference, owned by the caller (close it)
     * @throws PythonException if the producer raised (BufferError for a read-only array, ...)
     */
    public static PyObjectRef dlpack(PyObjectRef producer, OptionalLong stream) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(stream, "stream");
        Map<String, Object> kwargs = new LinkedHashMap<>();
        kwargs.put("stream", stream.isPresent() ? stream.getAsLong() : null);
        kwargs.put("max_version", MAX_DLPACK_VERSION);
        try {
            return producer.callMethod("__dlpack__", List.of(), kwargs);
        } catch (PythonException e) {
            if (!"TypeError".equals(e.pythonType())) {
                throw e;
            }
            kwargs.remove("max_version");
            return producer.callMethod("__dlpack__", List.of(), kwargs);
        }
    }

    /**
     * {@return {@code producer.__dlpack_device__()} as a device id}
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @throws PythonException if the producer raised
     */
    public static PythonExport.DLDeviceId dlpackDevice(PyObjectRef producer) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        try (PyObjectRef t = producer.callMethod("__dlpack_device__");
             Gil ignored = Gil.acquire()) {
            var tuple = t.borrowAddress();
            return new PythonExport.DLDeviceId((int) Py.asLong(Py.tupleItem(tuple, 0), "device type"),
                    (int) Py.asLong(Py.tupleItem(tuple, 1), "device id"));
        }
    }

    /**
     * {@return {@code producer.__arrow_c_schema__()}: an {@code arrow_schema} capsule, owned by the caller after a return}
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     */
    public static PyObjectRef arrowSchema(PyObjectRef producer) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        return producer.callMethod("__arrow_c_schema__");
    }

    /**
     * {@link #arrowArray(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return the two capsules, owned by the caller
     */
    public static ArrowArrayCapsules arrowArray(PyObjectRef producer) {
        requireNativeAccess();
        return arrowArray(producer, null);
    }

    /**
     * {@return {@code producer.__arrow_c_array__(requested_schema)}: the {@code (arrow_schema, arrow_array)} capsules}
     *
     * <p>After a return the caller owns both capsules (each releases its struct unless taken); after a
     * throw the caller owns nothing new.
     *
     * @param requestedSchema an {@code arrow_schema} capsule to cast to (borrowed), or null for none
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @throws PythonException if the producer raised
     * @throws DeviceBridgeException if the producer returned something other than a pair
     */
    public static ArrowArrayCapsules arrowArray(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return capsulePair(producer, "__arrow_c_array__", requestedSchema);
    }

    /**
     * {@link #arrowDeviceArray(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return the two capsules, owned by the caller
     */
    public static ArrowArrayCapsules arrowDeviceArray(PyObjectRef producer) {
        requireNativeAccess();
        return arrowDeviceArray(producer, null);
    }

    /**
     * {@code producer.__arrow_c_device_array__(requested_schema)}: the
     * {@code (arrow_schema, arrow_device_array)} capsules. Ownership as in {@link #arrowArray(PyObjectRef,
     * PyObjectRef)}.
     *
     * @param requestedSchema an {@code arrow_schema} capsule to cast to (borrowed), or null for none
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return the two capsules, owned by the caller
     * @throws PythonException if the producer raised
     * @throws DeviceBridgeException if the producer returned something other than a pair
     */
    public static ArrowArrayCapsules arrowDeviceArray(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return capsulePair(producer, "__arrow_c_device_array__", requestedSchema);
    }

    /**
     * {@link #arrowStream(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return a new reference, owned by the caller (close it)
     */
    public static PyObjectRef arrowStream(PyObjectRef producer) {
        requireNativeAccess();
        return arrowStream(producer, null);
    }

    /**
     * {@return {@code producer.__arrow_c_stream__(requested_schema)}: an {@code arrow_array_stream} capsule} After a
     * return the caller owns the capsule; after a throw nothing new.
     *
     * @param requestedSchema an {@code arrow_schema} capsule to cast to (borrowed), or null for none
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @throws PythonException if the producer raised
     */
    public static PyObjectRef arrowStream(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return call(producer, "__arrow_c_stream__", requestedSchema);
    }

    /**
     * {@link #arrowDeviceStream(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return a new reference, owned by the caller (close it)
     */
    public static PyObjectRef arrowDeviceStream(PyObjectRef producer) {
        requireNativeAccess();
        return arrowDeviceStream(producer, null);
    }

    /**
     * {@code producer.__arrow_c_device_stream__(requested_schema)}: an {@code arrow_device_array_stream}
     * capsule. After a return the caller owns the capsule; after a throw nothing new.
     *
     * @param requestedSchema an {@code arrow_schema} capsule to cast to (borrowed), or null for none
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return a new reference, owned by the caller (close it)
     * @throws PythonException if the producer raised
     */
    public static PyObjectRef arrowDeviceStream(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return call(producer, "__arrow_c_device_stream__", requestedSchema);
    }

    private static PyObjectRef call(PyObjectRef producer, String method, PyObjectRef requestedSchema) {
        Objects.requireNonNull(producer, "producer");
        return producer.callMethod(method, List.of(),
                requestedSchema == null ? Map.of() : Map.of("requested_schema", requestedSchema));
    }

    private static ArrowArrayCapsules capsulePair(PyObjectRef producer, String method, PyObjectRef requestedSchema) {
        try (PyObjectRef pair = call(producer, method, requestedSchema);
             Gil ignored = Gil.acquire()) {
            var tuple = pair.borrowAddress();
            if (Py.tupleSize(tuple) != 2) {
                throw new DeviceBridgeException("expected a (schema, array) pair from " + method + " but found "
                        + Py.repr(tuple));
            }
            PyObjectRef schema = PyObjectRef.borrowed(Py.tupleItem(tuple, 0));
            try {
                return new ArrowArrayCapsules(schema, PyObjectRef.borrowed(Py.tupleItem(tuple, 1)));
            } catch (RuntimeException | Error e) {
                schema.close();
                throw e;
            }
        }
    }
}
