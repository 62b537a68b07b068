package org.devicebridge.arrow.malformed;

import static org.devicebridge.arrow.malformed.ScriptedCasesTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.internal.Native;
import org.devicebridge.testing.CompiledC;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Matrix rows whose structs come from a producer written in C (src/test/c/malformed_producer.c, compiled
 * with gcc into target/ when the tests run, by {@link CompiledC}): the producer counts its own root and child
 * releases, so the rows prove that the importer releases a native producer's struct exactly once, through
 * the root only, on every path, including closes racing on two threads and a close running on a native
 * thread. Without gcc the rows are skipped with a message (CI installs gcc).
 */
class NativeProducerTest {
    private static final System.Logger LOG = System.getLogger(NativeProducerTest.class.getName());

    /** The compiled producer, or why there is none. */
    private static final class C {
        static final CompiledC LIB = CompiledC.load("malformed_producer");
        static final String UNAVAILABLE = LIB.unavailableReason();
        static final MethodHandle ROOT_RELEASES = LIB.isAvailable() ? fn("mp_root_releases", FunctionDescriptor.of(ValueLayout.JAVA_INT)) : null;
        static final MethodHandle CHILD_RELEASES = LIB.isAvailable() ? fn("mp_child_releases", FunctionDescriptor.of(ValueLayout.JAVA_INT)) : null;
        static final MethodHandle LAST_RELEASE_TID = LIB.isAvailable() ? fn("mp_last_release_tid", FunctionDescriptor.of(ValueLayout.JAVA_LONG)) : null;
        static final MethodHandle GETTID = LIB.isAvailable() ? fn("mp_gettid", FunctionDescriptor.of(ValueLayout.JAVA_LONG)) : null;
        static final MethodHandle RESET = LIB.isAvailable() ? fn("mp_reset", FunctionDescriptor.ofVoid()) : null;
        static final MethodHandle RUN_ON_NATIVE_THREAD = LIB.isAvailable()
                ? fn("mp_run_on_native_thread", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)) : null;
        static final MethodHandle RELEASE_ARRAY_ON_NATIVE_THREAD = LIB.isAvailable()
                ? fn("mp_release_array_on_native_thread", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)) : null;

        static MethodHandle fn(String name, FunctionDescriptor fd) {
            return LIB.function(name, fd);
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
        try (ImportedSchema s = ArrowC.importSchema(cSchema(fx, "mp_struct_schema"))) {
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
            ImportedSchema s = ArrowC.importSchema(cSchema(fx, "mp_struct_schema"));
            s.close();
            s.close();
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C array closed twice: root released once, children once each", fx -> {
            SchemaNode type = structType(fx);
            ImportedArray a = ArrowC.importArray(type, cArray(fx, "mp_struct_array", 3), ValidationLevel.FULL);
            assertEquals(0, roots());
            a.close();
            a.close();
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C array closed from two threads at once, x10000: released once each", fx -> {
            SchemaNode type = fx.type("i");
            ScriptedCasesTest.concurrentClose(NativeProducerTest::roots,
                    () -> ArrowC.importArray(type, cArray(fx, "mp_int32_array", 4), ValidationLevel.FULL));
            assertEquals(ScriptedCasesTest.CONCURRENT_ROUNDS, roots());
        }));
        t.add(row(g, "C schema closed from two threads at once, x10000: released once each", fx -> {
            ScriptedCasesTest.concurrentClose(NativeProducerTest::roots,
                    () -> ArrowC.importSchema(cSchema(fx, "mp_struct_schema")));
            assertEquals(ScriptedCasesTest.CONCURRENT_ROUNDS, roots());
            assertEquals(2 * ScriptedCasesTest.CONCURRENT_ROUNDS, children());
        }));
        t.add(row(g, "C array closed on a native thread (pthread calling a Java upcall): released once, there", fx -> {
            ImportedArray a = ArrowC.importArray(fx.type("i"), cArray(fx, "mp_int32_array", 2), ValidationLevel.FULL);
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
            expect(Category.RELEASED, "", () -> ArrowC.importArray(fx.type("i"), a, ValidationLevel.NONE));
            assertEquals(1, fx.releases.get());
        }));

        g = "release on failed import";
        t.add(row(g, "C schema with a bad child format is FORMAT; root released once, both children through it", fx -> {
            expect(Category.FORMAT, "children[1].format",
                    () -> ArrowC.importSchema(cSchema(fx, "mp_struct_schema_bad_child_format")));
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C schema with a released child is RELEASED; no child released twice", fx -> {
            MemorySegment s = cSchema(fx, "mp_struct_schema_released_child");
            assertEquals(1, children(), "the producer's own bug: child 1 released up front");
            expect(Category.RELEASED, "children[1]", () -> ArrowC.importSchema(s));
            assertEquals(1, roots());
            assertEquals(2, children());
        }));
        t.add(row(g, "C schema with a bad dictionary format is FORMAT at dictionary.format; released once", fx -> {
            expect(Category.FORMAT, "dictionary.format",
                    () -> ArrowC.importSchema(cSchema(fx, "mp_dictionary_schema_bad_value_format")));
            assertEquals(1, roots());
            assertEquals(1, children());
        }));
        t.add(row(g, "C array with decreasing child offsets: CONTENT at FULL, accepted at DEFAULT; released once each", fx -> {
            SchemaNode type = structType(fx);
            try (ImportedArray a = ArrowC.importArray(type, cArray(fx, "mp_struct_array_bad_offsets", -1),
                    ValidationLevel.DEFAULT)) {
                assertEquals(4, a.root().length());
            }
            assertEquals(1, roots());
            expect(Category.CONTENT, "children[1].buffers[1]", () -> ArrowC.importArray(type,
                    cArray(fx, "mp_struct_array_bad_offsets", -1), ValidationLevel.FULL));
            assertEquals(2, roots());
            assertEquals(4, children());
        }));
        t.add(row(g, "C array with a short child: LENGTH from MINIMAL, accepted at NONE; released once each", fx -> {
            SchemaNode type = structType(fx);
            ArrowC.importArray(type, cArray(fx, "mp_struct_array_short_child", -1), ValidationLevel.NONE).close();
            assertEquals(1, roots());
            expect(Category.LENGTH, "children[0].length", () -> ArrowC.importArray(type,
                    cArray(fx, "mp_struct_array_short_child", -1), ValidationLevel.MINIMAL));
            assertEquals(2, roots());
            assertEquals(4, children());
        }));
        t.add(row(g, "C array with a negative length is SIZE at NONE; released once", fx -> {
            ValidationException e = assertThrows(ValidationException.class, () -> ArrowC.importArray(fx.type("i"),
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
