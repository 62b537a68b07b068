package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DeviceType;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

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
 *         .dlpack(PythonExport.DLDeviceId.CPU, request -> exportMyTensor(request.versioned()))
 *         .build();
 *      PyObjectRef np = runtime.importModule("numpy");
 *      PyObjectRef array = np.callMethod("from_dlpack", obj)) {
 *     ...
 * }
 * }
 *
 * <p>A {@link Builder} is not thread-safe (use one per thread); the built object is owned by the caller
 * through the returned reference.
 */
public final class PythonExport {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.python");
    /** Exporter objects whose Python object is alive, keyed by the token the Python object carries. */
    private static final ExportRegistry<Exporters> LIVE = new ExportRegistry<>();

    private PythonExport() {}

    /**
     * A DLPack device: {@code DLDeviceType} and device ordinal, as {@code __dlpack_device__} returns them.
     *
     * @param deviceType the {@code DLDeviceType} value, e.g. {@code kDLCUDA}
     * @param deviceId the device ordinal (0 for the CPU)
     */
    public record DLDeviceId(int deviceType, int deviceId) {
        /** {@code (kDLCPU, 0)}. */
        public static final DLDeviceId CPU = new DLDeviceId(DeviceType.CPU.code(), 0);

        /**
         * {@return {@code (kDLCUDA, ordinal)}}
         *
         * @param ordinal the device ordinal
         */
        public static DLDeviceId cuda(int ordinal) {
            return new DLDeviceId(DeviceType.CUDA.code(), ordinal);
        }
    }

    /**
     * What a DLPack consumer asked for in {@code __dlpack__(stream=..., max_version=..., dl_device=...,
     * copy=...)}.
     *
     * @param stream the consumer's stream ({@code cudaStream_t} as an integer; 1 = legacy default stream,
     *        2 = per-thread default stream, -1 = do not synchronise); empty when the consumer passed None
     * @param maxVersionMajor the highest DLPack major version the consumer understands; -1 when it passed
     *        no {@code max_version} (a pre-1.0 consumer)
     * @param maxVersionMinor the minor of {@code max_version}; -1 when absent
     */
    public record DLPackRequest(OptionalLong stream, int maxVersionMajor, int maxVersionMinor) {
        /**
         * {@return {@code true} when the export must be a {@code DLManagedTensorVersioned} (capsule
         * {@code "dltensor_versioned"}); {@code false} for a legacy {@code DLManagedTensor} ("dltensor")}
         */
        public boolean versioned() {
            return maxVersionMajor >= 1;
        }
    }

    /** Produces a DLPack tensor for one {@code __dlpack__} call. */
    @FunctionalInterface
    public interface DLPackExporter {
        /**
         * Exports the tensor: a {@code DLManagedTensorVersioned*} if {@link DLPackRequest#versioned()},
         * else a {@code DLManagedTensor*}, with the data ready on {@code request.stream()} (the exporter
         * makes that stream wait for its own work). Ownership passes to the capsule on return; on a throw
         * nothing was exported.
         *
         * @param request what the consumer asked for (stream, maximum version)
         * @return the exported struct; the capsule owns it from then on
         */
        MemorySegment export(DLPackRequest request);
    }

    /** Fills an {@code ArrowSchema} for {@code __arrow_c_schema__}. */
    @FunctionalInterface
    public interface ArrowSchemaExporter {
        /**
         * Fills {@code schemaOut} (zeroed, {@code ArrowSchema.sizeof()} bytes); the capsule owns it after a return.
         *
         * @param schemaOut where to write the {@code ArrowSchema}
         */
        void export(MemorySegment schemaOut);
    }

    /** Fills a schema and an array for {@code __arrow_c_array__} or {@code __arrow_c_device_array__}. */
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

    /** Fills a stream for {@code __arrow_c_stream__} or {@code __arrow_c_device_stream__}. */
    @FunctionalInterface
    public interface ArrowStreamExporter {
        /**
         * Fills {@code streamOut} (an {@code ArrowArrayStream} or {@code ArrowDeviceArrayStream}, zeroed),
         * honouring {@code requestedSchema} as {@link ArrowArrayExporter#export} does.
         *
         * @param requestedSchema the {@code ArrowSchema} the consumer asks for, or {@code NULL}
         * @param streamOut where to write the stream struct
         */
        void export(MemorySegment requestedSchema, MemorySegment streamOut);
    }

