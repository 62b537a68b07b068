package org.devicebridge.python;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.foreign.NativeCalls;

/**
 * One strong reference to a Python object, owned by Java. {@link #close()} drops it ({@code Py_DecRef},
 * taking the GIL itself, from any thread); a forgotten reference is dropped by the Cleaner and logged as
 * a leak. Every method takes the GIL itself.
 *
 * <p>Arguments given to {@link #call}, {@link #callMethod} and {@link PythonRuntime#set} are converted:
 * {@code null} to None, a {@code PyObjectRef} to the object itself (borrowed: the caller keeps its
 * reference), Boolean, Integer/Long to int, Float/Double to float, String to str, {@code int[]},
 * {@code long[]} and {@code List} to tuples; any other type throws {@link InvalidArgumentException}.
 */
public final class PyObjectRef extends NativeHandle {
    private final MemorySegment address;

    private PyObjectRef(MemorySegment address) {
        super("Python object reference", new DecRef(address));
        this.address = address;
    }

    /** Wraps a new (owned) reference; NULL is refused. Requires nothing: the GIL is not needed to wrap. */
    static PyObjectRef own(MemorySegment newReference) {
        if (newReference.equals(MemorySegment.NULL)) {
            throw new DeviceBridgeException("expected a new reference but found a NULL PyObject*");
        }
        return new PyObjectRef(newReference);
    }

    /** Takes a new reference to a borrowed object. Requires the GIL. */
    static PyObjectRef borrowed(MemorySegment borrowedReference) {
        Py.incRef(borrowedReference);
        return own(borrowedReference);
    }

    /** {@return the {@code PyObject*}, for handing to native code that borrows it; valid while this handle is live} */
    public MemorySegment address() {
        ensureLive();
        return address;
    }

    MemorySegment borrowAddress() {
        ensureLive();
        return address;
    }

    /**
     * {@return a new reference to {@code getattr(this, name)}}
     *
     * @param name the attribute name
     * @throws PythonException (AttributeError) if absent
     */
    public PyObjectRef getAttr(String name) {
        Objects.requireNonNull(name, "name");
        try (Gil ignored = Gil.acquire()) {
            return own(Py.getAttr(borrowAddress(), name));
        }
    }

    /**
     * {@return {@code hasattr(this, name)}}
     *
     * @param name the attribute name
     */
    public boolean hasAttr(String name) {
        Objects.requireNonNull(name, "name");
        try (Gil ignored = Gil.acquire()) {
            return Py.hasAttr(borrowAddress(), name);
        }
    }

    /**
     * {@return {@code this(*args)}: a new reference to the result}
     *
     * @param args the positional arguments
     * @throws PythonException if Python raised
     */
    public PyObjectRef call(Object... args) {
        return call(Arrays.asList(args), Map.of());
    }

    /**
     * {@return {@code this(*args, **kwargs)}: a new reference to the result}
     *
     * @param args the positional arguments
     * @param kwargs the keyword arguments
     * @throws PythonException if Python raised
     */
    public PyObjectRef call(List<?> args, Map<String, ?> kwargs) {
        Objects.requireNonNull(args, "args");
        try (Gil ignored = Gil.acquire()) {
            return own(Py.call(borrowAddress(), args, kwargs, "call " + shortRepr()));
        }
    }

    /**
     * {@return a new reference to the result of {@code this.name(*args)}}
     *
     * @param name the method name
     * @param args the positional arguments
     * @throws PythonException if Python raised
     */
    public PyObjectRef callMethod(String name, Object... args) {
        return callMethod(name, Arrays.asList(args), Map.of());
    }

    /**
     * {@return a new reference to the result of {@code this.name(*args, **kwargs)}}
     *
     * @param name the method name
     * @param args the positional arguments
     * @param kwargs the keyword arguments
     * @throws PythonException if Python raised
     */
    public PyObjectRef callMethod(String name, List<?> args, Map<String, ?> kwargs) {
        Objects.requireNonNull(name, "name");
        try (Gil ignored = Gil.acquire()) {
            MemorySegment m = Py.getAttr(borrowAddress(), name);
            try {
                return own(Py.call(m, args, kwargs, name));
            } finally {
                Py.decRef(m);
            }
        }
    }

    /**
     * {@return {@code int(this)} as a Java long}
     *
     * @throws PythonException if it is not an int or overflows
     */
    public long toLong() {
        try (Gil ignored = Gil.acquire()) {
            return Py.asLong(borrowAddress(), "int");
        }
    }

    /**
     * {@return {@code float(this)}}
     *
     * @throws PythonException if it is not a number
     */
    public double toDouble() {
        try (Gil ignored = Gil.acquire()) {
            return Py.asDouble(borrowAddress(), "float");
        }
    }

    /** {@return {@code this is None}} */
    public boolean isNone() {
        return borrowAddress().equals(PyC.NONE);
    }

    /** {@return {@code str(this)}} */
    public String str() {
        try (Gil ignored = Gil.acquire()) {
            return Py.str(borrowAddress());
        }
    }

    /** {@return {@code type(this).__name__}} */
    public String typeName() {
        try (Gil ignored = Gil.acquire()) {
            MemorySegment t = Py.getAttr(borrowAddress(), "__class__");
            try {
                return Py.attrString(t, "__name__");
            } finally {
                Py.decRef(t);
            }
        }
    }

    /** {@return a second, independent reference to the same object (closed separately)} */
    public PyObjectRef newReference() {
        try (Gil ignored = Gil.acquire()) {
            return borrowed(borrowAddress());
        }
    }

    private String shortRepr() {
        String r = Py.repr(address);
        return r.length() > 60 ? r.substring(0, 57) + "..." : r;
    }

    @Override
    public String toString() {
        if (!isLive()) {
            return super.toString();
        }
        try (Gil ignored = Gil.acquire()) {
            return "PyObjectRef[" + shortRepr() + "]";
        }
    }

    /** Drops the reference under the GIL; keeps only the address (never the handle). */
    private record DecRef(MemorySegment address) implements AutoCloseable {
        @Override
        public void close() {
            try (Gil ignored = Gil.ensure()) {
                Py.decRef(address);
            } catch (RuntimeException e) {
                throw e;
            } catch (Throwable t) {
                throw NativeCalls.rethrow("Py_DecRef", t);
            }
        }
    }
}
