package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.List;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.Native;

/**
 * The Python side of exporter objects ({@link PythonExport}): a class per set of methods, each method
 * forwarding to one builtin ({@code _call}) whose C function is the Java upcall
 * {@link ExportDispatch#dispatch}. Installed once in the runtime's private namespace; the classes are made
 * there on first use (GIL held). Stateless on the Java side apart from the immortal {@code PyMethodDef}.
 */
final class ExporterClasses {
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
            def _ai(self):
                return _ai_dict(*_call(self._db_token, '__array_interface__', ()))
            def _cai(self):
                return _ai_dict(*_call(self._db_token, '__cuda_array_interface__', ()))
            _methods = {'__array_interface__': property(_ai), '__cuda_array_interface__': property(_cai),
                        '__dlpack__': _dl, '__dlpack_device__': _dl_device, '__arrow_c_schema__': _schema,
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
        METHOD_DEF.set(ADDRESS, 8, Native.upcallStub(MethodHandles.lookup(), ExportDispatch.class, "dispatch",
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS)));
        METHOD_DEF.set(JAVA_INT, 16, PyC.METH_VARARGS);
        METHOD_DEF.set(ADDRESS, 24, MemorySegment.NULL);
    }

    private ExporterClasses() {}

    /**
     * Defines the array interfaces' helpers, {@code _call} and the exporter classes in the runtime's private
     * namespace. Called once, by {@link PythonRuntime} while it initialises (one thread, GIL held): running
     * Python code may hand the GIL to another thread, so this must not happen lazily under a Java lock.
     */
    static void install(MemorySegment ns) {
        InterfaceScript.install(ns);
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

    /**
     * Makes the Python object for {@code token}, an instance of the class that has exactly {@code methods}.
     * Takes the GIL. After a return the caller owns the new reference; after a throw nothing was made.
     */
    static PyObjectRef newObject(PythonRuntime runtime, long token, List<String> methods) {
        try (Gil ignored = Gil.ensure()) {
            MemorySegment make = make(runtime);
            try {
                return PyObjectRef.own(Py.call(make, List.of(token, methods), null, "devicebridge exporter"));
            } finally {
                Py.decRef(make);
            }
        }
    }

    /** New reference to {@code _make}. Requires the GIL. */
    private static MemorySegment make(PythonRuntime runtime) {
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
