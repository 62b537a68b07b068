package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.internal.Native;

/**
 * Thin wrappers over {@link PyC} for the rest of the package: each turns the {@code Throwable} of
 * {@code invokeExact} into a library exception, and each call that can fail in Python turns the pending
 * Python exception into a {@link PythonException}. Every method requires the GIL; "new" results are new
 * (owned) references, "borrowed" ones are not.
 */
final class Py {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.python");

    private Py() {}

    static void incRef(MemorySegment o) {
        try {
            PyC.Py_IncRef.invokeExact(o);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("Py_IncRef", t);
        }
    }

    static void decRef(MemorySegment o) {
        try {
            PyC.Py_DecRef.invokeExact(o);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("Py_DecRef", t);
        }
    }

    /** A new reference to None. */
    static MemorySegment none() {
        incRef(PyC.NONE);
        return PyC.NONE;
    }

    static boolean isNone(MemorySegment o) {
        return o.equals(PyC.NONE);
    }

    /** Throws the pending Python exception as a {@link PythonException} if {@code result} is NULL. */
    static MemorySegment check(MemorySegment result, String context) {
        if (result.equals(MemorySegment.NULL)) {
            throw fetchError(context);
        }
        return result;
    }

    static boolean errorOccurred() {
        try {
            return !((MemorySegment) PyC.PyErr_Occurred.invokeExact()).equals(MemorySegment.NULL);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyErr_Occurred", t);
        }
    }

    static void clearError() {
        try {
            PyC.PyErr_Clear.invokeExact();
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyErr_Clear", t);
        }
    }

