package org.devicebridge.arrow.malformed;

import static org.devicebridge.arrow.malformed.ScriptedCasesTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.Native;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Matrix rows whose structs come from a producer written in C (src/test/c/malformed_producer.c, compiled
 * with gcc into target/ when the tests run): the producer counts its own root and child releases, so the
 * rows prove that the importer releases a native producer's struct exactly once, through the root only,
 * on every path, including closes racing on two threads and a close running on a native thread. Without
 * gcc the rows are skipped with a message (CI installs gcc).
 */
class NativeProducerTest {
    private static final System.Logger LOG = System.getLogger(NativeProducerTest.class.getName());

    /** The compiled producer, or why there is none. */
    private static final class C {
        private static final java.util.Map<String, MethodHandle> HANDLES = new java.util.concurrent.ConcurrentHashMap<>();

        static final String UNAVAILABLE;
        static final MethodHandle ROOT_RELEASES;
        static final MethodHandle CHILD_RELEASES;
        static final MethodHandle LAST_RELEASE_TID;
        static final MethodHandle GETTID;
        static final MethodHandle RESET;
        static final MethodHandle RUN_ON_NATIVE_THREAD;
        static final MethodHandle RELEASE_ARRAY_ON_NATIVE_THREAD;
        static final SymbolLookup LIB;

        static {
            String why = null;
            SymbolLookup lib = null;
            try {
                lib = SymbolLookup.libraryLookup(compile(), Arena.global());
            } catch (Exception | LinkageError e) {
                why = e.getMessage();
            }
            UNAVAILABLE = why;
            LIB = lib;
            ROOT_RELEASES = lib == null ? null : fn("mp_root_releases", FunctionDescriptor.of(ValueLayout.JAVA_INT));
            CHILD_RELEASES = lib == null ? null : fn("mp_child_releases", FunctionDescriptor.of(ValueLayout.JAVA_INT));
            LAST_RELEASE_TID = lib == null ? null : fn("mp_last_release_tid", FunctionDescriptor.of(ValueLayout.JAVA_LONG));
            GETTID = lib == null ? null : fn("mp_gettid", FunctionDescriptor.of(ValueLayout.JAVA_LONG));
            RESET = lib == null ? null : fn("mp_reset", FunctionDescriptor.ofVoid());
            RUN_ON_NATIVE_THREAD = lib == null ? null
                    : fn("mp_run_on_native_thread", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            RELEASE_ARRAY_ON_NATIVE_THREAD = lib == null ? null
                    : fn("mp_release_array_on_native_thread", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
        }

        static MethodHandle fn(String name, FunctionDescriptor fd) {
            return HANDLES.computeIfAbsent(name + fd, k -> Linker.nativeLinker().downcallHandle(LIB.find(name).orElseThrow(), fd));
        }

        /** gcc -shared -fPIC -O1 into target/malformed-producer/; throws with gcc's output on failure. */
        static Path compile() throws IOException, InterruptedException {
            Path base = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
            Path source = base.resolve("src/test/c/malformed_producer.c");
            Path headers = base.resolve("../headers").normalize();
            if (!Files.exists(source)) {
                throw new IOException("C producer source not found at " + source);
            }
            Path out = base.resolve("target/malformed-producer/libmalformed_producer.so");
            Files.createDirectories(out.getParent());
            Process p;
            try {
                p = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O1", "-I" + headers, "-o", out.toString(),
                        source.toString(), "-lpthread").redirectErrorStream(true).start();
            } catch (IOException e) {
                throw new IOException("gcc not found, so the C-producer rows are skipped (" + e.getMessage() + ")", e);
            }
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("gcc failed: " + output);
            }
            return out;
        }
    }