    /**
     * Starts an exporter object with no protocol.
     *
     * @return a new builder
     */
    public static Builder builder() {
        requireNativeAccess();
        return new Builder();
    }

    /** {@return number of exporter objects whose Python object is still alive (for leak checks in tests)} */
    public static int liveObjects() {
        return LIVE.size();
    }

    /** Chooses the protocols the Python object speaks. */
    public static final class Builder {
        private DLPackExporter dlpack;
        private DLDeviceId device;
        private ArrowSchemaExporter schema;
        private ArrowArrayExporter array;
        private ArrowArrayExporter deviceArray;
        private ArrowStreamExporter stream;
        private ArrowStreamExporter deviceStream;
        private boolean exchangeApi;

        private Builder() {}

        /**
         * Also publishes this library's DLPack C exchange table on the object's type, as
         * {@code __dlpack_c_exchange_api__} (a capsule named {@code "dlpack_exchange_api"}; see
         * {@link PythonExchange#publishedTable()}): a consumer that speaks the exchange API takes the tensor
         * from the {@link #dlpack} exporter without calling {@code __dlpack__}, with no stream
         * synchronisation (the exporter sees stream -1). Needs {@link #dlpack}.
         *
         * @return this builder
         */
        public Builder dlpackExchangeApi() {
            this.exchangeApi = true;
            return this;
        }

        /**
         * Adds {@code __dlpack__} and {@code __dlpack_device__}, for a tensor on {@code device}.
         *
         * @param device the tensor's device, as {@code __dlpack_device__} reports it
         * @param exporter makes a tensor for each {@code __dlpack__} call
         * @return this builder
         */
        public Builder dlpack(DLDeviceId device, DLPackExporter exporter) {
            this.device = Objects.requireNonNull(device, "device");
            this.dlpack = Objects.requireNonNull(exporter, "exporter");
            return this;
        }

        /**
         * Adds {@code __arrow_c_schema__}.
         *
         * @param exporter fills the schema for each call
         * @return this builder
         */
        public Builder arrowSchema(ArrowSchemaExporter exporter) {
            this.schema = Objects.requireNonNull(exporter, "exporter");
            return this;
        }

        /**
         * Adds {@code __arrow_c_array__(requested_schema=None)}.
         *
         * @param exporter fills the structs for each call
         * @return this builder
         */
        public Builder arrowArray(ArrowArrayExporter exporter) {
            this.array = Objects.requireNonNull(exporter, "exporter");
            return this;
        }

        /**
         * Adds {@code __arrow_c_device_array__(requested_schema=None, **kwargs)}.
         *
         * @param exporter fills the structs for each call
         * @return this builder
         */
        public Builder arrowDeviceArray(ArrowArrayExporter exporter) {
            this.deviceArray = Objects.requireNonNull(exporter, "exporter");
            return this;
        }

        /**
         * Adds {@code __arrow_c_stream__(requested_schema=None)}.
         *
         * @param exporter fills the stream for each call
         * @return this builder
         */
        public Builder arrowStream(ArrowStreamExporter exporter) {
            this.stream = Objects.requireNonNull(exporter, "exporter");
            return this;
        }

        /**
         * Adds {@code __arrow_c_device_stream__(requested_schema=None, **kwargs)}.
         *
         * @param exporter fills the stream for each call
         * @return this builder
         */
        public Builder arrowDeviceStream(ArrowStreamExporter exporter) {
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
            long token = LIVE.register(new Exporters(dlpack, device, schema, array, deviceArray, stream, deviceStream));
            try (Gil ignored = Gil.ensure()) {
                MemorySegment make = Bridge.make(runtime);
                try {
                    return PyObjectRef.own(Py.call(make, List.of(token, methods), null, "devicebridge exporter"));
                } finally {
                    Py.decRef(make);
                }
            } catch (RuntimeException | Error e) {
                LIVE.remove(token);
                throw e;
            }
        }
    }

    private record Exporters(DLPackExporter dlpack, DLDeviceId device, ArrowSchemaExporter schema,
                             ArrowArrayExporter array, ArrowArrayExporter deviceArray,
                             ArrowStreamExporter stream, ArrowStreamExporter deviceStream) {}

