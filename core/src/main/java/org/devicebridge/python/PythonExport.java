package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.TensorSpec;

/**
 * Builds a Python object that speaks the DLPack and Arrow PyCapsule protocols for data held in Java:
 * {@code numpy.from_dlpack(obj)}, {@code torch.from_dlpack(obj)}, {@code pyarrow.array(obj)},
 * {@code pyarrow.RecordBatchReader.from_stream(obj)} call its {@code __dlpack__}, {@code __dlpack_device__},
 * {@code __arrow_c_schema__}, {@code __arrow_c_array__}, {@code __arrow_c_device_array__},
 * {@code __arrow_c_stream__} and {@code __arrow_c_device_stream__} methods, which call back into the
 * Java exporters given here, each call producing a fresh export in a new capsule.
 *
 * <p>The object has only the methods whose exporter was given (consumers choose a protocol by
 * {@code hasattr}). Exporters run on the Python thread that called the method, holding the GIL; an
 * exception they throw reaches Python as a {@code BufferError} carrying its message. The exporters stay
 * reachable from a Java table until the Python object is garbage-collected.
 *
 * {@snippet :
 * try (PyObjectRef obj = PythonExport.builder()
 *         .dlpack(Device.CPU, consumer -> DLPack.exportVersioned(spec, owner).transferOwnership())
 *         .build();
 *      PyObjectRef np = runtime.importModule("numpy");
 *      PyObjectRef array = np.callMethod("from_dlpack", obj)) {
 *     ...
 * }
 * }
 *
 * <p>A {@code PythonExport} being configured is not thread-safe (use one per thread); the built object is owned by the caller
 * through the returned reference.
 */
public final class PythonExport {
    // The Python side is ExporterClasses; the calls back into Java go through ExportDispatch to ProtocolCapsules.


    /**
     * Fills a schema and an array for {@code __arrow_c_array__} or {@code __arrow_c_device_array__} (the one
     * exporter with three parameters, which no {@code java.util.function} type takes).
     */
    @FunctionalInterface
    public interface ArrowArrayExporter {
        /**
         * Fills {@code schemaOut} and {@code arrayOut} (an {@code ArrowArray}, or an {@code ArrowDeviceArray}
         * for the device protocol; both zeroed), cast to {@code requestedSchema} when it is not NULL (a
         * borrowed {@code ArrowSchema*}, valid during the call) or throwing if it cannot. After a return the
         * capsules own both; a struct left with {@code release == NULL} on a throw is not released.
         *
         * @param requestedSchema the {@code ArrowSchema} the consumer asks for, or {@code NULL}
         * @param schemaOut where to write the {@code ArrowSchema}
         * @param arrayOut where to write the {@code ArrowArray} or {@code ArrowDeviceArray}
         */
        void export(MemorySegment requestedSchema, MemorySegment schemaOut, MemorySegment arrayOut);
    }

    /**
     * Starts an exporter object with no protocol.
     *
     * @return a new exporter with no protocol, to configure and {@link #build()}
     */
    public static PythonExport builder() {
        requireNativeAccess();
        return new PythonExport();
    }

    /** {@return number of exporter objects whose Python object is still alive (for leak checks in tests)} */
    static int liveObjects() {
        return ExportDispatch.live();
    }

    // The protocols the Python object speaks, chosen by the methods below.
    private Function<ConsumerStream, MemorySegment> dlpack;
    private Device device;
    private Consumer<MemorySegment> schema;
    private ArrowArrayExporter array;
    private ArrowArrayExporter deviceArray;
    private BiConsumer<MemorySegment, MemorySegment> stream;
    private BiConsumer<MemorySegment, MemorySegment> deviceStream;
    private boolean exchangeApi;
    private InterfaceExport.Described hostInterface;
    private InterfaceExport.Described cudaInterface;
    private TensorSpec hostMask;
    private TensorSpec cudaMask;
    private TensorSpec mask;
    private AutoCloseable owner;

    private PythonExport() {}

    /**
     * Adds the {@code __array_interface__} attribute (version 3) for host-accessible memory: NumPy's
     * {@code numpy.asarray(obj)} (and every consumer of the interface) then views {@code spec}'s memory
     * zero-copy, read-only where the spec is ({@link org.devicebridge.dlpack.TensorFlag#READ_ONLY} or a
     * read-only segment). The consumer keeps the object alive while it uses the memory: keep the memory
     * alive until the object is collected ({@link #keepAlive}). Its dictionary is computed when this is
     * called (the spec's checks run now) and handed out afresh on each access.
     *
     * @param spec the array (borrowed); compact row-major specs export {@code strides: None}
     * @return this exporter
     * @throws org.devicebridge.UnsupportedFeatureException for memory on a device the CPU cannot read, a
     *         dtype with no typestr (bfloat16, float8, sub-byte), or a spec with a consumer stream
     * @throws org.devicebridge.ValidationException if the array reaches outside {@code spec.data()}
     */
    public PythonExport arrayInterface(TensorSpec spec) {
        this.hostInterface = InterfaceExport.describe(spec, false, null, "spec");
        this.hostMask = mask;
        return this;
    }

