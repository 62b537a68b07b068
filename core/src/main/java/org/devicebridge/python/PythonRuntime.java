package org.devicebridge.python;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import org.devicebridge.foreign.NativeCalls;
import org.devicebridge.internal.Native;
import org.devicebridge.internal.NativeAccess;
import org.devicebridge.internal.Platform;

/**
 * The CPython interpreter this JVM talks to: libpython3 loaded on first use (see {@link #get()} for where
 * it is found), initialised if no one did it before (a JVM started inside Python attaches instead), and
 * left with the GIL released so that any Java thread can take it.
 *
 * <p>Every call into Python holds the GIL: the methods of this package take it themselves; code that
 * makes several calls in a row can hold it across them with {@link #gil()} (re-entrant, per thread).
 * Python objects are held through {@link PyObjectRef}, which owns one strong reference.
 *
 * <p>The interpreter is never finalised: extension modules (NumPy, PyTorch) do not support it, and
 * Python objects may still be referenced from Java until the JVM exits.
 */
public final class PythonRuntime {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.python");
    private static final Object LOCK = new Object();
    private static volatile PythonRuntime instance;
    private static volatile Throwable initFailure;

    private final String version;
    private final String libraryPath;
    private final boolean initialisedHere;
    /**
     * The package's private namespace. The runtime holds this one reference for the life of the process
     * (the interpreter is never finalised), so it is a plain address, not a handle: a handle would stay
     * open forever and hide real leaks from the leak checks.
     */
    private final MemorySegment namespace;

    private PythonRuntime(String version, String libraryPath, boolean initialisedHere, MemorySegment namespace) {
        this.version = version;
        this.libraryPath = libraryPath;
        this.initialisedHere = initialisedHere;
        this.namespace = namespace;
    }

    /** {@return {@code true} when native access is enabled, a libpython3 was found and the interpreter is (or can be) initialised} */
    public static boolean isAvailable() {
        if (!Platform.supported() || !NativeAccess.granted()) {
            return false;
        }
        try {
            get();
            return true;
        } catch (PythonUnavailableException e) {
            return false;
        }
    }

    /** {@return why Python is unavailable (native access not enabled, naming the flag; no libpython), or where it was loaded from} */
    public static String unavailableReason() {
        if (!Platform.supported()) {
            return Platform.unsupportedReason();
        }
        if (!NativeAccess.granted()) {
            return NativeAccess.message();
        }
        try {
            return get().libraryPath;
        } catch (PythonUnavailableException e) {
            return e.getMessage();
        }
    }

    /**
     * The runtime, loading and initialising CPython on the first call: the library named by
     * {@code -Ddevicebridge.python.library} / {@code DEVICEBRIDGE_PYTHON_LIBRARY}, else the one the
     * interpreter {@code -Ddevicebridge.python.executable} / {@code DEVICEBRIDGE_PYTHON} (default
     * {@code python3} on the PATH) reports through {@code sysconfig}, else {@code libpython3.X.so.1.0}
     * from the dynamic linker's search path. That interpreter's {@code sys.path} (so a venv's
     * site-packages) and {@code -Ddevicebridge.python.path} / {@code DEVICEBRIDGE_PYTHON_PATH} are added
     * to {@code sys.path}.
     *
     * @return the one runtime of this JVM
     * @throws PythonUnavailableException with the reason, on every call, where no library could be loaded
     */
    public static PythonRuntime get() {
        requireNativeAccess();
        PythonRuntime r = instance;
        if (r != null) {
            return r;
        }
        synchronized (LOCK) {
            if (instance != null) {
                return instance;
            }
            if (initFailure != null) {
                throw new PythonUnavailableException(initFailure.getMessage(), initFailure);
            }
            try {
                instance = initialise();
                return instance;
            } catch (PythonUnavailableException e) {
                initFailure = e;
                throw e;
            } catch (Throwable e) {
                Throwable cause = e instanceof ExceptionInInitializerError && e.getCause() != null ? e.getCause() : e;
                if (cause instanceof PythonUnavailableException pu) {
                    initFailure = pu;
                    throw pu;
                }
                initFailure = new PythonUnavailableException("cannot initialise CPython: " + cause, cause);
                throw (PythonUnavailableException) initFailure;
            }
        }
    }

