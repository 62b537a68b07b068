package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.Objects;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DLPackExchange;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.foreign.OutStructs;
import org.devicebridge.generated.dlpack.DLPackExchangeAPI;
import org.devicebridge.generated.dlpack.DLPackExchangeAPIHeader;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.internal.Native;

/**
 * DLPack's C exchange API between Python frameworks and Java (DLPack 1.2+): a framework publishes a static
 * {@code DLPackExchangeAPI} table on its tensor type as {@code type(t).__dlpack_c_exchange_api__}, a capsule
 * named {@code "dlpack_exchange_api"} (PyTorch 2.11 does; the older spelling {@code __c_dlpack_exchange_api__}
 * holding the address as an int is read too), and a consumer converts tensors through it without calling
 * {@code __dlpack__}.
 *
 * <p>Consuming: {@link #of(PyObjectRef)} borrows a framework's table (tables live as long as the process:
 * nothing is owned); {@link #importTensor} takes a tensor from a Python object through it. The table's other
 * functions ({@link DLPackExchange#currentWorkStream}, {@link DLPackExchange#allocate}) are called on the
 * returned {@link DLPackExchange} with the GIL held ({@link PythonRuntime#gil()}): a framework reports
 * failures as a Python exception. Publishing: {@link PythonExport#dlpackExchangeApi()} puts
 * {@link #publishedTable()} on an exporter object's type. Thread-safe: every call takes the GIL it needs.
 */
final class PythonExchange {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.python");
    private static final String CAPSULE_NAME = "dlpack_exchange_api";
    private static final MemorySegment C_CAPSULE_NAME = Arena.global().allocateFrom(CAPSULE_NAME);

    private PythonExchange() {}

    /**
     * Borrows the exchange table that {@code tensor}'s type publishes.
     *
     * @param tensor a tensor of the framework (borrowed)
     * @return the framework's table, valid for the life of the process
     * @throws UnsupportedFeatureException if the type publishes no table
     * @throws org.devicebridge.ValidationException if the table's version is not 1.2 or a later 1.x
     */
    static DLPackExchange of(PyObjectRef tensor) {
        DLPackExchange table = find(tensor);
        if (table == null) {
            throw new UnsupportedFeatureException("__dlpack_c_exchange_api__", "type " + tensor.typeName()
                    + " publishes no DLPack exchange API");
        }
        return table;
    }

    /**
     * The exchange table {@code tensor}'s type publishes, or null where it publishes none.
     *
     * @throws org.devicebridge.ValidationException if the table's version is not 1.2 or a later 1.x
     */
    static DLPackExchange find(PyObjectRef tensor) {
        Objects.requireNonNull(tensor, "tensor");
        Gil gil = Gil.acquire();
        try {
            MemorySegment type = Py.getAttr(tensor.borrowAddress(), "__class__");
            try {
                MemorySegment api = Py.getAttrOrNull(type, "__dlpack_c_exchange_api__");
                if (api == null) {
                    api = Py.getAttrOrNull(type, "__c_dlpack_exchange_api__");
                }
                if (api == null) {
                    return null;
                }
                try {
                    return DLPackExchange.of(tablePointer(api));
                } finally {
                    Py.decRef(api);
                }
            } finally {
                Py.decRef(type);
            }
        } finally {
            gil.close();
        }
    }