    /** Takes the pending Python exception (clearing it) and returns it as a {@link PythonException}. */
    static PythonException fetchError(String context) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ptype = arena.allocate(ADDRESS);
            MemorySegment pvalue = arena.allocate(ADDRESS);
            MemorySegment ptb = arena.allocate(ADDRESS);
            PyC.PyErr_Fetch.invokeExact(ptype, pvalue, ptb);
            MemorySegment type = ptype.get(ADDRESS, 0);
            if (type.equals(MemorySegment.NULL)) {
                return new PythonException(context, "SystemError", "a call failed without setting a Python exception");
            }
            PyC.PyErr_NormalizeException.invokeExact(ptype, pvalue, ptb);
            type = ptype.get(ADDRESS, 0);
            MemorySegment value = pvalue.get(ADDRESS, 0);
            MemorySegment tb = ptb.get(ADDRESS, 0);
            String typeName = attrString(type, "__name__");
            String message = value.equals(MemorySegment.NULL) ? "" : str(value);
            for (MemorySegment o : new MemorySegment[] {type, value, tb}) {
                if (!o.equals(MemorySegment.NULL)) {
                    decRef(o);
                }
            }
            return new PythonException(context, typeName == null ? "?" : typeName, message);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyErr_Fetch", t);
        }
    }

    /**
     * {@link #setError} for an upcall about to return its failure value: never throws (a failure to raise is
     * logged).
     */
    static void setErrorQuietly(MemorySegment excType, String message) {
        try {
            setError(excType, message);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "devicebridge: cannot raise a Python exception", t);
        }
    }

    /** Sets the Python error indicator (for upcalls returning NULL to Python). */
    static void setError(MemorySegment excType, String message) {
        try (Arena arena = Arena.ofConfined()) {
            PyC.PyErr_SetString.invokeExact(excType, arena.allocateFrom(message == null ? "error in Java" : message));
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyErr_SetString", t);
        }
    }

    /** {@code str(o)} as a Java string; on a failing {@code __str__} the error is cleared and "?" returned. */
    static String str(MemorySegment o) {
        return text(o, false);
    }

    static String repr(MemorySegment o) {
        return text(o, true);
    }

    private static String text(MemorySegment o, boolean repr) {
        try {
            MemorySegment s = repr ? (MemorySegment) PyC.PyObject_Repr.invokeExact(o)
                    : (MemorySegment) PyC.PyObject_Str.invokeExact(o);
            if (s.equals(MemorySegment.NULL)) {
                clearError();
                return "?";
            }
            try {
                return utf8(s);
            } finally {
                decRef(s);
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyObject_Str", t);
        }
    }

    /** The UTF-8 contents of a str object. */
    static String utf8(MemorySegment unicode) {
        try {
            MemorySegment c = (MemorySegment) PyC.PyUnicode_AsUTF8.invokeExact(unicode);
            if (c.equals(MemorySegment.NULL)) {
                throw fetchError("PyUnicode_AsUTF8");
            }
            return Native.string(c);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyUnicode_AsUTF8", t);
        }
    }

    /** {@code str(getattr(o, name))}, or null when the attribute is missing (the error is cleared). */
    static String attrString(MemorySegment o, String name) {
        MemorySegment a = getAttrOrNull(o, name);
        if (a == null) {
            return null;
        }
        try {
            return str(a);
        } finally {
            decRef(a);
        }
    }

    /** New reference to {@code getattr(o, name)}, or null (error cleared) when it does not exist. */
    static MemorySegment getAttrOrNull(MemorySegment o, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = (MemorySegment) PyC.PyObject_GetAttrString.invokeExact(o, arena.allocateFrom(name));
            if (a.equals(MemorySegment.NULL)) {
                clearError();
                return null;
            }
            return a;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyObject_GetAttrString", t);
        }
    }

    static MemorySegment getAttr(MemorySegment o, String name) {
        try (Arena arena = Arena.ofConfined()) {
            return check((MemorySegment) PyC.PyObject_GetAttrString.invokeExact(o, arena.allocateFrom(name)),
                    "getattr " + name);
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyObject_GetAttrString", t);
        }
    }

    static boolean hasAttr(MemorySegment o, String name) {
        try (Arena arena = Arena.ofConfined()) {
            return (int) PyC.PyObject_HasAttrString.invokeExact(o, arena.allocateFrom(name)) == 1;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyObject_HasAttrString", t);
        }
    }

    /** New reference: a tuple of the given new references, which it steals (even on failure). */
    static MemorySegment tupleStealing(MemorySegment... items) {
        MemorySegment t;
        try {
            t = (MemorySegment) PyC.PyTuple_New.invokeExact((long) items.length);
        } catch (Throwable e) {
            throw NativeCalls.rethrow("PyTuple_New", e);
        }
        if (t.equals(MemorySegment.NULL)) {
            for (MemorySegment i : items) {
                decRef(i);
            }
            throw fetchError("PyTuple_New");
        }
        for (int i = 0; i < items.length; i++) {
            try {
                int r = (int) PyC.PyTuple_SetItem.invokeExact(t, (long) i, items[i]);
                if (r != 0) {
                    throw fetchError("PyTuple_SetItem");
                }
            } catch (Throwable e) {
                for (int j = i + 1; j < items.length; j++) {
                    decRef(items[j]);
                }
                decRef(t);
                throw NativeCalls.rethrow("PyTuple_SetItem", e);
            }
        }
        return t;
    }

    /** Borrowed reference to item {@code i} of a tuple (checked). */
    static MemorySegment tupleItem(MemorySegment tuple, long i) {
        try {
            return check((MemorySegment) PyC.PyTuple_GetItem.invokeExact(tuple, i), "tuple item");
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyTuple_GetItem", t);
        }
    }

    static long tupleSize(MemorySegment tuple) {
        try {
            long n = (long) PyC.PyTuple_Size.invokeExact(tuple);
            if (n < 0) {
                throw fetchError("tuple size");
            }
            return n;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyTuple_Size", t);
        }
    }

    static long asLong(MemorySegment o, String context) {
        try {
            long v = (long) PyC.PyLong_AsLongLong.invokeExact(o);
            if (v == -1 && errorOccurred()) {
                throw fetchError(context);
            }
            return v;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyLong_AsLongLong", t);
        }
    }

    static double asDouble(MemorySegment o, String context) {
        try {
            double v = (double) PyC.PyFloat_AsDouble.invokeExact(o);
            if (v == -1.0 && errorOccurred()) {
                throw fetchError(context);
            }
            return v;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyFloat_AsDouble", t);
        }
    }

    /**
     * New reference converted from a Java value: null (None), {@link PyObjectRef} (a new reference to it),
     * Boolean, Integer/Long/Short/Byte, Float/Double, String (str), int[]/long[] and List (tuples).
     */
    static MemorySegment fromJava(Object v) {
        try {
            if (v == null) {
                return none();
            }
            if (v instanceof PyObjectRef r) {
                MemorySegment a = r.borrowAddress();
                incRef(a);
                return a;
            }
            if (v instanceof Boolean b) {
                return check((MemorySegment) PyC.PyBool_FromLong.invokeExact(b ? 1L : 0L), "bool");
            }
            if (v instanceof Long | v instanceof Integer | v instanceof Short | v instanceof Byte) {
                return check((MemorySegment) PyC.PyLong_FromLongLong.invokeExact(((Number) v).longValue()), "int");
            }
            if (v instanceof Double | v instanceof Float) {
                return check((MemorySegment) PyC.PyFloat_FromDouble.invokeExact(((Number) v).doubleValue()), "float");
            }
            if (v instanceof String s) {
                try (Arena arena = Arena.ofConfined()) {
                    return check((MemorySegment) PyC.PyUnicode_FromString.invokeExact(arena.allocateFrom(s)), "str");
                }
            }
            if (v instanceof int[] a) {
                MemorySegment[] items = new MemorySegment[a.length];
                for (int i = 0; i < a.length; i++) {
                    items[i] = fromJava((long) a[i]);
                }
                return tupleStealing(items);
            }
            if (v instanceof long[] a) {
                MemorySegment[] items = new MemorySegment[a.length];
                for (int i = 0; i < a.length; i++) {
                    items[i] = fromJava(a[i]);
                }
                return tupleStealing(items);
            }
            if (v instanceof List<?> l) {
                MemorySegment[] items = new MemorySegment[l.size()];
                for (int i = 0; i < items.length; i++) {
                    items[i] = fromJava(l.get(i));
                }
                return tupleStealing(items);
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow("conversion to Python", t);
        }
        throw new InvalidArgumentException("", "expected null, a PyObjectRef, Boolean, an integer, Float, Double, "
                + "String, int[], long[] or a List but found a " + v.getClass().getName() + " (no Python conversion)");
    }

    /** New reference: {@code callable(*args, **kwargs)}. */
    static MemorySegment call(MemorySegment callable, List<?> args, Map<String, ?> kwargs, String context) {
        MemorySegment[] items = new MemorySegment[args.size()];
        for (int i = 0; i < items.length; i++) {
            items[i] = fromJava(args.get(i));
        }
        MemorySegment tuple = tupleStealing(items);
        MemorySegment dict = MemorySegment.NULL;
        try {
            if (kwargs != null && !kwargs.isEmpty()) {
                dict = check((MemorySegment) PyC.PyDict_New.invokeExact(), "dict");
                for (Map.Entry<String, ?> e : kwargs.entrySet()) {
                    setItem(dict, e.getKey(), fromJava(e.getValue()));
                }
            }
            return check((MemorySegment) PyC.PyObject_Call.invokeExact(callable, tuple, dict), context);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(context, t);
        } finally {
            decRef(tuple);
            if (!dict.equals(MemorySegment.NULL)) {
                decRef(dict);
            }
        }
    }

    /** {@code dict[key] = value}, stealing {@code value}. */
    static void setItem(MemorySegment dict, String key, MemorySegment value) {
        try (Arena arena = Arena.ofConfined()) {
            int r = (int) PyC.PyDict_SetItemString.invokeExact(dict, arena.allocateFrom(key), value);
            if (r != 0) {
                throw fetchError("dict[" + key + "]");
            }
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyDict_SetItemString", t);
        } finally {
            decRef(value);
        }
    }

    /** New reference: runs {@code code} with {@code start} ({@link PyC#Py_file_input} or eval) in {@code globals}. */
    static MemorySegment run(String code, int start, MemorySegment globals) {
        try (Arena arena = Arena.ofConfined()) {
            return check((MemorySegment) PyC.PyRun_String.invokeExact(arena.allocateFrom(code), start, globals, globals),
                    start == PyC.Py_eval_input ? "eval" : "exec");
        } catch (Throwable t) {
            throw NativeCalls.rethrow("PyRun_String", t);
        }
    }
}
