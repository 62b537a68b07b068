package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DLPackExchange;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;

/**
 * Takes data from a Python producer (a NumPy array, a PyTorch or CuPy tensor, a Numba device array, a pyarrow
 * array, table or reader), zero-copy, through whichever protocol it speaks: the one entry for every direction
 * Python to Java ({@link PythonExport} is the other way).
 *
 * <ul>
 * <li>{@link #tensor}: a DLPack tensor, through the framework's DLPack C exchange table, {@code __dlpack__},
 *     {@code __cuda_array_interface__} or {@code __array_interface__} (in that order, the first the producer
 *     has; the exchange table only where the consumer asked for no synchronisation).</li>
 * <li>{@link #device}: where a producer's tensor lives ({@code __dlpack_device__}).</li>
 * <li>{@link #schema}, {@link #array}, {@link #stream}: Arrow's PyCapsule interface
 *     ({@code __arrow_c_schema__}, {@code __arrow_c_array__} or {@code __arrow_c_device_array__},
 *     {@code __arrow_c_stream__} or {@code __arrow_c_device_stream__}).</li>
 * </ul>
 *
 * <p>After a return the caller owns the returned handle (close it); the producer stays the caller's
 * reference. After a throw the caller owns nothing new, and what the producer exported was released.
 *
 * <p>Stateless and thread-safe: each method takes the GIL itself.
 */
public final class PythonImport {
    private PythonImport() {}