    /** The table address of a {@code dlpack_exchange_api} capsule or of an int. Requires the GIL. */
    private static MemorySegment tablePointer(MemorySegment api) {
        try {
            if ((int) PyC.PyCapsule_IsValid.invokeExact(api, C_CAPSULE_NAME) == 1) {
                return Py.check((MemorySegment) PyC.PyCapsule_GetPointer.invokeExact(api, C_CAPSULE_NAME),
                        "PyCapsule_GetPointer");
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyCapsule_GetPointer", t);
        }
        String name = Capsules.nameOf(api);
        if (name != null) {
            throw new UnsupportedFeatureException("__dlpack_c_exchange_api__", "expected a capsule named '"
                    + CAPSULE_NAME + "' but found one named '" + name + "'");
        }
        return MemorySegment.ofAddress(Py.asLong(api, "__c_dlpack_exchange_api__"));
    }

    /**
     * Takes the tensor of {@code tensor} through the table's {@code managed_tensor_from_py_object_no_sync}
     * and imports it (validated as {@link DLPack#importVersioned} does). No stream synchronisation is done:
     * for device data, order your work after the framework's {@link DLPackExchange#currentWorkStream}.
     *
     * <p>After a return the handle owns the tensor (its deleter runs when it closes; the caller keeps its
     * reference to {@code tensor}); after a throw nothing is owned.
     *
     * @param api     a table from {@link #of(PyObjectRef)} (borrowed)
     * @param tensor  a tensor of the framework that published {@code api} (borrowed)
     * @param options what the caller expects of the tensor
     * @return the imported tensor
     * @throws PythonException if the framework refused, with its Python exception
     * @throws org.devicebridge.ValidationException if the tensor is malformed or not what {@code options} expects
     */
    static ImportedTensor importTensor(DLPackExchange api, PyObjectRef tensor, ImportOptions options) {
        Objects.requireNonNull(api, "api");
        Objects.requireNonNull(tensor, "tensor");
        Objects.requireNonNull(options, "options");
        Gil gil = Gil.acquire();
        try {
            return api.importFromPyObject(tensor.borrowAddress(), options);
        } catch (DeviceBridgeException e) {
            if (Py.errorOccurred()) {
                PythonException pe = Py.fetchError("managed_tensor_from_py_object_no_sync");
                pe.addSuppressed(e);
                throw pe;
            }
            throw e;
        } finally {
            gil.close();
        }
    }

    // ------------------------------------------------------------------------------ the published table

    /** The Python-aware table, built once: this library's allocator and stream, exporter objects' tensors. */
    private static final class Table {
        static final MemorySegment TABLE = build();

        private static MemorySegment build() {
            MemorySegment base = OutStructs.sized(DLPackExchange.published().address(), DLPackExchangeAPI.sizeof(), "table");
            MemorySegment t = Arena.global().allocate(DLPackExchangeAPI.layout());
            MemorySegment header = DLPackExchangeAPI.header(t);
            DLPackVersion.major(DLPackExchangeAPIHeader.version(header), DLPack.MAJOR_VERSION);
            DLPackVersion.minor(DLPackExchangeAPIHeader.version(header), DLPack.MINOR_VERSION);
            DLPackExchangeAPIHeader.prev_api(header, MemorySegment.NULL);
            DLPackExchangeAPI.managed_tensor_allocator(t, DLPackExchangeAPI.managed_tensor_allocator(base));
            DLPackExchangeAPI.current_work_stream(t, DLPackExchangeAPI.current_work_stream(base));
            MethodHandles.Lookup l = MethodHandles.lookup();
            DLPackExchangeAPI.managed_tensor_from_py_object_no_sync(t, Native.upcallStub(l, PythonExchange.class,
                    "fromPyObject", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS)));
            DLPackExchangeAPI.managed_tensor_to_py_object_no_sync(t, Native.upcallStub(l, PythonExchange.class,
                    "toPyObject", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS)));
            DLPackExchangeAPI.dltensor_from_py_object_no_sync(t, MemorySegment.NULL); // optional: not provided
            return t;
        }
    }

    /**
     * This library's exchange table for Python (DLPack 1.3), valid for the life of the JVM: its allocator
     * and {@code current_work_stream} are {@link DLPackExchange#published()}'s;
     * {@code managed_tensor_from_py_object_no_sync} takes the tensor of an exporter object made with
     * {@link PythonExport#dlpackExchangeApi()} (its DLPack exporter is called with stream -1);
     * {@code managed_tensor_to_py_object_no_sync} refuses with a Python {@code NotImplementedError} (this
     * library has no Python tensor type); {@code dltensor_from_py_object_no_sync} is NULL.
     *
     * @return the table, borrowed
     */
    static DLPackExchange publishedTable() {
        return DLPackExchange.of(Table.TABLE);
    }

    /** New reference: a capsule named {@code dlpack_exchange_api} around the table. Requires the GIL. */
    static MemorySegment newTableCapsule() {
        try {
            return Py.check((MemorySegment) PyC.PyCapsule_New.invokeExact(Table.TABLE, C_CAPSULE_NAME,
                    MemorySegment.NULL), "PyCapsule_New(dlpack_exchange_api)");
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyCapsule_New", t);
        }
    }

    /** {@code managed_tensor_from_py_object_no_sync}: called with the GIL held; never throws. */
    @SuppressWarnings("unused")
    private static int fromPyObject(MemorySegment pyObject, MemorySegment out) {
        try {
            MemorySegment slot = OutStructs.sized(out, ADDRESS.byteSize(), "out");
            slot.set(ADDRESS, 0, MemorySegment.NULL);
            slot.set(ADDRESS, 0, ExportDispatch.exportForExchange(pyObject));
            return 0;
        } catch (Throwable t) {
            return raise(PyC.EXC_BUFFER_ERROR, "devicebridge: " + t.getMessage());
        }
    }

    /** {@code managed_tensor_to_py_object_no_sync}: takes the tensor, deletes it, reports the refusal. */
    @SuppressWarnings("unused")
    private static int toPyObject(MemorySegment tensor, MemorySegment out) {
        try {
            OutStructs.sized(out, ADDRESS.byteSize(), "out_py_object").set(ADDRESS, 0, MemorySegment.NULL);
            if (!tensor.equals(MemorySegment.NULL)) {
                DLPack.importVersioned(tensor, ImportOptions.any()).close(); // stolen: delete it once
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.DEBUG, "devicebridge: deleting a tensor given to the exchange API failed", t);
        }
        return raise(PyC.EXC_NOT_IMPLEMENTED_ERROR, "devicebridge has no Python tensor type to convert to");
    }

    private static int raise(MemorySegment type, String message) {
        Py.setErrorQuietly(type, message);
        return -1;
    }
}
