package org.devicebridge.dlpack;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.dlpack.DLDataType;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLPackCurrentWorkStream;
import org.devicebridge.generated.dlpack.DLPackExchangeAPI;
import org.devicebridge.generated.dlpack.DLPackExchangeAPIHeader;
import org.devicebridge.generated.dlpack.DLPackManagedTensorAllocator;
import org.devicebridge.generated.dlpack.DLPackManagedTensorFromPyObjectNoSync;
import org.devicebridge.generated.dlpack.DLPackManagedTensorToPyObjectNoSync;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.Native;

/**
 * The DLPack C exchange API ({@code DLPackExchangeAPI}, DLPack 1.2+): a static table of C functions a
 * framework publishes so that others can allocate its tensors and convert them without Python overhead.
 *
 * <p>{@link #of(MemorySegment)} <em>borrows</em> a framework's table (tables are static for the life of the
 * process; nothing is owned or freed). {@link #published()} is this library's own table, allocated once:
 * its allocator makes compact CPU tensors in native memory freed by their deleter, its
 * {@code current_work_stream} reports the default stream (NULL), and the Python-object functions report an
 * error (this library holds no Python objects).
 *
 * {@snippet lang=c :
 * typedef struct DLPackExchangeAPI {
 *   DLPackExchangeAPIHeader header;      // { DLPackVersion version; DLPackExchangeAPIHeader* prev_api; }
 *   DLPackManagedTensorAllocator managed_tensor_allocator;
 *   DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
 *   DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
 *   DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
 *   DLPackCurrentWorkStream current_work_stream;
 * } DLPackExchangeAPI;
 * }
 *
 * <p>Immutable and thread-safe as a view; the framework's functions it calls may have their own rules
 * (the Python-object ones need the GIL).
 */
public final class DLPackExchange {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.dlpack");

    private final MemorySegment table;
    private final ImportedTensor.Version version;

    private DLPackExchange(MemorySegment table, ImportedTensor.Version version) {
        this.table = table;
        this.version = version;
    }

    /**
     * Borrows a framework's exchange table. Checks the header version (major 1, minor >= 2, when the table
     * was introduced); function pointers are checked when used.
     *
     * @param table the framework's {@code DLPackExchangeAPI} (borrowed: the framework keeps owning it)
     * @return a view of the table; it owns nothing
     * @throws ValidationException {@code RELEASED} for NULL, {@code VERSION} for another major version or {@code minor < 2}
     */
    public static DLPackExchange of(MemorySegment table) {
        requireNativeAccess();
        Objects.requireNonNull(table, "table");
        if (table.equals(MemorySegment.NULL)) {
            throw new ValidationException(Category.RELEASED, "", "expected a DLPackExchangeAPI but found a NULL pointer");
        }
        MemorySegment t = table.reinterpret(DLPackExchangeAPI.sizeof());
        MemorySegment v = DLPackExchangeAPIHeader.version(DLPackExchangeAPI.header(t));
        int major = DLPackVersion.major(v);
        int minor = DLPackVersion.minor(v);
        if (major != DLPack.MAJOR_VERSION || Integer.compareUnsigned(minor, 2) < 0) {
            throw new ValidationException(Category.VERSION, "header.version", String.format(Locale.ROOT,
                    "expected DLPack 1.2 or a later 1.x but found %s.%s", Integer.toUnsignedString(major),
                    Integer.toUnsignedString(minor)));
        }
        return new DLPackExchange(t, new ImportedTensor.Version(major, minor));
    }

    /** {@return the DLPack major version in the table's header (always 1: another major is refused)} */
    public int majorVersion() {
        return version.major();
    }

    /** {@return the DLPack minor version in the table's header (2 or later)} */
    public int minorVersion() {
        return version.minor();
    }

    /** {@return the table's address (borrowed; for handing to native code)} */
    public MemorySegment address() {
        return MemorySegment.ofAddress(table.address());
    }