    /**
     * The Python side: a class per set of methods, each method forwarding to one builtin ({@code _call})
     * whose C function is the Java upcall {@link #dispatch}. Installed once in the runtime's private
     * namespace.
     */
    private static final class Bridge {
        private static final String CODE = """
                def _dl(self, *, stream=None, max_version=None, dl_device=None, copy=None):
                    return _call(self._db_token, '__dlpack__', (stream, max_version, dl_device, copy))
                def _dl_device(self):
                    return _call(self._db_token, '__dlpack_device__', ())
                def _schema(self):
                    return _call(self._db_token, '__arrow_c_schema__', ())
                def _array(self, requested_schema=None):
                    return _call(self._db_token, '__arrow_c_array__', (requested_schema,))
                def _device_array(self, requested_schema=None, **kwargs):
                    _no_kwargs(kwargs)
                    return _call(self._db_token, '__arrow_c_device_array__', (requested_schema,))
                def _stream(self, requested_schema=None):
                    return _call(self._db_token, '__arrow_c_stream__', (requested_schema,))
                def _device_stream(self, requested_schema=None, **kwargs):
                    _no_kwargs(kwargs)
                    return _call(self._db_token, '__arrow_c_device_stream__', (requested_schema,))
                def _no_kwargs(kwargs):
                    for k, v in kwargs.items():
                        if v is not None:
                            raise NotImplementedError('devicebridge: unsupported keyword ' + k)
                def _del(self):
                    _call(self._db_token, '__del__', ())
                _methods = {'__dlpack__': _dl, '__dlpack_device__': _dl_device, '__arrow_c_schema__': _schema,
                            '__arrow_c_array__': _array, '__arrow_c_device_array__': _device_array,
                            '__arrow_c_stream__': _stream, '__arrow_c_device_stream__': _device_stream}
                _classes = {}
                def _make(token, names):
                    cls = _classes.get(names)
                    if cls is None:
                        ns = {n: (_exchange_capsule if n == '__dlpack_c_exchange_api__' else _methods[n]) for n in names}
                        ns['__slots__'] = ('_db_token',)
                        ns['__del__'] = _del
                        ns['__repr__'] = lambda self: '<devicebridge export %d: %s>' % (self._db_token, ', '.join(names))
                        cls = type('JavaExport', (), ns)
                        _classes[names] = cls
                    o = object.__new__(cls)
                    o._db_token = token
                    return o
                """;
        private static final MemorySegment METHOD_DEF;

        static {
            // struct PyMethodDef { const char *ml_name; PyCFunction ml_meth; int ml_flags; const char *ml_doc; }
            MemoryLayout layout = MemoryLayout.structLayout(ADDRESS.withName("ml_name"), ADDRESS.withName("ml_meth"),
                    JAVA_INT.withName("ml_flags"), MemoryLayout.paddingLayout(4), ADDRESS.withName("ml_doc"));
            METHOD_DEF = Arena.global().allocate(layout);
            METHOD_DEF.set(ADDRESS, 0, Arena.global().allocateFrom("_call"));
            METHOD_DEF.set(ADDRESS, 8, Native.upcallStub(MethodHandles.lookup(), PythonExport.class, "dispatch",
                    FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS)));
            METHOD_DEF.set(JAVA_INT, 16, PyC.METH_VARARGS);
            METHOD_DEF.set(ADDRESS, 24, MemorySegment.NULL);
        }

        /**
         * Defines {@code _call} and the exporter classes in the runtime's private namespace. Called once,
         * by {@link PythonRuntime} while it initialises (one thread, GIL held): running Python code may
         * hand the GIL to another thread, so this must not happen lazily under a Java lock.
         */
        static void install(MemorySegment ns) {
            MemorySegment fn;
            try {
                fn = Py.check((MemorySegment) PyC.PyCFunction_NewEx.invokeExact(METHOD_DEF,
                        MemorySegment.NULL, MemorySegment.NULL), "PyCFunction_New");
            } catch (Throwable t) {
                throw NativeCalls.rethrow("PyCFunction_NewEx", t);
            }
            Py.setItem(ns, "_call", fn);
            Py.setItem(ns, "_exchange_capsule", PythonExchange.newTableCapsule());
            Py.decRef(Py.run(CODE, PyC.Py_file_input, ns));
        }