    static void call(String name, MemorySegment struct, long arg) {
        try {
            C.fn(name, FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG)).invoke(struct, arg);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    static void call1(String name, MemorySegment struct) {
        try {
            C.fn(name, FunctionDescriptor.ofVoid(ValueLayout.ADDRESS)).invoke(struct);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    static int roots() {
        return (int) invoke(C.ROOT_RELEASES);
    }

    static int children() {
        return (int) invoke(C.CHILD_RELEASES);
    }

    static long invoke(MethodHandle h, Object... args) {
        try {
            Object r = h.invokeWithArguments(args);
            return r == null ? 0 : ((Number) r).longValue();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    static MemorySegment cSchema(Fx fx, String fill) {
        MemorySegment s = fx.arena.allocate(ArrowSchema.layout());
        call1(fill, s);
        return s;
    }

    static MemorySegment cArray(Fx fx, String fill, long length) {
        MemorySegment a = fx.arena.allocate(ArrowArray.layout());
        if (length < 0) {
            call1(fill, a);
        } else {
            call(fill, a, length);
        }
        return a;
    }

    /** The struct<int32, utf8> type, imported from the C producer (its release reset afterwards). */
    static SchemaNode structType(Fx fx) {
        try (ImportedSchema s = ArrowImport.importSchema(cSchema(fx, "mp_struct_schema"))) {
            return s.root();
        } finally {
            invoke(C.RESET);
        }
    }

    // ---- the rows ----

    static List<Case> cases() {
        List<Case> t = new ArrayList<>();
        String g = "release exactly once";
        t.add(row(g, "C schema closed twice: root released once, its 2 children once each through it", fx -> {
            ImportedSchema s = ArrowImport.importSchema(cSchema(fx, "mp_struct_schema"));
            s.close();
            s.close();
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C array closed twice: root released once, children once each", fx -> {
            SchemaNode type = structType(fx);
            ImportedArray a = ArrowImport.importArray(type, cArray(fx, "mp_struct_array", 3), ValidationLevel.FULL);
            assertEquals(0, roots());
            a.close();
            a.close();
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C array closed from two threads at once, x10000: released once each", fx -> {
            SchemaNode type = fx.type("i");
            ScriptedCasesTest.concurrentClose(NativeProducerTest::roots,
                    () -> ArrowImport.importArray(type, cArray(fx, "mp_int32_array", 4), ValidationLevel.FULL));
            assertEquals(ScriptedCasesTest.CONCURRENT_ROUNDS, roots());
        }));
        t.add(row(g, "C schema closed from two threads at once, x10000: released once each", fx -> {
            ScriptedCasesTest.concurrentClose(NativeProducerTest::roots,
                    () -> ArrowImport.importSchema(cSchema(fx, "mp_struct_schema")));
            assertEquals(ScriptedCasesTest.CONCURRENT_ROUNDS, roots());
            assertEquals(2 * ScriptedCasesTest.CONCURRENT_ROUNDS, children());
        }));
        t.add(row(g, "C array closed on a native thread (pthread calling a Java upcall): released once, there", fx -> {
            ImportedArray a = ArrowImport.importArray(fx.type("i"), cArray(fx, "mp_int32_array", 2), ValidationLevel.FULL);
            PENDING = a;
            assertEquals(0, invoke(C.RUN_ON_NATIVE_THREAD, CLOSE_PENDING));
            assertEquals(null, PENDING_FAILURE, "close on the native thread threw");
            assertEquals(1, roots());
            assertNotEquals(invoke(C.GETTID), invoke(C.LAST_RELEASE_TID), "released on the native thread");
            a.close();
            assertEquals(1, roots());
        }));
        t.add(row(g, "Java-produced array released by a native thread: the Java release upcall runs once", fx -> {
            MemorySegment a = fx.root(MalformedInputMatrixTest.i32(fx, 2));
            assertEquals(0, invoke(C.RELEASE_ARRAY_ON_NATIVE_THREAD, a));
            assertEquals(1, fx.releases.get());
            expect(Category.RELEASED, "", () -> ArrowImport.importArray(fx.type("i"), a, ValidationLevel.NONE));
            assertEquals(1, fx.releases.get());
        }));

        g = "release on failed import";
        t.add(row(g, "C schema with a bad child format is FORMAT; root released once, both children through it", fx -> {
            expect(Category.FORMAT, "children[1].format",
                    () -> ArrowImport.importSchema(cSchema(fx, "mp_struct_schema_bad_child_format")));
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C schema with a released child is RELEASED; no child released twice", fx -> {
            MemorySegment s = cSchema(fx, "mp_struct_schema_released_child");
            assertEquals(1, children(), "the producer's own bug: child 1 released up front");
            expect(Category.RELEASED, "children[1]", () -> ArrowImport.importSchema(s));
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C schema with a bad dictionary format is FORMAT at dictionary.format; released once", fx -> {
            expect(Category.FORMAT, "dictionary.format",
                    () -> ArrowImport.importSchema(cSchema(fx, "mp_dictionary_schema_bad_value_format")));
            assertEquals(1, roots());
            assertEquals(1, children());
        }));
        t.add(row(g, "C array with decreasing child offsets: CONTENT at FULL, accepted at DEFAULT; released once each", fx -> {
            SchemaNode type = structType(fx);
            try (ImportedArray a = ArrowImport.importArray(type, cArray(fx, "mp_struct_array_bad_offsets", -1),
                    ValidationLevel.DEFAULT)) {
                assertEquals(4, a.root().length());
            }
            assertEquals(1, roots());
            expect(Category.CONTENT, "children[1].buffers[1]", () -> ArrowImport.importArray(type,
                    cArray(fx, "mp_struct_array_bad_offsets", -1), ValidationLevel.FULL));
            assertEquals(2, roots());
            assertEquals(4, children());
        }));
        t.add(row(g, "C array with a short child: LENGTH from MINIMAL, accepted at NONE; released once each", fx -> {
            SchemaNode type = structType(fx);
            ArrowImport.importArray(type, cArray(fx, "mp_struct_array_short_child", -1), ValidationLevel.NONE).close();
            assertEquals(1, roots());
            expect(Category.LENGTH, "children[0].length", () -> ArrowImport.importArray(type,
                    cArray(fx, "mp_struct_array_short_child", -1), ValidationLevel.MINIMAL));
            assertEquals(2, roots());
            assertEquals(4, children());
        }));
        t.add(row(g, "C array with a negative length is SIZE at NONE; released once", fx -> {
            ValidationException e = assertThrows(ValidationException.class, () -> ArrowImport.importArray(fx.type("i"),
                    cArray(fx, "mp_int32_array_negative_length", -1), ValidationLevel.NONE));
            assertEquals(Category.SIZE, e.category());
            assertEquals("length", e.path());
            assertEquals(1, roots());
            assertEquals(0, children());
        }));
        return t;
    }

    static Case row(String group, String name, Consumer<Fx> body) {
        return new Case(group, "C producer: " + name, Case.Kind.CUSTOM, null, null, null, null, null, -1, null, body);
    }

    // ---- closing on a native thread ----

    private static volatile AutoCloseable PENDING;
    private static volatile Throwable PENDING_FAILURE;
    private static final MemorySegment CLOSE_PENDING = Native.upcallStub(MethodHandles.lookup(), NativeProducerTest.class,
            "closePending", FunctionDescriptor.ofVoid());

    private static void closePending() {
        try {
            PENDING.close();
        } catch (Throwable t) {
            PENDING_FAILURE = t;
            LOG.log(System.Logger.Level.ERROR, "close on a native thread failed", t);
        }
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("cases")
    void nativeProducerRow(Case c) {
        assumeTrue(C.UNAVAILABLE == null, "C-producer rows skipped: " + C.UNAVAILABLE);
        invoke(C.RESET);
        long handles = HandleTracker.liveHandles();
        int javaChildReleases = Fx.CHILD_RELEASES.get();
        try (Fx fx = new Fx()) {
            c.custom().accept(fx);
        } finally {
            PENDING = null;
            PENDING_FAILURE = null;
        }
        assertEquals(javaChildReleases, Fx.CHILD_RELEASES.get(), c + ": a child release was called directly");
        assertEquals(handles, HandleTracker.liveHandles(), c + ": live handles");
    }
}