    /**
     * Adds the {@code __cuda_array_interface__} attribute (version 3) for data that is ready: its
     * {@code stream} is None (no consumer synchronisation needed). As {@link #arrayInterface} otherwise.
     *
     * @param spec the array on a CUDA device, pinned host or managed memory (borrowed)
     * @return this exporter
     * @throws org.devicebridge.UnsupportedFeatureException as {@link #arrayInterface}, for memory the GPU
     *         cannot reach
     */
    public PythonExport cudaArrayInterface(TensorSpec spec) {
        this.cudaInterface = InterfaceExport.describe(spec, true, null, "spec");
        this.cudaMask = mask;
        return this;
    }

    /**
     * Adds the {@code __cuda_array_interface__} attribute (version 3) for data produced on
     * {@code producerStream}: its {@code stream} entry is that stream (NULL, the legacy default stream, is
     * exported as 1), and the consumer makes its own stream wait on it before using the data, as the
     * protocol requires. The caller keeps owning the stream and must keep it alive as long as the object.
     *
     * @param spec the array on a CUDA device, pinned host or managed memory (borrowed)
     * @param producerStream the {@code CUstream} the data is written on (borrowed)
     * @return this exporter
     * @throws org.devicebridge.UnsupportedFeatureException as {@link #cudaArrayInterface(TensorSpec)}
     */
    public PythonExport cudaArrayInterface(TensorSpec spec, MemorySegment producerStream) {
        Objects.requireNonNull(producerStream, "producerStream");
        this.cudaInterface = InterfaceExport.describe(spec, true, producerStream, "spec");
        this.cudaMask = mask;
        return this;
    }

    /**
     * Gives the array interfaces added after this call a {@code mask} entry: an object exposing the same
     * interface for {@code mask} (bool or integer elements, non-zero = valid, broadcastable to the array's
     * shape). NumPy ignores masks; CuPy and Numba refuse them, so set one only for consumers that read it.
     *
     * @param mask the mask (borrowed: keep it alive as the array)
     * @return this exporter
     */
    public PythonExport interfaceMask(TensorSpec mask) {
        this.mask = Objects.requireNonNull(mask, "mask");
        return this;
    }

    /**
     * Hands {@code owner} to the Python object: it is closed when Python collects the object (after the
     * last consumer view of the array interfaces' memory is gone, since such views keep the object alive).
     * After {@link #build()} returns the object owns it; if {@code build()} throws the caller still does.
     *
     * @param owner what keeps the exported memory alive (an arena, a buffer, a handle)
     * @return this exporter
     */
    public PythonExport keepAlive(AutoCloseable owner) {
        this.owner = Objects.requireNonNull(owner, "owner");
        return this;
    }

    /**
     * Also publishes this library's DLPack C exchange table on the object's type, as
     * {@code __dlpack_c_exchange_api__} (a capsule named {@code "dlpack_exchange_api"}; see
     * this library's own table): a consumer that speaks the exchange API takes the tensor
     * from the {@link #dlpack} exporter without calling {@code __dlpack__}, with no stream
     * synchronisation (the exporter sees stream -1). Needs {@link #dlpack}.
     *
     * @return this exporter
     */
    public PythonExport dlpackExchangeApi() {
        this.exchangeApi = true;
        return this;
    }

    /**
     * Adds {@code __dlpack__} and {@code __dlpack_device__}, for a tensor on {@code device}.
     *
     * A consumer that asks for DLPack 1.x ({@code max_version}) gets the exporter's struct in a
     * {@code "dltensor_versioned"} capsule; one that predates it gets a legacy {@code DLManagedTensor} in a
     * {@code "dltensor"} capsule, made here around the exporter's struct (its deleter deletes that one), or a
     * {@code BufferError} for a read-only or sub-byte tensor, which a legacy struct cannot describe.
     *
     * @param device the tensor's device, as {@code __dlpack_device__} reports it
     * @param exporter makes a {@code DLManagedTensorVersioned*} for each {@code __dlpack__} call (for example
     *        {@code DLPack.exportVersioned(spec.withConsumerStream(consumer, c -> c.waitForCuda(myStream)), owner)
     *        .transferOwnership()}), with the data ready on the consumer's stream it is given (validated for
     *        {@code device}; it asks for no synchronisation when the consumer passed -1 or the exchange API
     *        calls). Ownership of the returned struct passes to this library on return (to the capsule, or to
     *        the legacy struct made around it); on a throw nothing was exported
     * @return this exporter
     */
    public PythonExport dlpack(Device device, Function<ConsumerStream, MemorySegment> exporter) {
        this.device = Objects.requireNonNull(device, "device");
        this.dlpack = Objects.requireNonNull(exporter, "exporter");
        return this;
    }