    /**
     * Takes {@code producer}'s tensor as a DLPack tensor, zero-copy, through the first protocol it speaks:
     * <ol>
     * <li>its type's DLPack C exchange table ({@code __dlpack_c_exchange_api__}), only where {@code consumer}
     *     is a stream that needs no synchronisation (-1) (the table does no stream synchronisation);</li>
     * <li>{@code __dlpack__(stream=..., max_version=(1, 3))}, the producer making {@code consumer} wait for
     *     its work (a pre-1.0 producer's legacy capsule is taken too);</li>
     * <li>{@code __cuda_array_interface__} (versions 0 to 3), {@code consumer} made to wait on the
     *     producer's stream with an event; a mask, if any, is dropped;</li>
     * <li>{@code __array_interface__} (version 3) for host memory; a mask, if any, is dropped.</li>
     * </ol>
     * The tensor keeps what the producer exported alive until it is closed.
     *
     * @param producer the Python object (borrowed: the caller keeps its reference)
     * @param consumer the stream the caller will use the data on ({@link ConsumerStream#of}, e.g.
     *        {@code ConsumerStream.of(Device.CPU, null)} on the host)
     * @param options what the caller expects of the tensor (device, pointer check)
     * @return the imported tensor, owned by the caller
     * @throws UnsupportedFeatureException if {@code producer} speaks none of these protocols, or for a valid
     *         array interface this library cannot view
     * @throws ValidationException if the tensor is malformed or not what {@code options} expects
     * @throws PythonException if the producer raised
     * @throws PythonUnavailableException where there is no Python
     */
    public static ImportedTensor tensor(PyObjectRef producer, ConsumerStream consumer, ImportOptions options) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(consumer, "consumer");
        Objects.requireNonNull(options, "options");
        if (!consumer.needsSync()) {
            DLPackExchange table = PythonExchange.find(producer);
            if (table != null) {
                return PythonExchange.importTensor(table, producer, options);
            }
        }
        if (producer.hasAttr("__dlpack__")) {
            try (PyObjectRef capsule = dlpack(producer, dlpackStream(consumer))) {
                CapsuleKind kind = Capsules.kindOf(capsule);
                if (kind == null || !kind.isDLPack()) {
                    throw new UnsupportedFeatureException("__dlpack__", "expected a DLPack capsule but found "
                            + capsule.typeName() + " named '" + Capsules.nameOf(capsule) + "'");
                }
                return Capsules.take(capsule, kind, p -> kind == CapsuleKind.DLTENSOR_VERSIONED
                        ? DLPack.importVersioned(p, options) : DLPack.importLegacy(p, options));
            }
        }
        boolean cuda = producer.hasAttr("__cuda_array_interface__");
        if (!cuda && !producer.hasAttr("__array_interface__")) {
            throw new UnsupportedFeatureException("producer", producer.typeName() + " speaks none of __dlpack__, "
                    + "__cuda_array_interface__, __array_interface__");
        }
        InterfaceArray array = cuda ? ArrayInterfaces.importCudaArrayInterface(producer, consumer, options)
                : ArrayInterfaces.importArrayInterface(producer, options);
        array.mask().ifPresent(ImportedTensor::close);
        return array.tensor();
    }

    /**
     * {@return where {@code producer}'s tensor lives: {@code producer.__dlpack_device__()}}
     *
     * @param producer the Python object (borrowed: the caller keeps its reference)
     * @throws ValidationException {@code DEVICE} for a device type DLPack 1.3 does not define
     *         or a negative ordinal
     * @throws PythonException if the producer raised (or has no {@code __dlpack_device__})
     */
    public static Device device(PyObjectRef producer) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        long type;
        long id;
        try (PyObjectRef t = producer.callMethod("__dlpack_device__");
             Gil ignored = Gil.acquire()) {
            var tuple = t.borrowAddress();
            type = Py.asLong(Py.tupleItem(tuple, 0), "device type");
            id = Py.asLong(Py.tupleItem(tuple, 1), "device id");
        }
        DeviceKind kind = DeviceKind.fromCode((int) type).filter(k -> k.code() == type).orElseThrow(() ->
                new ValidationException(Category.DEVICE,
                        "__dlpack_device__[0]", "unknown DLDeviceType " + type));
        if (id != (int) id) {
            throw new ValidationException(Category.DEVICE,
                    "__dlpack_device__[1]", "expected a device ordinal but found " + id);
        }
        return new Device(kind, (int) id);
    }

    /**
     * {@return {@code producer.__arrow_c_schema__()} imported}
     *
     * @param producer the Python object (borrowed: the caller keeps its reference)
     * @throws ValidationException if the schema is malformed
     * @throws PythonException if the producer raised
     */
    public static ImportedSchema schema(PyObjectRef producer) {
        requireNativeAccess();
        try (PyObjectRef capsule = arrowSchema(producer)) {
            return Capsules.take(capsule, CapsuleKind.ARROW_SCHEMA, ArrowC::importSchema);
        }
    }

    /**
     * Takes {@code producer}'s Arrow array through {@code __arrow_c_array__}, or, where it has only that,
     * {@code __arrow_c_device_array__} (device memory imports at {@link ValidationLevel#NONE} or
     * {@link ValidationLevel#MINIMAL} only, as {@link ArrowC} says).
     *
     * @param producer the Python object (borrowed: the caller keeps its reference)
     * @param level how much of the foreign structure to check before it is used
     * @return the imported array, owned by the caller
     * @throws UnsupportedFeatureException if {@code producer} has neither method
     * @throws ValidationException if the structs are malformed
     * @throws PythonException if the producer raised
     */
    public static ImportedArray array(PyObjectRef producer, ValidationLevel level) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(level, "level");
        boolean host = producer.hasAttr("__arrow_c_array__");
        if (!host && !producer.hasAttr("__arrow_c_device_array__")) {
            throw new UnsupportedFeatureException("producer", producer.typeName()
                    + " has neither __arrow_c_array__ nor __arrow_c_device_array__");
        }
        try (ArrowArrayCapsules pair = host ? arrowArray(producer) : arrowDeviceArray(producer);
             ImportedSchema schema = Capsules.take(pair.schema(), CapsuleKind.ARROW_SCHEMA, ArrowC::importSchema)) {
            return host ? Capsules.take(pair.array(), CapsuleKind.ARROW_ARRAY, p -> ArrowC.importArray(schema.root(), p, level))
                    : Capsules.take(pair.array(), CapsuleKind.ARROW_DEVICE_ARRAY,
                            p -> ArrowC.importDeviceArray(schema.root(), p, level));
        }
    }

    /**
     * Takes {@code producer}'s stream of batches through {@code __arrow_c_stream__}, or, where it has only
     * that, {@code __arrow_c_device_stream__}.
     *
     * @param producer the Python object (borrowed: the caller keeps its reference)
     * @return the imported stream, owned by the caller
     * @throws UnsupportedFeatureException if {@code producer} has neither method
     * @throws PythonException if the producer raised
     */
    public static ImportedArrayStream stream(PyObjectRef producer) {
        requireNativeAccess();
        Objects.requireNonNull(producer, "producer");
        if (producer.hasAttr("__arrow_c_stream__")) {
            try (PyObjectRef capsule = arrowStream(producer)) {
                return Capsules.take(capsule, CapsuleKind.ARROW_ARRAY_STREAM, ArrowC::importStream);
            }
        }
        if (!producer.hasAttr("__arrow_c_device_stream__")) {
            throw new UnsupportedFeatureException("producer", producer.typeName()
                    + " has neither __arrow_c_stream__ nor __arrow_c_device_stream__");
        }
        try (PyObjectRef capsule = arrowDeviceStream(producer)) {
            return Capsules.take(capsule, CapsuleKind.ARROW_DEVICE_ARRAY_STREAM, ArrowC::importDeviceStream);
        }
    }

    /** The {@code stream} argument of {@code __dlpack__} for {@code consumer}: None where the device has no streams. */
    static OptionalLong dlpackStream(ConsumerStream consumer) {
        DeviceKind k = consumer.device().kind();
        boolean cuda = k == DeviceKind.CUDA || k == DeviceKind.CUDA_HOST || k == DeviceKind.CUDA_MANAGED;
        boolean rocm = k == DeviceKind.ROCM || k == DeviceKind.ROCM_HOST;
        if (!consumer.needsSync()) {
            return cuda || rocm ? OptionalLong.of(-1) : OptionalLong.empty();
        }
        long handle = consumer.handle().address(); // 1, 2 or a stream on CUDA; 0 for ROCm's default stream
        return handle == 0 ? OptionalLong.empty() : OptionalLong.of(handle);
    }

    /**
     * The highest DLPack version this library asks for in {@code max_version} (DLPack 1.3, as it implements);
     * producers answer with a versioned capsule for any 1.x they support. Private: an array is mutable.
     */
    private static final int[] MAX_DLPACK_VERSION = {1, 3};

    /**
     * {@code producer.__dlpack__(stream=stream, max_version=(1, 3))}: a capsule named
     * {@code dltensor_versioned}, or {@code dltensor} from a producer that predates DLPack 1.0 (one that
     * rejects {@code max_version} with a {@code TypeError} is asked again without it, as DLPack's Python
     * specification prescribes). Use {@code Capsules.kindOf} to tell which.
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
    static PyObjectRef dlpack(PyObjectRef producer, OptionalLong stream) {
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
     * {@return {@code producer.__arrow_c_schema__()}: an {@code arrow_schema} capsule, owned by the caller after a return}
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     */
    static PyObjectRef arrowSchema(PyObjectRef producer) {
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
    static ArrowArrayCapsules arrowArray(PyObjectRef producer) {
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
    static ArrowArrayCapsules arrowArray(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return capsulePair(producer, "__arrow_c_array__", requestedSchema);
    }

    /**
     * {@link #arrowDeviceArray(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return the two capsules, owned by the caller
     */
    static ArrowArrayCapsules arrowDeviceArray(PyObjectRef producer) {
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
    static ArrowArrayCapsules arrowDeviceArray(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return capsulePair(producer, "__arrow_c_device_array__", requestedSchema);
    }

    /**
     * {@link #arrowStream(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return a new reference, owned by the caller (close it)
     */
    static PyObjectRef arrowStream(PyObjectRef producer) {
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
    static PyObjectRef arrowStream(PyObjectRef producer, PyObjectRef requestedSchema) {
        requireNativeAccess();
        return call(producer, "__arrow_c_stream__", requestedSchema);
    }

    /**
     * {@link #arrowDeviceStream(PyObjectRef, PyObjectRef)} without a requested schema.
     *
     * @param producer the Python object that produces the data (borrowed: the caller keeps its reference)
     * @return a new reference, owned by the caller (close it)
     */
    static PyObjectRef arrowDeviceStream(PyObjectRef producer) {
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
    static PyObjectRef arrowDeviceStream(PyObjectRef producer, PyObjectRef requestedSchema) {
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