    private static PythonRuntime initialise() throws Throwable {
        PythonLibrary.Status lib = PythonLibrary.require();
        boolean initialisedHere = false;
        if ((int) PyC.Py_IsInitialized.invokeExact() == 0) {
            if (lib.executable() != null && PyC.Py_SetProgramName != null && PyC.Py_DecodeLocale != null) {
                // Lets CPython compute sys.prefix (and a venv's pyvenv.cfg) from the interpreter that
                // reported the library, instead of from whichever python3 comes first on the PATH.
                MemorySegment wide = (MemorySegment) PyC.Py_DecodeLocale.invokeExact(
                        Arena.global().allocateFrom(lib.executable()), MemorySegment.NULL);
                if (!wide.equals(MemorySegment.NULL)) {
                    PyC.Py_SetProgramName.invokeExact(wide); // CPython keeps the pointer: never freed
                }
            }
            PyC.Py_InitializeEx.invokeExact(0); // 0: leave the JVM's signal handlers alone
            if ((int) PyC.Py_IsInitialized.invokeExact() == 0) {
                throw new PythonUnavailableException("Py_InitializeEx did not initialise the interpreter", null);
            }
            initialisedHere = true;
            // Py_InitializeEx leaves this thread holding the GIL; release it so that every Java thread
            // (this one included) takes it through PyGILState_Ensure.
            MemorySegment ignored = (MemorySegment) PyC.PyEval_SaveThread.invokeExact();
        }
        int state = (int) PyC.PyGILState_Ensure.invokeExact();
        try {
            String version = Native.string((MemorySegment) PyC.Py_GetVersion.invokeExact());
            MemorySegment path = (MemorySegment) PyC.PySys_GetObject.invokeExact(Arena.global().allocateFrom("path"));
            if (!path.equals(MemorySegment.NULL)) {
                for (String p : lib.sysPath()) {
                    addToPath(path, p);
                }
            }
            MemorySegment globals = Py.check((MemorySegment) PyC.PyDict_New.invokeExact(), "dict");
            MemorySegment builtins = (MemorySegment) PyC.PyEval_GetBuiltins.invokeExact();
            Py.incRef(builtins);
            Py.setItem(globals, "__builtins__", builtins);
            ExporterClasses.install(globals);
            LOG.log(System.Logger.Level.DEBUG, "CPython {0} from {1}", version, lib.path());
            return new PythonRuntime(version == null ? "?" : version.lines().findFirst().orElse(version),
                    lib.path(), initialisedHere, globals);
        } finally {
            PyC.PyGILState_Release.invokeExact(state);
        }
    }

    /** Appends {@code dir} to {@code sys.path} unless it is there already. */
    private static void addToPath(MemorySegment sysPath, String dir) throws Throwable {
        MemorySegment contains = Py.getAttr(sysPath, "__contains__");
        try {
            MemorySegment r = Py.call(contains, List.of(dir), null, "sys.path.__contains__");
            boolean present = "True".equals(Py.str(r));
            Py.decRef(r);
            if (!present) {
                MemorySegment s = Py.fromJava(dir);
                int rc = (int) PyC.PyList_Append.invokeExact(sysPath, s);
                Py.decRef(s);
                if (rc != 0) {
                    throw Py.fetchError("sys.path.append");
                }
            }
        } finally {
            Py.decRef(contains);
        }
    }

    /** {@return the interpreter's {@code sys.version} first line, e.g. {@code 3.11.2 (main, ...)}} */
    public String version() {
        return version;
    }

    /** {@return the libpython path (or soname) that was loaded} */
    public String libraryPath() {
        return libraryPath;
    }

    /** {@return {@code true} if this library initialised the interpreter; {@code false} if the JVM runs inside Python} */
    public boolean initialisedHere() {
        return initialisedHere;
    }

    /**
     * Takes the GIL for the calling thread until the returned take is closed, on this same thread.
     * Re-entrant: a thread that already holds it may take it again (each take closed once).
     *
     * @return this take of the GIL; the calling thread owns it and must close it
     */
    Gil gil() {
        return Gil.acquire();
    }

