package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.Native;

/**
 * The CPython C API functions this package calls, bound once by hand (there is no generated binding for
 * Python). Loading this class loads libpython (through {@link PythonLibrary#require()}), so it is only
 * touched after {@link PythonRuntime} found the library. All handles are static final; callers must hold
 * the GIL for every function except the initialisation and GIL functions.
 */
final class PyC {
    private static final MemorySegment LIB = PythonLibrary.require().handle();
    private static final MethodHandle DLSYM = Native.libc("dlsym", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));

    static final int Py_file_input = 257;
    static final int Py_eval_input = 258;
    static final int METH_VARARGS = 0x0001;

    // interpreter and GIL
    static final MethodHandle Py_IsInitialized = fn("Py_IsInitialized", FunctionDescriptor.of(JAVA_INT));
    static final MethodHandle Py_InitializeEx = fn("Py_InitializeEx", FunctionDescriptor.ofVoid(JAVA_INT));
    static final MethodHandle PyEval_SaveThread = fn("PyEval_SaveThread", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle PyGILState_Ensure = fn("PyGILState_Ensure", FunctionDescriptor.of(JAVA_INT));
    static final MethodHandle PyGILState_Release = fn("PyGILState_Release", FunctionDescriptor.ofVoid(JAVA_INT));
    static final MethodHandle PyGILState_Check = fn("PyGILState_Check", FunctionDescriptor.of(JAVA_INT));
    static final MethodHandle Py_GetVersion = fn("Py_GetVersion", FunctionDescriptor.of(ADDRESS));
    /** Optional (deprecated in 3.11, gone in later versions); null when absent. */
    static final MethodHandle Py_SetProgramName = optional("Py_SetProgramName", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle Py_DecodeLocale = optional("Py_DecodeLocale", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));

    // references
    static final MethodHandle Py_IncRef = fn("Py_IncRef", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle Py_DecRef = fn("Py_DecRef", FunctionDescriptor.ofVoid(ADDRESS));

    // capsules
    static final MethodHandle PyCapsule_New = fn("PyCapsule_New", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyCapsule_GetPointer = fn("PyCapsule_GetPointer", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyCapsule_GetName = fn("PyCapsule_GetName", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle PyCapsule_SetName = fn("PyCapsule_SetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle PyCapsule_IsValid = fn("PyCapsule_IsValid", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle PyCapsule_SetDestructor = fn("PyCapsule_SetDestructor", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));

    // code, modules, attributes, calls
    static final MethodHandle PyRun_String = fn("PyRun_String", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle PyImport_ImportModule = fn("PyImport_ImportModule", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle PyEval_GetBuiltins = fn("PyEval_GetBuiltins", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle PyObject_GetAttrString = fn("PyObject_GetAttrString", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyObject_HasAttrString = fn("PyObject_HasAttrString", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle PyObject_Call = fn("PyObject_Call", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyObject_Str = fn("PyObject_Str", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle PyObject_Repr = fn("PyObject_Repr", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle PyCFunction_NewEx = fn("PyCFunction_NewEx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));

    // containers and scalars
    static final MethodHandle PyDict_New = fn("PyDict_New", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle PyDict_SetItemString = fn("PyDict_SetItemString", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyDict_GetItemString = fn("PyDict_GetItemString", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyTuple_New = fn("PyTuple_New", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    static final MethodHandle PyTuple_SetItem = fn("PyTuple_SetItem", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle PyTuple_GetItem = fn("PyTuple_GetItem", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG));
    static final MethodHandle PyTuple_Size = fn("PyTuple_Size", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    static final MethodHandle PyList_Append = fn("PyList_Append", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle PySys_GetObject = fn("PySys_GetObject", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle PyLong_FromLongLong = fn("PyLong_FromLongLong", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    static final MethodHandle PyLong_AsLongLong = fn("PyLong_AsLongLong", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    static final MethodHandle PyFloat_FromDouble = fn("PyFloat_FromDouble", FunctionDescriptor.of(ADDRESS, JAVA_DOUBLE));
    static final MethodHandle PyFloat_AsDouble = fn("PyFloat_AsDouble", FunctionDescriptor.of(JAVA_DOUBLE, ADDRESS));
    static final MethodHandle PyBool_FromLong = fn("PyBool_FromLong", FunctionDescriptor.of(ADDRESS, JAVA_LONG));
    static final MethodHandle PyUnicode_FromString = fn("PyUnicode_FromString", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle PyUnicode_AsUTF8 = fn("PyUnicode_AsUTF8", FunctionDescriptor.of(ADDRESS, ADDRESS));

    // errors
    static final MethodHandle PyErr_Occurred = fn("PyErr_Occurred", FunctionDescriptor.of(ADDRESS));
    static final MethodHandle PyErr_Fetch = fn("PyErr_Fetch", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyErr_Restore = fn("PyErr_Restore", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyErr_NormalizeException = fn("PyErr_NormalizeException", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle PyErr_SetString = fn("PyErr_SetString", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    static final MethodHandle PyErr_Clear = fn("PyErr_Clear", FunctionDescriptor.ofVoid());

    /** {@code Py_None}: the address of {@code _Py_NoneStruct}. */
    static final MemorySegment NONE = symbol("_Py_NoneStruct");
    /** The exception type objects (the symbols are {@code PyObject *} variables). */
    static final MemorySegment EXC_RUNTIME_ERROR = variable("PyExc_RuntimeError");
    static final MemorySegment EXC_BUFFER_ERROR = variable("PyExc_BufferError");
    static final MemorySegment EXC_TYPE_ERROR = variable("PyExc_TypeError");
    static final MemorySegment EXC_NOT_IMPLEMENTED_ERROR = variable("PyExc_NotImplementedError");

    private PyC() {}

    static MemorySegment find(String name) {
        try (Arena arena = Arena.ofConfined()) {
            return (MemorySegment) DLSYM.invokeExact(LIB, arena.allocateFrom(name));
        } catch (Throwable t) {
            throw NativeCalls.rethrow("dlsym", t);
        }
    }

    private static MemorySegment symbol(String name) {
        MemorySegment s = find(name);
        if (s.equals(MemorySegment.NULL)) {
            throw new PythonUnavailableException("the Python library has no symbol " + name, null);
        }
        return s;
    }

    private static MemorySegment variable(String name) {
        return symbol(name).reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0);
    }

    private static MethodHandle fn(String name, FunctionDescriptor descriptor) {
        return Native.downcall(symbol(name), descriptor);
    }

    private static MethodHandle optional(String name, FunctionDescriptor descriptor) {
        MemorySegment s = find(name);
        return s.equals(MemorySegment.NULL) ? null : Native.downcall(s, descriptor);
    }
}
