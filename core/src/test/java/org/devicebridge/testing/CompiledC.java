package org.devicebridge.testing;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A C file of {@code src/test/c/} compiled with gcc when the tests run ({@code gcc -shared -fPIC -O1
 * -I../headers} into {@code target/test-c/lib<name>.so}) and loaded for the life of the JVM. Where gcc is
 * missing or fails, {@link #load} still returns, with {@link #unavailableReason()} saying why, so that the
 * tests using it can skip with that message (CI installs gcc).
 */
public final class CompiledC {
    private final String name;
    private final SymbolLookup lookup;
    private final String unavailableReason;
    private final Map<String, MethodHandle> handles = new ConcurrentHashMap<>();

    private CompiledC(String name, SymbolLookup lookup, String unavailableReason) {
        this.name = name;
        this.lookup = lookup;
        this.unavailableReason = unavailableReason;
    }

    /** Compiles and loads {@code src/test/c/<name>.c}; never throws for a missing gcc or a failed build. */
    public static CompiledC load(String name) {
        Objects.requireNonNull(name, "name");
        try {
            return new CompiledC(name, SymbolLookup.libraryLookup(compile(name), Arena.global()), null);
        } catch (IOException | LinkageError | IllegalArgumentException e) {
            return new CompiledC(name, null, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new CompiledC(name, null, "interrupted while compiling " + name + ".c");
        }
    }

    /**
     * Compiles {@code src/test/c/<name>.c} into {@code target/test-c/lib<name>.so} and returns that path.
     *
     * @throws IOException if the source is missing, gcc is not installed, or gcc failed (with its output)
     */
    public static Path compile(String name) throws IOException, InterruptedException {
        Path base = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
        if (!Files.isDirectory(base.resolve("src/test/c")) && Files.isDirectory(base.resolve("core/src/test/c"))) {
            base = base.resolve("core"); // run from the repository root (the staged GPU runs), not by Maven
        }
        Path source = base.resolve("src/test/c/" + name + ".c");
        Path headers = base.resolve("../headers").normalize();
        if (!Files.exists(source)) {
            throw new IOException("C source not found at " + source);
        }
        Path out = base.resolve("target/test-c/lib" + name + ".so");
        Files.createDirectories(out.getParent());
        // Built beside the target and moved into place, so that a half-written library is never loaded.
        Path tmp = Files.createTempFile(out.getParent(), "lib" + name, ".so.tmp");
        try {
            Process p;
            try {
                p = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O1", "-I" + headers, "-o", tmp.toString(),
                        source.toString(), "-lpthread").redirectErrorStream(true).start();
            } catch (IOException e) {
                throw new IOException("gcc not found, so the tests of " + name + ".c are skipped (" + e.getMessage() + ")", e);
            }
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("gcc did not finish " + name + ".c in 120 s");
            }
            if (p.exitValue() != 0) {
                throw new IOException("gcc failed on " + name + ".c: " + output);
            }
            Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
        return out;
    }

    /** {@code true} if the library was built and loaded. */
    public boolean isAvailable() {
        return lookup != null;
    }

    /** Why the library is not available; null when it is. */
    public String unavailableReason() {
        return unavailableReason;
    }

    /** The symbol lookup of the loaded library. @throws IllegalStateException if it is not available */
    public SymbolLookup lookup() {
        if (lookup == null) {
            throw new IllegalStateException(name + ".c is not available: " + unavailableReason);
        }
        return lookup;
    }

    /**
     * A downcall handle to {@code function} with {@code descriptor}, made once per pair.
     *
     * @throws IllegalStateException if the library is not available
     * @throws java.util.NoSuchElementException if it has no such symbol
     */
    public MethodHandle function(String function, FunctionDescriptor descriptor) {
        SymbolLookup lib = lookup();
        return handles.computeIfAbsent(function + descriptor,
                k -> Linker.nativeLinker().downcallHandle(lib.find(function).orElseThrow(), descriptor));
    }
}
