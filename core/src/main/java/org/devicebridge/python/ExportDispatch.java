package org.devicebridge.python;

import java.lang.foreign.MemorySegment;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.python.PythonExport.ArrowArrayExporter;

/**
 * The Java side of live exporter objects ({@link PythonExport}): the table of their exporters, keyed by the
 * token each Python object carries, and the one upcall ({@link #dispatch}) that routes every protocol method
 * to {@link ProtocolCapsules} or {@link InterfaceExport}. An entry lives from {@code build()} until Python
 * collects the object, whose {@code __del__} removes it and closes its owner. Thread-safe (the table is
 * concurrent; every upcall runs with the GIL held).
 */
final class ExportDispatch {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.python");
    /** Exporter objects whose Python object is alive, keyed by the token the Python object carries. */
    private static final ExportRegistry<Exporters> LIVE = new ExportRegistry<>();

    private ExportDispatch() {}

    /** What one exporter object answers with; null members are protocols it does not speak. */
    record Exporters(Function<ConsumerStream, MemorySegment> dlpack, Device device, Consumer<MemorySegment> schema,
                     ArrowArrayExporter array, ArrowArrayExporter deviceArray,
                     BiConsumer<MemorySegment, MemorySegment> stream, BiConsumer<MemorySegment, MemorySegment> deviceStream,
                     InterfaceExport.Exported interfaces) {}

    /** Registers the exporters of an object about to be made; returns its token. */
    static long register(Exporters exporters) {
        return LIVE.register(exporters);
    }

    /** Forgets the exporters of an object that was never made. */
    static void unregister(long token) {
        LIVE.remove(token);
    }

    /** {@return the number of exporter objects whose Python object is alive} */
    static int live() {
        return LIVE.size();
    }

    /**
     * {@code _call(token, method, args)}: the one upcall behind every protocol method. Runs with the GIL
     * held; returns a new reference, or NULL with a Python exception set. Never throws.
     */
    @SuppressWarnings("unused") // the upcall target of ExporterClasses' _call
    static MemorySegment dispatch(MemorySegment self, MemorySegment args) {
        try {
            long token = Py.asLong(Py.tupleItem(args, 0), "token");
            String method = Py.utf8(Py.tupleItem(args, 1));
            MemorySegment params = Py.tupleItem(args, 2);
            if (method.equals("__del__")) {
                Exporters gone = LIVE.remove(token);
                if (gone != null && gone.interfaces.owner() != null) {
                    try {
                        gone.interfaces.owner().close();
                    } catch (Exception ex) {
                        LOG.log(System.Logger.Level.ERROR, "devicebridge: closing the owner of a collected exporter failed", ex);
                    }
                }
                return Py.none();
            }
            Exporters e = LIVE.get(token);
            if (e == null) {
                Py.setError(PyC.EXC_RUNTIME_ERROR, "devicebridge: this exporter object is no longer usable");
                return MemorySegment.NULL;
            }
            return switch (method) {
                case "__dlpack__" -> ProtocolCapsules.dlpack(e.dlpack, e.device, params);
                case "__array_interface__" -> InterfaceExport.fields(e.interfaces, false);
                case "__cuda_array_interface__" -> InterfaceExport.fields(e.interfaces, true);
                case "__dlpack_device__" -> Py.tupleStealing(Py.fromJava(e.device.kind().code()),
                        Py.fromJava(e.device.ordinal()));
                case "__arrow_c_schema__" -> ProtocolCapsules.schema(e.schema);
                case "__arrow_c_array__" -> ProtocolCapsules.array(e.array, CapsuleKind.ARROW_ARRAY, params);
                case "__arrow_c_device_array__" -> ProtocolCapsules.array(e.deviceArray, CapsuleKind.ARROW_DEVICE_ARRAY, params);
                case "__arrow_c_stream__" -> ProtocolCapsules.stream(e.stream, CapsuleKind.ARROW_ARRAY_STREAM, params);
                case "__arrow_c_device_stream__" -> ProtocolCapsules.stream(e.deviceStream, CapsuleKind.ARROW_DEVICE_ARRAY_STREAM, params);
                default -> {
                    Py.setError(PyC.EXC_RUNTIME_ERROR, "devicebridge: unknown method " + method);
                    yield MemorySegment.NULL;
                }
            };
        } catch (PythonException pe) {
            return ProtocolCapsules.fail(PyC.EXC_BUFFER_ERROR, pe.getMessage());
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.DEBUG, "devicebridge: export to Python failed", t);
            return ProtocolCapsules.fail(PyC.EXC_BUFFER_ERROR, "devicebridge: " + t.getMessage());
        }
    }

    /**
     * The tensor of the exporter object {@code pyObject} for the exchange table's
     * {@code managed_tensor_from_py_object_no_sync}: a {@code DLManagedTensorVersioned*} the caller owns,
     * exported with no stream synchronisation (stream -1). Requires the GIL.
     *
     * @throws DeviceBridgeException if {@code pyObject} is not a live exporter object with a DLPack exporter,
     *         or the exporter returned NULL
     */
    static MemorySegment exportForExchange(MemorySegment pyObject) {
        MemorySegment token = Py.getAttrOrNull(pyObject, "_db_token");
        if (token == null) {
            throw new DeviceBridgeException("expected a devicebridge exporter object but found " + Py.repr(pyObject));
        }
        long id;
        try {
            id = Py.asLong(token, "_db_token");
        } finally {
            Py.decRef(token);
        }
        Exporters e = LIVE.get(id);
        if (e == null || e.dlpack == null) {
            throw new DeviceBridgeException("this exporter object has no live DLPack exporter");
        }
        MemorySegment tensor = e.dlpack.apply(ConsumerStream.of(e.device, -1L)); // the exchange API: no sync
        if (tensor == null || tensor.equals(MemorySegment.NULL)) {
            throw new DeviceBridgeException("the DLPack exporter returned NULL");
        }
        return tensor;
    }
}
