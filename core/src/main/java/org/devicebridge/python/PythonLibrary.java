package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.devicebridge.internal.Native;

/**
 * Finds and loads {@code libpython3.x} once, on first use.
 *
 * <p>The library is opened with {@code RTLD_NOW | RTLD_GLOBAL}: CPython extension modules (NumPy, pyarrow,
 * PyTorch) are shared objects that resolve the C API from the global namespace, so a library opened by
 * {@link System#load} (which uses {@code RTLD_LOCAL}) would load but make every extension import fail.
 *
 * <p>Where the library comes from, first match wins:
 * <ol>
 *   <li>the system property {@code devicebridge.python.library} or the environment variable
 *       {@code DEVICEBRIDGE_PYTHON_LIBRARY} (a path);</li>
 *   <li>the interpreter named by {@code devicebridge.python.executable} / {@code DEVICEBRIDGE_PYTHON},
 *       else {@code python3} on the PATH: its {@code sysconfig} LIBDIR/LDLIBRARY (a venv's interpreter
 *       reports its base installation's library), and its {@code sys.path} is added to the embedded
 *       interpreter's so that the venv's site-packages are found;</li>
 *   <li>the dynamic linker's search for {@code libpython3.13.so.1.0}, ..., {@code libpython3.9.so.1.0}.</li>
 * </ol>
 * Extra import directories: {@code devicebridge.python.path} / {@code DEVICEBRIDGE_PYTHON_PATH}
 * (separated by {@code :}).
 */
final class PythonLibrary {
    private static final int RTLD_NOW = 2;
    private static final int RTLD_GLOBAL = 0x100;
    private static final String[] SONAMES = {
        "libpython3.13.so.1.0", "libpython3.12.so.1.0", "libpython3.11.so.1.0", "libpython3.10.so.1.0",
        "libpython3.9.so.1.0", "libpython3.so"
    };

    /** Where the library came from and what to add to {@code sys.path} after initialisation. */
    record Status(boolean available, String reason, String path, String executable, List<String> sysPath,
                  MemorySegment handle, Throwable cause) {}

    private static final Status STATUS = load();

    private PythonLibrary() {}

    static Status status() {
        return STATUS;
    }

    static Status require() {
        if (!STATUS.available) {
            throw new PythonUnavailableException(STATUS.reason, STATUS.cause);
        }
        return STATUS;
    }

    private static String setting(String property, String env) {
        String v = System.getProperty(property);
        if (v == null || v.isBlank()) {
            v = System.getenv(env);
        }
        return v == null || v.isBlank() ? null : v.trim();
    }

    private static Status load() {
        MethodHandle dlopen;
        MethodHandle dlerror;
        try {
            dlopen = Native.libc("dlopen", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
            dlerror = Native.libc("dlerror", FunctionDescriptor.of(ADDRESS));
        } catch (RuntimeException e) {
            return new Status(false, e.getMessage(), null, null, List.of(), null, e);
        }
        List<String> extra = new ArrayList<>();
        String configuredPath = setting("devicebridge.python.path", "DEVICEBRIDGE_PYTHON_PATH");
        if (configuredPath != null) {
            for (String p : configuredPath.split(":")) {
                if (!p.isBlank()) {
                    extra.add(p);
                }
            }
        }
        String explicit = setting("devicebridge.python.library", "DEVICEBRIDGE_PYTHON_LIBRARY");
        String configuredExe = setting("devicebridge.python.executable", "DEVICEBRIDGE_PYTHON");
        List<String> tried = new ArrayList<>();
        if (explicit != null) {
            MemorySegment h = open(dlopen, dlerror, explicit, tried);
            if (h == null) {
                return new Status(false, "cannot load the Python library named by devicebridge.python.library / "
                        + "DEVICEBRIDGE_PYTHON_LIBRARY: " + String.join("; ", tried), explicit, null, List.of(), null, null);
            }
            if (configuredExe != null) {
                Probe probe = probe(configuredExe);
                if (probe != null) {
                    extra.addAll(probe.sysPath);
                }
            }
            return new Status(true, "loaded " + explicit, explicit, configuredExe, List.copyOf(extra), h, null);
        }
        String exe = configuredExe != null ? configuredExe : "python3";
        Probe probe = probe(exe);
        if (probe != null && probe.library != null && Files.isRegularFile(Path.of(probe.library))) {
            MemorySegment h = open(dlopen, dlerror, probe.library, tried);
            if (h != null) {
                extra.addAll(probe.sysPath);
                return new Status(true, "loaded " + probe.library + " (reported by " + probe.executable + ")",
                        probe.library, probe.executable, List.copyOf(extra), h, null);
            }
        } else {
            tried.add(exe + ": " + (probe == null ? "not runnable" : "reports no shared libpython"));
        }
        for (String soname : SONAMES) {
            MemorySegment h = open(dlopen, dlerror, soname, tried);
            if (h != null) {
                return new Status(true, "loaded " + soname + " (dynamic linker search)", soname, null,
                        List.copyOf(extra), h, null);
            }
        }
        return new Status(false, "no shared libpython3 was found (install libpython3-dev, or set "
                + "DEVICEBRIDGE_PYTHON_LIBRARY / -Ddevicebridge.python.library to its path); tried: "
                + String.join("; ", tried), null, null, List.of(), null, null);
    }

    private static MemorySegment open(MethodHandle dlopen, MethodHandle dlerror, String name, List<String> tried) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = (MemorySegment) dlopen.invokeExact(arena.allocateFrom(name), RTLD_NOW | RTLD_GLOBAL);
            if (h.equals(MemorySegment.NULL)) {
                String why = Native.string((MemorySegment) dlerror.invokeExact());
                tried.add(why == null ? name + ": not found" : why);
                return null;
            }
            return h;
        } catch (Throwable t) {
            tried.add(name + ": " + t);
            return null;
        }
    }

    private record Probe(String executable, String library, List<String> sysPath) {}

    /** Asks an interpreter for its shared library and its import path; null when it cannot be run. */
    private static Probe probe(String exe) {
        String script = "import sys, sysconfig, os\n"
                + "d = sysconfig.get_config_var('LIBDIR') or ''\n"
                + "n = sysconfig.get_config_var('INSTSONAME') or sysconfig.get_config_var('LDLIBRARY') or ''\n"
                + "shared = sysconfig.get_config_var('Py_ENABLE_SHARED')\n"
                + "print(sys.executable)\n"
                + "print(os.path.join(d, n) if shared and d and n else '')\n"
                + "for p in sys.path:\n"
                + "    if p: print(p)\n";
        try {
            Process p = new ProcessBuilder(exe, "-c", script).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            p.getOutputStream().close();
            byte[] out;
            try (InputStream in = p.getInputStream()) {
                out = in.readAllBytes();
            }
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return null;
            }
            if (p.exitValue() != 0) {
                return null;
            }
            List<String> lines = new String(out, StandardCharsets.UTF_8).lines().toList();
            if (lines.size() < 2) {
                return null;
            }
            String lib = lines.get(1).isBlank() ? null : lines.get(1);
            return new Probe(lines.get(0), lib, List.copyOf(lines.subList(2, lines.size())));
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