        /** New reference to {@code _make}. Requires the GIL. */
        static MemorySegment make(PythonRuntime runtime) {
            MemorySegment ns = runtime.internalNamespace();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment make = Py.check((MemorySegment) PyC.PyDict_GetItemString.invokeExact(ns,
                        arena.allocateFrom("_make")), "_make");
                Py.incRef(make);
                return make;
            } catch (Throwable t) {
                throw NativeCalls.rethrow("_make", t);
            }
        }
    }

    /** Installs the Python side of the exporter objects into the runtime's private namespace (GIL held). */
    static void install(MemorySegment namespace) {
        Bridge.install(namespace);
    }

    /**
     * {@code _call(token, method, args)}: the one upcall behind every protocol method. Runs with the GIL
     * held; returns a new reference, or NULL with a Python exception set. Never throws.
     */
    @SuppressWarnings("unused")
    private static MemorySegment dispatch(MemorySegment self, MemorySegment args) {
        try {
            long token = Py.asLong(Py.tupleItem(args, 0), "token");
            String method = Py.utf8(Py.tupleItem(args, 1));
            MemorySegment params = Py.tupleItem(args, 2);
            if (method.equals("__del__")) {
                LIVE.remove(token);
                return Py.none();
            }
            Exporters e = LIVE.get(token);
            if (e == null) {
                Py.setError(PyC.EXC_RUNTIME_ERROR, "devicebridge: this exporter object is no longer usable");
                return MemorySegment.NULL;
            }
            return switch (method) {
                case "__dlpack__" -> dlpack(e, params);
                case "__dlpack_device__" -> Py.tupleStealing(Py.fromJava(e.device.deviceType()),
                        Py.fromJava(e.device.deviceId()));
                case "__arrow_c_schema__" -> schema(e);
                case "__arrow_c_array__" -> array(e.array, CapsuleKind.ARROW_ARRAY, params);
                case "__arrow_c_device_array__" -> array(e.deviceArray, CapsuleKind.ARROW_DEVICE_ARRAY, params);
                case "__arrow_c_stream__" -> stream(e.stream, CapsuleKind.ARROW_ARRAY_STREAM, params);
                case "__arrow_c_device_stream__" -> stream(e.deviceStream, CapsuleKind.ARROW_DEVICE_ARRAY_STREAM, params);
                default -> {
                    Py.setError(PyC.EXC_RUNTIME_ERROR, "devicebridge: unknown method " + method);
                    yield MemorySegment.NULL;
                }
            };
        } catch (PythonException pe) {
            return fail(PyC.EXC_BUFFER_ERROR, pe.getMessage());
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.DEBUG, "devicebridge: export to Python failed", t);
            return fail(PyC.EXC_BUFFER_ERROR, "devicebridge: " + t.getMessage());
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
        MemorySegment tensor = e.dlpack.export(new DLPackRequest(OptionalLong.of(-1), DLPack.MAJOR_VERSION,
                DLPack.MINOR_VERSION));
        if (tensor == null || tensor.equals(MemorySegment.NULL)) {
            throw new DeviceBridgeException("the DLPack exporter returned NULL");
        }
        return tensor;
    }

    private static MemorySegment fail(MemorySegment type, String message) {
        try {
            Py.setError(type, message);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: cannot raise a Python exception", t);
        }
        return MemorySegment.NULL;
    }

    private static MemorySegment dlpack(Exporters e, MemorySegment params) {
        MemorySegment stream = Py.tupleItem(params, 0);
        MemorySegment maxVersion = Py.tupleItem(params, 1);
        MemorySegment dlDevice = Py.tupleItem(params, 2);
        MemorySegment copy = Py.tupleItem(params, 3);
        if (!Py.isNone(copy) && "True".equals(Py.str(copy))) {
            return fail(PyC.EXC_BUFFER_ERROR, "devicebridge: copy=True is not supported (the export is zero-copy)");
        }
        if (!Py.isNone(dlDevice)) {
            long type = Py.asLong(Py.tupleItem(dlDevice, 0), "dl_device[0]");
            long id = Py.asLong(Py.tupleItem(dlDevice, 1), "dl_device[1]");
            if (type != e.device.deviceType() || id != e.device.deviceId()) {
                return fail(PyC.EXC_BUFFER_ERROR, String.format(java.util.Locale.ROOT,
                        "devicebridge: dl_device=(%d, %d) asked but the tensor is on (%d, %d); no cross-device copy",
                        type, id, e.device.deviceType(), e.device.deviceId()));
            }
        }
        OptionalLong s = Py.isNone(stream) ? OptionalLong.empty() : OptionalLong.of(Py.asLong(stream, "stream"));
        int major = -1;
        int minor = -1;
        if (!Py.isNone(maxVersion)) {
            major = (int) Py.asLong(Py.tupleItem(maxVersion, 0), "max_version[0]");
            minor = (int) Py.asLong(Py.tupleItem(maxVersion, 1), "max_version[1]");
        }
        DLPackRequest request = new DLPackRequest(s, major, minor);
        MemorySegment tensor = e.dlpack.export(request);
        if (tensor == null || tensor.equals(MemorySegment.NULL)) {
            return fail(PyC.EXC_BUFFER_ERROR, "devicebridge: the DLPack exporter returned NULL");
        }
        CapsuleKind kind = request.versioned() ? CapsuleKind.DLTENSOR_VERSIONED : CapsuleKind.DLTENSOR;
        try {
            return Capsules.newCapsule(tensor, kind);
        } catch (RuntimeException | Error ex) {
            kind.struct().release(tensor.reinterpret(kind.struct().byteSize())); // the capsule never owned it
            throw ex;
        }
    }

    private static MemorySegment schema(Exporters e) {
        MemorySegment heap = Native.calloc(CapsuleKind.ARROW_SCHEMA.struct().byteSize());
        try {
            e.schema.export(heap);
        } catch (RuntimeException | Error ex) {
            CapsuleKind.ARROW_SCHEMA.struct().release(heap);
            throw ex;
        }
        return capsuleOrRelease(heap, CapsuleKind.ARROW_SCHEMA);
    }

    private static MemorySegment array(ArrowArrayExporter exporter, CapsuleKind kind, MemorySegment params) {
        MemorySegment requested = requestedSchema(Py.tupleItem(params, 0));
        MemorySegment schema = Native.calloc(CapsuleKind.ARROW_SCHEMA.struct().byteSize());
        MemorySegment array = Native.calloc(kind.struct().byteSize());
        try {
            exporter.export(requested, schema, array);
        } catch (RuntimeException | Error ex) {
            CapsuleKind.ARROW_SCHEMA.struct().release(schema);
            kind.struct().release(array);
            throw ex;
        }
        MemorySegment schemaCapsule;
        try {
            schemaCapsule = Capsules.newCapsule(schema, CapsuleKind.ARROW_SCHEMA);
        } catch (RuntimeException | Error ex) {
            CapsuleKind.ARROW_SCHEMA.struct().release(schema);
            kind.struct().release(array);
            throw ex;
        }
        MemorySegment arrayCapsule;
        try {
            arrayCapsule = Capsules.newCapsule(array, kind);
        } catch (RuntimeException | Error ex) {
            Py.decRef(schemaCapsule);
            kind.struct().release(array);
            throw ex;
        }
        return Py.tupleStealing(schemaCapsule, arrayCapsule);
    }

    private static MemorySegment stream(ArrowStreamExporter exporter, CapsuleKind kind, MemorySegment params) {
        MemorySegment requested = requestedSchema(Py.tupleItem(params, 0));
        MemorySegment heap = Native.calloc(kind.struct().byteSize());
        try {
            exporter.export(requested, heap);
        } catch (RuntimeException | Error ex) {
            kind.struct().release(heap);
            throw ex;
        }
        return capsuleOrRelease(heap, kind);
    }

    private static MemorySegment capsuleOrRelease(MemorySegment heap, CapsuleKind kind) {
        try {
            return Capsules.newCapsule(heap, kind);
        } catch (RuntimeException | Error ex) {
            kind.struct().release(heap);
            throw ex;
        }
    }

    /** The borrowed {@code ArrowSchema*} of a {@code requested_schema} capsule, or NULL for None. */
    private static MemorySegment requestedSchema(MemorySegment capsule) {
        if (Py.isNone(capsule)) {
            return MemorySegment.NULL;
        }
        return Capsules.pointer(capsule, CapsuleKind.ARROW_SCHEMA).reinterpret(CapsuleKind.ARROW_SCHEMA.struct().byteSize());
    }
}