    /**
     * Runs {@code body} holding the GIL (re-entrant: a thread that holds it already may call this again).
     *
     * @param <T> what {@code body} returns
     * @param body the code to run
     * @return what {@code body} returned
     */
    public <T> T withGil(Supplier<T> body) {
        Objects.requireNonNull(body, "body");
        try (Gil ignored = Gil.acquire()) {
            return body.get();
        }
    }

    /**
     * {@return {@code import name}: a new reference to the module}
     *
     * @param name the module's dotted name, e.g. {@code numpy}
     * @throws PythonException if the import fails
     */
    public PyObjectRef importModule(String name) {
        Objects.requireNonNull(name, "name");
        try (Gil ignored = Gil.acquire(); Arena arena = Arena.ofConfined()) {
            return PyObjectRef.own(Py.check((MemorySegment) PyC.PyImport_ImportModule.invokeExact(arena.allocateFrom(name)),
                    "import " + name));
        } catch (Throwable t) {
            throw NativeCalls.rethrow("import " + name, t);
        }
    }

    /**
     * {@return {@code True} if {@code import name} succeeds; the failure (ImportError or any other) is swallowed}
     * For probing optional consumers such as pyarrow or torch.
     *
     * @param name the module's dotted name, e.g. {@code numpy}
     */
    public boolean canImport(String name) {
        try (PyObjectRef ignored = importModule(name)) {
            return true;
        } catch (PythonException e) {
            return false;
        }
    }

    /** {@return a new, empty globals dictionary (with {@code __builtins__}) for {@link #exec} and {@link #eval}} */
    public PyObjectRef newNamespace() {
        try (Gil ignored = Gil.acquire()) {
            MemorySegment d = Py.check((MemorySegment) PyC.PyDict_New.invokeExact(), "dict");
            PyObjectRef ref = PyObjectRef.own(d);
            MemorySegment builtins = (MemorySegment) PyC.PyEval_GetBuiltins.invokeExact();
            Py.incRef(builtins);
            Py.setItem(d, "__builtins__", builtins);
            return ref;
        } catch (Throwable t) {
            throw NativeCalls.rethrow("dict", t);
        }
    }

    /**
     * Runs statements in {@code namespace} (a dict from {@link #newNamespace()}).
     *
     * @param code Python statements
     * @param namespace the namespace dictionary (borrowed)
     * @throws PythonException if Python raised
     */
    public void exec(String code, PyObjectRef namespace) {
        Objects.requireNonNull(code, "code");
        try (Gil ignored = Gil.acquire()) {
            Py.decRef(Py.run(code, PyC.Py_file_input, namespace.borrowAddress()));
        }
    }

    /**
     * Evaluates an expression in {@code namespace}: a new reference to its value.
     *
     * @param expression a Python expression
     * @param namespace the namespace dictionary (borrowed)
     * @return a new reference, owned by the caller (close it)
     * @throws PythonException if Python raised
     */
    public PyObjectRef eval(String expression, PyObjectRef namespace) {
        Objects.requireNonNull(expression, "expression");
        try (Gil ignored = Gil.acquire()) {
            return PyObjectRef.own(Py.run(expression, PyC.Py_eval_input, namespace.borrowAddress()));
        }
    }

    /**
     * Sets {@code namespace[name] = value} (a Java value converted as by {@link PyObjectRef#call}).
     *
     * @param namespace the namespace dictionary (borrowed)
     * @param name the variable name
     * @param value the Java value to convert
     */
    public void set(PyObjectRef namespace, String name, Object value) {
        Objects.requireNonNull(name, "name");
        try (Gil ignored = Gil.acquire()) {
            Py.setItem(namespace.borrowAddress(), name, Py.fromJava(value));
        }
    }

    /** The package's private namespace (a borrowed reference), where the exporter class lives. */
    MemorySegment internalNamespace() {
        return namespace;
    }

    @Override
    public String toString() {
        return "CPython " + version + " (" + libraryPath + ")";
    }
}