    /**
     * Asks the framework to allocate a compact tensor of {@code dtype} and {@code shape} on {@code device}
     * ({@code managed_tensor_allocator}) and imports it.
     *
     * @param dtype the element type
     * @param shape the extents (only read)
     * @param device the device to allocate on
     * @return a handle that owns the new tensor (its deleter runs when it closes). After a throw nothing is
     *         owned: a tensor the framework returned has been passed to its deleter.
     * @throws DeviceBridgeException with the framework's error kind and message if it refuses
     * @throws UnsupportedFeatureException if the table has no allocator
     */
    public ImportedTensor allocate(DType dtype, long[] shape, Device device) {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(device, "device");
        dtype.check("dtype");
        MemorySegment fn = function(DLPackExchangeAPI.managed_tensor_allocator(table), "managed_tensor_allocator");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment proto = arena.allocate(DLTensor.layout());
            MemorySegment shapeSeg = arena.allocateFrom(ValueLayout.JAVA_LONG, shape);
            Geometry g = Geometry.of(dtype, shape.clone(), null, 0, "");
            MemorySegment stridesSeg = arena.allocateFrom(ValueLayout.JAVA_LONG, g.strides());
            DLTensor.data(proto, MemorySegment.NULL);
            DLDevice.device_type(DLTensor.device(proto), device.kind().code());
            DLDevice.device_id(DLTensor.device(proto), device.ordinal());
            DLTensor.ndim(proto, shape.length);
            DLDataType.code(DLTensor.dtype(proto), (byte) dtype.code());
            DLDataType.bits(DLTensor.dtype(proto), (byte) dtype.bits());
            DLDataType.lanes(DLTensor.dtype(proto), (short) dtype.lanes());
            DLTensor.shape(proto, shape.length == 0 ? MemorySegment.NULL : shapeSeg);
            DLTensor.strides(proto, shape.length == 0 ? MemorySegment.NULL : stridesSeg);
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            long key = ERRORS_KEY.getAndIncrement();
            int rc;
            String[] error;
            try {
                rc = DLPackManagedTensorAllocator.invoke(fn, proto, out, MemorySegment.ofAddress(key), ErrorCalls.SET_ERROR);
            } finally {
                error = ERRORS.remove(key);
            }
            MemorySegment tensor = out.get(ValueLayout.ADDRESS, 0);
            if (rc != 0) {
                if (!tensor.equals(MemorySegment.NULL)) {
                    DLPack.importVersioned(tensor, ImportOptions.any()).close(); // a failing producer must not leak
                }
                throw new DeviceBridgeException("managed_tensor_allocator failed (" + rc + ")"
                        + (error == null ? "" : ": " + error[0] + ": " + error[1]));
            }
            return DLPack.importVersioned(tensor, ImportOptions.expecting(device));
        }
    }

    /**
     * The framework's current work stream for {@code device} ({@code current_work_stream}), as a zero-length
     * segment holding the stream handle (NULL for the default stream); the framework owns the stream.
     *
     * @param device the device whose current stream is asked for
     * @return the stream handle (borrowed from the framework), NULL for the default stream
     */
    public MemorySegment currentWorkStream(Device device) {
        Objects.requireNonNull(device, "device");
        MemorySegment fn = function(DLPackExchangeAPI.current_work_stream(table), "current_work_stream");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int rc = DLPackCurrentWorkStream.invoke(fn, device.kind().code(), device.ordinal(), out);
            if (rc != 0) {
                throw new DeviceBridgeException("current_work_stream failed (" + rc + ") for " + DLPack.describe(device));
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.ADDRESS, 0).address());
        }
    }

    /**
     * Converts a Python object of the framework into a tensor ({@code managed_tensor_from_py_object_no_sync})
     * and imports it. The caller must hold the GIL and keeps its reference to {@code pyObject}; no stream
     * synchronisation is done (as the function's name says).
     *
     * @param pyObject the framework's tensor object, a {@code PyObject*} (borrowed)
     * @param options what to accept and how to check it
     * @return a handle that owns the tensor; after a throw nothing is owned (see {@link DLPack#importVersioned})
     */
    public ImportedTensor importFromPyObject(MemorySegment pyObject, ImportOptions options) {
        Objects.requireNonNull(pyObject, "pyObject");
        Objects.requireNonNull(options, "options");
        MemorySegment fn = function(DLPackExchangeAPI.managed_tensor_from_py_object_no_sync(table),
                "managed_tensor_from_py_object_no_sync");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int rc = DLPackManagedTensorFromPyObjectNoSync.invoke(fn, pyObject, out);
            if (rc != 0) {
                throw new DeviceBridgeException("managed_tensor_from_py_object_no_sync failed (" + rc + ")");
            }
            return DLPack.importVersioned(out.get(ValueLayout.ADDRESS, 0), options);
        }
    }

    /**
     * Gives {@code tensor} to the framework as a new Python object ({@code managed_tensor_to_py_object_no_sync}).
     * {@code tensor} is transferred (CONSUMED) before the call, as a capsule would be. The caller must hold
     * the GIL and owns the returned new reference.
     *
     * @param tensor the exported tensor; transferred to the framework
     * @return the new {@code PyObject*} reference, owned by the caller
     * @throws DeviceBridgeException if the framework refuses (it then owns, and must have deleted, the tensor)
     */
    public MemorySegment exportToPyObject(ExportedTensor tensor) {
        Objects.requireNonNull(tensor, "tensor");
        if (!tensor.isVersioned()) {
            throw new UnsupportedFeatureException("tensor", "the exchange API takes DLManagedTensorVersioned only");
        }
        MemorySegment fn = function(DLPackExchangeAPI.managed_tensor_to_py_object_no_sync(table),
                "managed_tensor_to_py_object_no_sync");
        MemorySegment p = tensor.transferOwnership();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int rc = DLPackManagedTensorToPyObjectNoSync.invoke(fn, p, out);
            if (rc != 0) {
                throw new DeviceBridgeException("managed_tensor_to_py_object_no_sync failed (" + rc + ")");
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.ADDRESS, 0).address());
        }
    }

    private static MemorySegment function(MemorySegment fn, String field) {
        if (fn.equals(MemorySegment.NULL)) {
            throw new UnsupportedFeatureException(field, "the exchange table does not provide " + field);
        }
        return fn;
    }

    // ------------------------------------------------------------------------------------ error context

    private static final AtomicLong ERRORS_KEY = new AtomicLong(1);
    private static final ConcurrentHashMap<Long, String[]> ERRORS = new ConcurrentHashMap<>();

    /** The native handles of the error context, made on first use (never while this class loads: see NativeAccess). */
    private static final class ErrorCalls {
        static final MemorySegment SET_ERROR = Native.upcallStub(MethodHandles.lookup(), DLPackExchange.class,
                "setError", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        static final MethodHandle CALL_SET_ERROR = Native.LINKER.downcallHandle(
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    }

    private static void setError(MemorySegment ctx, MemorySegment kind, MemorySegment message) {
        try {
            ERRORS.put(ctx.address(), new String[] {String.valueOf(Native.string(kind)), String.valueOf(Native.string(message))});
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "DLPack SetError callback failed", t);
        }
    }

    // ------------------------------------------------------------------------------------ published table

    private static final class Published {
        static final MemorySegment TABLE = build();

        private static MemorySegment build() {
            Arena global = Arena.global();
            MemorySegment t = global.allocate(DLPackExchangeAPI.layout());
            MemorySegment v = DLPackExchangeAPIHeader.version(DLPackExchangeAPI.header(t));
            DLPackVersion.major(v, DLPack.MAJOR_VERSION);
            DLPackVersion.minor(v, DLPack.MINOR_VERSION);
            DLPackExchangeAPIHeader.prev_api(DLPackExchangeAPI.header(t), MemorySegment.NULL);
            MethodHandles.Lookup l = MethodHandles.lookup();
            DLPackExchangeAPI.managed_tensor_allocator(t, Native.upcallStub(l, DLPackExchange.class, "allocateUpcall",
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                            ValueLayout.ADDRESS, ValueLayout.ADDRESS)));
            MemorySegment noPy = Native.upcallStub(l, DLPackExchange.class, "noPythonUpcall",
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
            DLPackExchangeAPI.managed_tensor_from_py_object_no_sync(t, noPy);
            DLPackExchangeAPI.managed_tensor_to_py_object_no_sync(t, noPy);
            DLPackExchangeAPI.dltensor_from_py_object_no_sync(t, noPy);
            DLPackExchangeAPI.current_work_stream(t, Native.upcallStub(l, DLPackExchange.class, "currentStreamUpcall",
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS)));
            return t;
        }
    }

    /**
     * {@return this library's exchange table (DLPack 1.3), allocated once and valid for the life of the JVM} Its
     * allocator makes compact CPU tensors ({@code kDLCPU} only) in native memory that their deleter frees;
     * other devices are refused through {@code SetError} with kind {@code "NotImplementedError"}.
     */
    public static DLPackExchange published() {
        requireNativeAccess();
        return of(Published.TABLE);
    }

    private static int allocateUpcall(MemorySegment prototype, MemorySegment out, MemorySegment errorCtx,
                                      MemorySegment setError) {
        try {
            MemorySegment outPtr = out.reinterpret(ValueLayout.ADDRESS.byteSize());
            outPtr.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
            MemorySegment p = prototype.reinterpret(DLTensor.sizeof());
            MemorySegment d = DLTensor.device(p);
            DeviceKind type = DeviceKind.fromCode(DLDevice.device_type(d)).orElse(null);
            if (type != DeviceKind.CPU) {
                return fail(errorCtx, setError, "NotImplementedError", "devicebridge allocates kDLCPU tensors only");
            }
            MemorySegment dt = DLTensor.dtype(p);
            DType dtype = new DType(Byte.toUnsignedInt(DLDataType.code(dt)), Byte.toUnsignedInt(DLDataType.bits(dt)),
                    Short.toUnsignedInt(DLDataType.lanes(dt)));
            dtype.check("prototype.dtype");
            int ndim = DLTensor.ndim(p);
            if (ndim < 0 || ndim > Geometry.MAX_NDIM) {
                return fail(errorCtx, setError, "ValueError", "ndim " + ndim + " out of range");
            }
            long[] shape = ndim == 0 ? new long[0] : DLTensor.shape(p).reinterpret(8L * ndim).toArray(ValueLayout.JAVA_LONG);
            Geometry g = Geometry.of(dtype, shape, null, 0, "prototype");
            MemorySegment data = Native.malloc(g.extent());
            ExportedTensor e;
            try {
                e = DLPack.exportVersioned(TensorSpec.of(data, dtype, shape), () -> Native.free(data));
            } catch (Throwable t) {
                Native.free(data);
                throw t;
            }
            outPtr.set(ValueLayout.ADDRESS, 0, e.transferOwnership());
            return 0;
        } catch (Throwable t) {
            return fail(errorCtx, setError, t instanceof DeviceBridgeException ? "ValueError" : "RuntimeError",
                    String.valueOf(t.getMessage()));
        }
    }

    private static int fail(MemorySegment errorCtx, MemorySegment setError, String kind, String message) {
        try (Arena a = Arena.ofConfined()) {
            if (!setError.equals(MemorySegment.NULL)) {
                ErrorCalls.CALL_SET_ERROR.invokeExact(setError, errorCtx, a.allocateFrom(kind), a.allocateFrom(message));
            }
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "DLPack SetError call failed", t);
        }
        return -1;
    }

    private static int noPythonUpcall(MemorySegment a, MemorySegment b) {
        return -1; // no Python objects on this side
    }

    private static int currentStreamUpcall(int deviceType, int deviceId, MemorySegment out) {
        try {
            out.reinterpret(ValueLayout.ADDRESS.byteSize()).set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
            return 0;
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "DLPack current_work_stream failed", t);
            return -1;
        }
    }
}
