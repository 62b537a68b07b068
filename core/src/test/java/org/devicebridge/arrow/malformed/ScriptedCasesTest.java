package org.devicebridge.arrow.malformed;

import static org.devicebridge.arrow.malformed.Fx.bufs;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.NULL;
import static org.devicebridge.arrow.malformed.MalformedInputMatrixTest.i32;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.devicebridge.HandleClosedException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ArrowStreamException;
import org.devicebridge.arrow.ImportedArray;
import org.devicebridge.arrow.ImportedArrayStream;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowArrayStream;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Matrix rows that need a script rather than one import: streams, closing (twice, from two threads), a
 * struct imported again after a failed import, and Java producer callbacks that throw. Each row asserts
 * the exception type and category, exact release counts and no leak (checked around every row).
 */
class ScriptedCasesTest {
    static final int EINVAL = 22;
    static final int CONCURRENT_ROUNDS = 10_000;

    static List<Case> cases() {
        List<Case> t = new ArrayList<>();
        String g = "released/NULL struct";
        t.add(row(g, "NULL ArrowArrayStream pointer is RELEASED", fx -> {
            expect(Category.RELEASED, "", () -> ArrowC.importStream(NULL));
            assertEquals(0, fx.releases.get());
        }));
        t.add(row(g, "ArrowArrayStream with NULL release is RELEASED and untouched", fx -> {
            MemorySegment s = fx.stream();
            ArrowArrayStream.release(s, NULL);
            expect(Category.RELEASED, "", () -> ArrowC.importStream(s));
            assertEquals(0, fx.releases.get());
        }));
        t.add(row(g, "ArrowDeviceArrayStream with NULL release is RELEASED and untouched", fx -> {
            MemorySegment s = fx.deviceStream(1);
            ArrowDeviceArrayStream.release(s, NULL);
            expect(Category.RELEASED, "", () -> ArrowC.importDeviceStream(s));
            assertEquals(0, fx.releases.get());
        }));

        g = "release exactly once";
        t.add(row(g, "schema closed twice is released once", fx -> {
            ImportedSchema s = ArrowC.importSchema(fx.rootSchema(fx.schema("+s", fx.schema("i"))));
            s.close();
            s.close();
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "array closed twice is released once", fx -> {
            ImportedArray a = ArrowC.importArray(fx.type("i"), fx.root(i32(fx, 3)), ValidationLevel.FULL);
            a.close();
            a.close();
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "device array closed twice is released once", fx -> {
            ImportedArray a = ArrowC.importDeviceArray(fx.type("i"), fx.device(fx.root(i32(fx, 3)), 1, 0, NULL),
                    ValidationLevel.FULL);
            a.close();
            a.close();
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "stream closed twice is released once", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            ImportedArrayStream s = ArrowC.importStream(fx.stream());
            assertEquals(1, fx.producedReleases.get(), "the schema it handed out");
            s.close();
            s.close();
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "schema closed from two threads at once, x10000: released once each", fx ->
                concurrentClose(fx.releases::get, () -> ArrowC.importSchema(fx.rootSchema(fx.schema("i"))))));
        t.add(row(g, "array closed from two threads at once, x10000: released once each", fx -> {
            SchemaNode type = fx.type("i");
            concurrentClose(fx.releases::get, () -> ArrowC.importArray(type, fx.root(i32(fx, 2)), ValidationLevel.FULL));
        }));
        t.add(row(g, "stream closed from two threads at once, x10000: released once each", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            concurrentClose(fx.releases::get, () -> ArrowC.importStream(fx.stream()));
        }));
        t.add(row(g, "a batch outlives its closed stream; each is released once", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> f.handOutArray(i32(f, 2), out);
            ImportedArray batch;
            try (ImportedArrayStream s = ArrowC.importStream(fx.stream())) {
                batch = s.next(ValidationLevel.FULL);
            }
            assertEquals(1, fx.releases.get(), "stream");
            assertEquals(1, fx.producedReleases.get(), "schema only, the batch is still open");
            assertEquals(2, batch.root().length());
            batch.close();
            assertEquals(2, fx.producedReleases.get(), "schema + batch");
        }));

        t.add(row(g, "stream closed while get_next runs on another thread: never released during get_next, once after", fx -> {
            java.util.concurrent.CountDownLatch inNext = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.atomic.AtomicInteger releasesDuringNext = new java.util.concurrent.atomic.AtomicInteger(-1);
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> {
                inNext.countDown();
                try {
                    proceed.await(10, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                releasesDuringNext.set(f.releases.get());
                return f.handOutArray(i32(f, 1), out);
            };
            ImportedArrayStream s = ArrowC.importStream(fx.stream());
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                Future<Long> next = pool.submit(() -> {
                    try (ImportedArray a = s.next(ValidationLevel.FULL)) {
                        return a.root().length();
                    }
                });
                assertTrue(inNext.await(10, java.util.concurrent.TimeUnit.SECONDS));
                Future<?> close = pool.submit(s::close);
                Thread.sleep(200); // a close that does not wait for get_next has released the stream by now
                proceed.countDown();
                assertEquals(1L, next.get());
                close.get();
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                pool.shutdownNow();
            }
            assertEquals(0, releasesDuringNext.get(), "stream released while its get_next was running");
            assertEquals(1, fx.releases.get());
            assertEquals(2, fx.producedReleases.get(), "schema + batch");
        }));
        t.add(row(g, "buffer segment taken before close is unusable after close; buffer() after close is HandleClosedException",
                fx -> {
                    ImportedArray a = ArrowC.importArray(fx.type("i"), fx.root(i32(fx, 3)), ValidationLevel.FULL);
                    MemorySegment values = a.root().buffer(1);
                    assertEquals(2, values.getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 1));
                    a.close();
                    assertEquals(1, fx.releases.get());
                    assertThrows(IllegalStateException.class,
                            () -> values.getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED, 1));
                    assertThrows(HandleClosedException.class, () -> a.root().buffer(1));
                }));

        t.add(row(g, "same struct imported from two threads at once, x10000: one import owns it, the other is RELEASED", fx -> {
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                for (int i = 0; i < CONCURRENT_ROUNDS; i++) {
                    MemorySegment p = fx.rootSchema(fx.schema("i"));
                    CyclicBarrier barrier = new CyclicBarrier(2);
                    List<Future<ImportedSchema>> imports = new ArrayList<>(2);
                    for (int k = 0; k < 2; k++) {
                        imports.add(pool.submit(() -> {
                            barrier.await();
                            try {
                                return ArrowC.importSchema(p);
                            } catch (ValidationException e) {
                                assertEquals(Category.RELEASED, e.category(), e.getMessage());
                                return null;
                            }
                        }));
                    }
                    int owners = 0;
                    for (Future<ImportedSchema> f : imports) {
                        ImportedSchema s = f.get();
                        if (s != null) {
                            owners++;
                            s.close();
                        }
                    }
                    assertEquals(1, owners, "round " + i + ": imports that took ownership");
                    assertEquals(i + 1, fx.releases.get(), "round " + i);
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            } finally {
                pool.shutdownNow();
            }
        }));

        g = "release on failed import";
        t.add(row(g, "struct imported again after a failed import is RELEASED, not released twice", fx -> {
            MemorySegment p = fx.rootSchema(fx.schema("q"));
            expect(Category.FORMAT, "format", () -> ArrowC.importSchema(p));
            expect(Category.RELEASED, "", () -> ArrowC.importSchema(p));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "array imported again after a failed FULL import is RELEASED", fx -> {
            SchemaNode type = fx.type("u");
            MemorySegment p = fx.root(fx.array(2, 0, 0, bufs(NULL, fx.ints(0, 2, 1), fx.bytes(1, 2))));
            expect(Category.CONTENT, "buffers[1]", () -> ArrowC.importArray(type, p, ValidationLevel.FULL));
            expect(Category.RELEASED, "", () -> ArrowC.importArray(type, p, ValidationLevel.NONE));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "struct imported again while its first import is open is RELEASED; close releases once", fx -> {
            MemorySegment p = fx.rootSchema(fx.schema("i"));
            try (ImportedSchema s = ArrowC.importSchema(p)) {
                expect(Category.RELEASED, "", () -> ArrowC.importSchema(p));
                assertEquals(0, fx.releases.get());
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "rejected device array (bad child) releases the device array once", fx -> {
            SchemaNode type = fx.type(fx.schema("+s", fx.schema("i")));
            MemorySegment d = fx.device(fx.root(fx.array(1, 0, 0, bufs(NULL), fx.array(1, 0, 0, bufs(NULL, NULL)))), 1, 0, NULL);
            expect(Category.NULL_POINTER, "children[0].buffers[1]", () -> ArrowC.importDeviceArray(type, d,
                    ValidationLevel.MINIMAL));
            assertEquals(1, fx.releases.get());
            assertEquals(NULL, ArrowArray.release(d), "the producer's struct is marked released (moved)");
        }));
        t.add(row(g, "import against an incompatible schema releases the array once", fx -> {
            SchemaNode type = fx.type(fx.schema("+s", fx.schema("i"), fx.schema("i")));
            expect(Category.STRUCTURE, "n_children", () -> ArrowC.importArray(type,
                    fx.root(fx.array(1, 0, 0, bufs(NULL), i32(fx, 1))), ValidationLevel.NONE));
            assertEquals(1, fx.releases.get());
        }));

        g = "stream errors";
        t.add(row(g, "get_schema errno 22 is ArrowStreamException with the producer's text; stream released once", fx -> {
            fx.onGetSchema = (f, out) -> {
                f.lastError = f.cstr("bad options");
                return EINVAL;
            };
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> ArrowC.importStream(fx.stream()));
            assertEquals(EINVAL, e.errno());
            assertEquals("bad options", e.producerMessage());
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "get_schema errno with get_last_error NULL has an empty producer message", fx -> {
            fx.onGetSchema = (f, out) -> 38;
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> ArrowC.importStream(fx.stream()));
            assertEquals(38, e.errno());
            assertEquals("", e.producerMessage());
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "get_schema returning 0 but no schema is RELEASED; stream released once", fx -> {
            fx.onGetSchema = (f, out) -> 0;
            expect(Category.RELEASED, "", () -> ArrowC.importStream(fx.stream()));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "get_schema handing out a malformed schema is FORMAT; schema and stream released once", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("+x"), out);
            expect(Category.FORMAT, "format", () -> ArrowC.importStream(fx.stream()));
            assertEquals(1, fx.releases.get());
            assertEquals(1, fx.producedReleases.get());
        }));
        t.add(row(g, "NULL get_schema is NULL_POINTER; stream released once", fx -> {
            MemorySegment s = fx.stream();
            ArrowArrayStream.get_schema(s, NULL);
            expect(Category.NULL_POINTER, "get_schema", () -> ArrowC.importStream(s));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "NULL get_next is NULL_POINTER; stream released once", fx -> {
            MemorySegment s = fx.stream();
            ArrowArrayStream.get_next(s, NULL);
            expect(Category.NULL_POINTER, "get_next", () -> ArrowC.importStream(s));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "NULL get_last_error is NULL_POINTER; device stream released once", fx -> {
            MemorySegment s = fx.deviceStream(1);
            ArrowDeviceArrayStream.get_last_error(s, NULL);
            expect(Category.NULL_POINTER, "get_last_error", () -> ArrowC.importDeviceStream(s));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "get_next errno 5 is ArrowStreamException; the stream stays open and is released once on close", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> {
                f.lastError = f.cstr("disk gone");
                return Fx.EIO;
            };
            try (ImportedArrayStream s = ArrowC.importStream(fx.stream())) {
                ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> s.next(ValidationLevel.FULL));
                assertEquals("get_next failed with errno 5 (EIO): disk gone", e.getMessage());
                assertEquals(0, fx.releases.get());
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "get_next handing out a malformed batch is SIZE; batch released once, stream on close", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> f.handOutArray(f.array(-1, 0, 0, bufs(NULL, NULL)), out);
            try (ImportedArrayStream s = ArrowC.importStream(fx.stream())) {
                expect(Category.SIZE, "length", () -> s.next(ValidationLevel.NONE));
                assertEquals(2, fx.producedReleases.get(), "schema + batch");
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "get_next batch not matching the stream schema is STRUCTURE; batch released once", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("+s", f.schema("i")), out);
            fx.onGetNext = (f, out) -> f.handOutArray(f.array(1, 0, 0, bufs(NULL)), out);
            try (ImportedArrayStream s = ArrowC.importStream(fx.stream())) {
                expect(Category.STRUCTURE, "n_children", () -> s.next(ValidationLevel.MINIMAL));
                assertEquals(2, fx.producedReleases.get());
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "end of stream (released batch) is null, every time after too", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> 0;
            try (ImportedArrayStream s = ArrowC.importStream(fx.stream())) {
                assertNull(s.next(ValidationLevel.FULL));
                assertNull(s.next(ValidationLevel.FULL));
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "next after close is HandleClosedException", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            ImportedArrayStream s = ArrowC.importStream(fx.stream());
            s.close();
            assertThrows(HandleClosedException.class, () -> s.next(ValidationLevel.FULL));
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "device stream with unknown device type 0 is DEVICE; released once", fx -> {
            expect(Category.DEVICE, "device_type", () -> ArrowC.importDeviceStream(fx.deviceStream(0)));
            assertEquals(1, fx.releases.get());
            assertEquals(0, fx.producedReleases.get(), "get_schema must not have been called");
        }));
        t.add(row(g, "device stream get_schema errno is ArrowStreamException; released once", fx -> {
            fx.onGetSchema = (f, out) -> 12;
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> ArrowC.importDeviceStream(fx.deviceStream(2)));
            assertEquals(12, e.errno());
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "device stream batch on another device type is DEVICE; batch released once", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> f.handOutArray(f.device(i32(f, 2), 2, 0, NULL), out);
            try (ImportedArrayStream s = ArrowC.importDeviceStream(fx.deviceStream(1))) {
                expect(Category.DEVICE, "device_type", () -> s.next(ValidationLevel.MINIMAL));
                assertEquals(2, fx.producedReleases.get());
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "device stream CPU batch with a sync event is DEVICE; batch released once", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> f.handOutArray(f.device(i32(f, 2), 1, 0, f.zeros(8)), out);
            try (ImportedArrayStream s = ArrowC.importDeviceStream(fx.deviceStream(1))) {
                expect(Category.DEVICE, "sync_event", () -> s.next(ValidationLevel.MINIMAL));
                assertEquals(2, fx.producedReleases.get());
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "device stream CUDA batch imports at MINIMAL and is released once on close", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> f.handOutArray(f.device(i32(f, 2), 2, 0, f.zeros(8)), out);
            try (ImportedArrayStream s = ArrowC.importDeviceStream(fx.deviceStream(2));
                 ImportedArray a = s.next(ValidationLevel.MINIMAL)) {
                assertEquals(2, a.deviceType().code());
                assertEquals(1, fx.producedReleases.get(), "schema only");
            }
            assertEquals(2, fx.producedReleases.get());
            assertEquals(1, fx.releases.get());
        }));
        t.add(row("device fields", "CUDA array with negative length: SIZE at NONE/MINIMAL, DEVICE (unreadable) at DEFAULT/FULL", fx -> {
            for (ValidationLevel level : ValidationLevel.values()) {
                boolean reads = level == ValidationLevel.DEFAULT || level == ValidationLevel.FULL;
                int before = fx.releases.get();
                expect(reads ? Category.DEVICE : Category.SIZE, reads ? "device_type" : "length",
                        () -> ArrowC.importDeviceArray(fx.type("i"),
                                fx.device(fx.root(fx.array(-3, 0, 0, bufs(NULL, NULL))), 2, 0, NULL), level));
                assertEquals(before + 1, fx.releases.get(), level.toString());
            }
        }));
        t.add(row("device fields", "ROCm array with null_count above length: SIZE from MINIMAL, accepted at NONE", fx -> {
            try (ImportedArray a = ArrowC.importDeviceArray(fx.type("i"),
                    fx.device(fx.root(fx.array(1, 5, 0, bufs(NULL, fx.zeros(4)))), 10, 0, NULL), ValidationLevel.NONE)) {
                assertEquals(10, a.deviceType().code());
            }
            expect(Category.SIZE, "null_count", () -> ArrowC.importDeviceArray(fx.type("i"),
                    fx.device(fx.root(fx.array(1, 5, 0, bufs(NULL, fx.zeros(4)))), 10, 0, NULL), ValidationLevel.MINIMAL));
            assertEquals(2, fx.releases.get());
        }));
        t.add(row("misaligned buffers and structs", "misaligned ArrowArrayStream struct is moved and accepted", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            try (ImportedArrayStream s = ArrowC.importStream(fx.misaligned(fx.stream()))) {
                assertEquals("i", s.schema().format());
            }
            assertEquals(1, fx.releases.get());
        }));

        g = "Java callbacks that throw";
        t.add(row(g, "Java get_schema that throws becomes EIO with its text; stream released once", fx -> {
            fx.onGetSchema = (f, out) -> {
                throw new IllegalStateException("no schema today");
            };
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> ArrowC.importStream(fx.stream()));
            assertEquals(Fx.EIO, e.errno());
            assertEquals("callback threw IllegalStateException: no schema today", e.producerMessage());
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "Java get_next that throws becomes EIO; stream usable, released once on close", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> {
                throw new ArithmeticException("boom");
            };
            try (ImportedArrayStream s = ArrowC.importStream(fx.stream())) {
                assertEquals(Fx.EIO, assertThrows(ArrowStreamException.class, () -> s.next(ValidationLevel.FULL)).errno());
                fx.onGetNext = (f, out) -> f.handOutArray(i32(f, 1), out);
                try (ImportedArray a = s.next(ValidationLevel.FULL)) {
                    assertEquals(1, a.root().length());
                }
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "Java device get_next that throws becomes EIO", fx -> {
            fx.onGetSchema = (f, out) -> f.handOutSchema(f.schema("i"), out);
            fx.onGetNext = (f, out) -> {
                throw new OutOfMemoryError("simulated");
            };
            try (ImportedArrayStream s = ArrowC.importDeviceStream(fx.deviceStream(1))) {
                ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> s.next(ValidationLevel.FULL));
                assertTrue(e.producerMessage().contains("simulated"), e.producerMessage());
            }
            assertEquals(1, fx.releases.get());
        }));
        t.add(row(g, "Java release that throws after releasing, on a rejected array: typed error, released once", fx -> {
            fx.releaseThrows = true;
            long failed = HandleTracker.failedReleases();
            expect(Category.SIZE, "length", () -> ArrowC.importArray(fx.type("i"),
                    fx.root(fx.array(-1, 0, 0, bufs(NULL, NULL))), ValidationLevel.NONE));
            assertEquals(1, fx.releases.get());
            assertEquals(failed, HandleTracker.failedReleases());
        }));
        t.add(row(g, "Java release that throws after releasing, on close: released once, close still idempotent", fx -> {
            fx.releaseThrows = true;
            ImportedArray a = ArrowC.importArray(fx.type("i"), fx.root(i32(fx, 2)), ValidationLevel.FULL);
            a.close();
            a.close();
            assertEquals(1, fx.releases.get());
        }));
        return t;
    }

    static Case row(String group, String name, Consumer<Fx> body) {
        return new Case(group, name, Case.Kind.CUSTOM, null, null, null, null, null, -1, null, body);
    }

    static void expect(Category category, String path, org.junit.jupiter.api.function.Executable e) {
        ValidationException v = assertThrows(ValidationException.class, e);
        assertEquals(category, v.category(), v.getMessage());
        if (path != null) {
            assertEquals(path, v.path(), v.getMessage());
        }
    }

    /** Imports, then closes from two threads released by one barrier, {@value #CONCURRENT_ROUNDS} times. */
    static void concurrentClose(IntSupplier releases, Supplier<? extends AutoCloseable> importer) {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int i = 0; i < CONCURRENT_ROUNDS; i++) {
                AutoCloseable h = importer.get();
                CyclicBarrier barrier = new CyclicBarrier(2);
                List<Future<?>> closes = new ArrayList<>(2);
                for (int k = 0; k < 2; k++) {
                    closes.add(pool.submit(() -> {
                        barrier.await();
                        h.close();
                        return null;
                    }));
                }
                for (Future<?> f : closes) {
                    f.get();
                }
                assertEquals(i + 1, releases.getAsInt(), "round " + i);
            }
        } catch (Exception e) {
            throw new AssertionError(e);
        } finally {
            pool.shutdownNow();
        }
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("cases")
    void scriptedRow(Case c) {
        long handles = HandleTracker.liveHandles();
        int childReleases = Fx.CHILD_RELEASES.get();
        try (Fx fx = new Fx()) {
            c.custom().accept(fx);
        }
        assertEquals(childReleases, Fx.CHILD_RELEASES.get(), c + ": a child/dictionary release was called directly");
        assertEquals(handles, HandleTracker.liveHandles(), c + ": live handles");
    }
}