    /**
     * Adds {@code __arrow_c_schema__}.
     *
     * @param exporter fills the given zeroed {@code ArrowSchema} ({@code ArrowSchema.sizeof()} bytes) for
     *        each call; the capsule owns it after a return
     * @return this exporter
     */
    public PythonExport arrowSchema(Consumer<MemorySegment> exporter) {
        this.schema = Objects.requireNonNull(exporter, "exporter");
        return this;
    }

    /**
     * Adds {@code __arrow_c_array__(requested_schema=None)}.
     *
     * @param exporter fills the structs for each call
     * @return this exporter
     */
    public PythonExport arrowArray(ArrowArrayExporter exporter) {
        this.array = Objects.requireNonNull(exporter, "exporter");
        return this;
    }

    /**
     * Adds {@code __arrow_c_device_array__(requested_schema=None, **kwargs)}.
     *
     * @param exporter fills the structs for each call
     * @return this exporter
     */
    public PythonExport arrowDeviceArray(ArrowArrayExporter exporter) {
        this.deviceArray = Objects.requireNonNull(exporter, "exporter");
        return this;
    }

    /**
     * Adds {@code __arrow_c_stream__(requested_schema=None)}.
     *
     * @param exporter given the requested {@code ArrowSchema*} (or {@code NULL}; borrowed, valid during the
     *        call) and the zeroed stream struct, fills the stream, honouring the requested schema as
     *        {@link ArrowArrayExporter#export} does; the capsule owns the stream after a return
     * @return this exporter
     */
    public PythonExport arrowStream(BiConsumer<MemorySegment, MemorySegment> exporter) {
        this.stream = Objects.requireNonNull(exporter, "exporter");
        return this;
    }

    /**
     * Adds {@code __arrow_c_device_stream__(requested_schema=None, **kwargs)}.
     *
     * @param exporter given the requested {@code ArrowSchema*} (or {@code NULL}; borrowed, valid during the
     *        call) and the zeroed stream struct, fills the stream, honouring the requested schema as
     *        {@link ArrowArrayExporter#export} does; the capsule owns the stream after a return
     * @return this exporter
     */
    public PythonExport arrowDeviceStream(BiConsumer<MemorySegment, MemorySegment> exporter) {
        this.deviceStream = Objects.requireNonNull(exporter, "exporter");
        return this;
    }

    /**
     * Creates the Python object. The exporters are called whenever a consumer asks, until the object
     * is collected by Python. After a return the caller owns the returned reference (no data is
     * exported yet: each protocol call exports afresh); after a throw it owns nothing new.
     *
     * @return a new reference, owned by the caller (close it)
     * @throws PythonUnavailableException where there is no Python
     * @throws DeviceBridgeException if no protocol was chosen
     */
    public PyObjectRef build() {
        List<String> methods = new ArrayList<>();
        if (dlpack != null) {
            methods.add("__dlpack__");
            methods.add("__dlpack_device__");
        }
        if (schema != null) {
            methods.add("__arrow_c_schema__");
        }
        if (array != null) {
            methods.add("__arrow_c_array__");
        }
        if (deviceArray != null) {
            methods.add("__arrow_c_device_array__");
        }
        if (stream != null) {
            methods.add("__arrow_c_stream__");
        }
        if (deviceStream != null) {
            methods.add("__arrow_c_device_stream__");
        }
        if (hostInterface != null) {
            methods.add("__array_interface__");
        }
        if (cudaInterface != null) {
            methods.add("__cuda_array_interface__");
        }
        if (methods.isEmpty()) {
            throw new DeviceBridgeException("an exporter object needs at least one protocol");
        }
        if (exchangeApi) {
            if (dlpack == null) {
                throw new DeviceBridgeException("the DLPack exchange API needs a dlpack exporter");
            }
            methods.add("__dlpack_c_exchange_api__");
        }
        PythonRuntime runtime = PythonRuntime.get();
        long token = ExportDispatch.register(new ExportDispatch.Exporters(dlpack, device, schema, array,
                deviceArray, stream, deviceStream,
                new InterfaceExport.Exported(hostInterface, cudaInterface, hostMask, cudaMask, owner)));
        try {
            return ExporterClasses.newObject(runtime, token, methods);
        } catch (RuntimeException | Error e) {
            ExportDispatch.unregister(token);
            throw e;
        }
    }
}
