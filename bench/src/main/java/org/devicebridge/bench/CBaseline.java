package org.devicebridge.bench;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The C baselines of B2 and B4 ({@code bench/src/main/c/b2_baseline.c}, carried in the class folder as a
 * resource), compiled with the machine's C compiler ({@code $CC}, else {@code cc}, {@code gcc} or
 * {@code clang} on the {@code PATH}; {@code -O2 -shared -fPIC}) into a temporary folder when this class
 * initialises, loaded for the life of the JVM, and called through static final downcall handles, so a
 * benchmark's C loop costs one FFM call per invocation. Needs no Maven: it works from the staged class
 * folders on the GPU machine, which has gcc.
 *
 * <p>The C side keeps its batch and tensor per thread: {@link #prepareB2} and {@link #prepareB4} must run
 * on the thread that then calls the loop (JMH runs {@code @Setup} of a {@code Scope.Thread} state on its
 * worker thread).
 *
 * <p>Initialisation fails with an {@link IllegalStateException} (seen by the caller as the cause of an
 * {@link ExceptionInInitializerError}) when no C compiler exists or the compilation fails; its message
 * says which and what to install.
 */
final class CBaseline {
    private static final String SOURCE = "b2_baseline.c";
    private static final Linker LINKER = Linker.nativeLinker();

    /** {@code int32_t b2_prepare(int32_t columns, int64_t rows, int64_t seed)}: 0, or -1. */
    private static final MethodHandle B2_PREPARE;
    /** {@code void b2_free(void)}. */
    private static final MethodHandle B2_FREE;
    /**
     * {@code int64_t b2_export_import_release(int32_t columns, int64_t iterations)}: per iteration, a shallow
     * export of the thread's batch, a move, the DEFAULT-level checks and the release; a checksum, or -1.
     */
    static final MethodHandle B2_LOOP;
    /**
     * {@code int32_t b2_stream_open(int32_t columns, struct ArrowArrayStream* out)}: a stream of the thread's
     * batch (its schema, then the batch on every {@code get_next}); 0, or -1.
     */
    private static final MethodHandle B2_STREAM_OPEN;
    /**
     * {@code int64_t b2_stream_loop(int32_t columns, int64_t iterations)}: the schema read once, then per
     * iteration {@code get_next}, a move, the DEFAULT-level checks, one value read and the release; a
     * checksum, or -1.
     */
    static final MethodHandle B2_STREAM_LOOP;
    /** {@code int32_t b4_prepare(int64_t seed)}: 0, or -1. */
    private static final MethodHandle B4_PREPARE;
    /** {@code void b4_free(void)}. */
    private static final MethodHandle B4_FREE;
    /**
     * {@code int64_t b4_export_import_release(int64_t iterations)}: per iteration, a DLManagedTensorVersioned
     * export of the thread's 4-D tensor, the consumer's checks, one element read and the deleter; a
     * checksum, or -1.
     */
    static final MethodHandle B4_LOOP;

    static {
        SymbolLookup lib = compileAndLoad();
        B2_PREPARE = handle(lib, "b2_prepare",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
        B2_FREE = handle(lib, "b2_free", FunctionDescriptor.ofVoid());
        B2_LOOP = handle(lib, "b2_export_import_release",
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        B2_STREAM_OPEN = handle(lib, "b2_stream_open",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        B2_STREAM_LOOP = handle(lib, "b2_stream_loop",
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        B4_PREPARE = handle(lib, "b4_prepare", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        B4_FREE = handle(lib, "b4_free", FunctionDescriptor.ofVoid());
        B4_LOOP = handle(lib, "b4_export_import_release",
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    }

    private CBaseline() {}

    /** Builds the calling thread's C batch: {@code columns} int64 columns of {@code rows} values, seeded. */
    static void prepareB2(int columns, long rows) {
        if ((int) setUpCall("b2_prepare", B2_PREPARE, columns, rows, Batches.SEED) != 0) {
            throw new IllegalStateException("b2_prepare(" + columns + ", " + rows + ") failed: bad size or out of memory");
        }
    }

    /** Frees the calling thread's C batch. */
    static void freeB2() {
        setUpCall("b2_free", B2_FREE);
    }

    /** Fills {@code out} ({@code struct ArrowArrayStream}) with a C stream of the calling thread's C batch. */
    static void openB2Stream(int columns, java.lang.foreign.MemorySegment out) {
        if ((int) setUpCall("b2_stream_open", B2_STREAM_OPEN, columns, out) != 0) {
            throw new IllegalStateException("b2_stream_open(" + columns + ") failed: no batch on this thread or out of memory");
        }
    }

    /** Builds the calling thread's C tensor (B4's shape and strides), seeded. */
    static void prepareB4() {
        if ((int) setUpCall("b4_prepare", B4_PREPARE, Batches.SEED) != 0) {
            throw new IllegalStateException("b4_prepare failed: out of memory");
        }
    }

    /** Frees the calling thread's C tensor. */
    static void freeB4() {
        setUpCall("b4_free", B4_FREE);
    }

    /** A set-up or tear-down call (not measured, so not {@code invokeExact}). */
    private static Object setUpCall(String name, MethodHandle handle, Object... args) {
        try {
            return handle.invokeWithArguments(args);
        } catch (Throwable t) {
            throw new IllegalStateException(name + " failed", t);
        }
    }

    /** A loop's result, or an exception when the C side reported a failed check (-1). */
    static long checked(String loop, long checksum) {
        if (checksum == -1) {
            throw new IllegalStateException(loop + " returned -1: a check failed, or the thread did not prepare its data");
        }
        return checksum;
    }

    private static MethodHandle handle(SymbolLookup lib, String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(lib.find(name).orElseThrow(
                () -> new IllegalStateException("the compiled C baseline has no symbol " + name)), descriptor);
    }

    private static SymbolLookup compileAndLoad() {
        String compiler = findCompiler();
        Path dir = null;
        try {
            dir = Files.createTempDirectory("devicebridge-cbaseline");
            Path source = dir.resolve(SOURCE);
            try (InputStream in = CBaseline.class.getResourceAsStream(SOURCE)) {
                if (in == null) {
                    throw new IllegalStateException("resource org/devicebridge/bench/" + SOURCE + " is missing from the "
                            + "class path (bench/pom.xml copies bench/src/main/c into the class folder)");
                }
                Files.copy(in, source);
            }
            Path library = dir.resolve("libdevicebridge_cbaseline.so");
            List<String> command = new ArrayList<>(List.of(compiler, "-O2", "-shared", "-fPIC", "-o",
                    library.toString(), source.toString()));
            Path log = dir.resolve("cc.log");
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("compiling the C baseline timed out: " + String.join(" ", command));
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("compiling the C baseline failed (exit " + p.exitValue() + "): "
                        + String.join(" ", command) + "\n" + Files.readString(log, StandardCharsets.UTF_8));
            }
            // Loaded for the life of the JVM; the file may go once it is mapped.
            return SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IOException e) {
            throw new IllegalStateException("could not compile the C baseline with " + compiler + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while compiling the C baseline", e);
        } finally {
            deleteQuietly(dir);
        }
    }

    /** {@code $CC} if set, else the first of cc, gcc, clang found on the PATH. */
    private static String findCompiler() {
        String cc = System.getenv("CC");
        if (cc != null && !cc.isBlank()) {
            return cc.strip();
        }
        String path = System.getenv("PATH");
        for (String name : List.of("cc", "gcc", "clang")) {
            for (String d : (path == null ? "" : path).split(java.io.File.pathSeparator)) {
                if (!d.isEmpty() && Files.isExecutable(Path.of(d, name))) {
                    return Path.of(d, name).toString();
                }
            }
        }
        throw new IllegalStateException("no C compiler found for the C baselines of B2/B4 (looked for $CC, then cc, "
                + "gcc and clang on the PATH): install one (e.g. apt-get install gcc) or set CC");
    }

    private static void deleteQuietly(Path dir) {
        if (dir == null) {
            return;
        }
        try (var files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(dir);
        } catch (IOException ignored) {
            // a temporary folder left behind is harmless
        }
    }
}
