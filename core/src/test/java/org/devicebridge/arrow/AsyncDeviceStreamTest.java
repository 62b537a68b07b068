package org.devicebridge.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.arrow.ArrowDeviceArrayStream;
import org.devicebridge.internal.Errno;
import org.devicebridge.testing.CompiledC;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Arrow C async device stream both ways against a C peer (src/test/c/async_peer.c, compiled with gcc when the
 * tests run): the library's consumer against a C producer that behaves or misbehaves, and the library's
 * producer against a C consumer that behaves or misbehaves. The peer counts every array made and released and
 * every task made, extracted, handed back and refused, so each test asserts exactly-once spending.
 */
class AsyncDeviceStreamTest {
    private static final CompiledC PEER = CompiledC.load("async_peer");
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final ExecutorService EXEC = Executors.newFixedThreadPool(2);

    // ap modes (async_peer.c)
    private static final int AP_GOOD = 0, AP_IGNORE_DEMAND = 1, AP_ERROR_MID = 2, AP_TASK_AFTER_END = 3,
            AP_ERROR_AFTER_END = 4, AP_NULL_SCHEMA = 5, AP_NO_END = 6, AP_EXTRACT_FAILS = 7, AP_WRONG_DEVICE = 8;
    // ac modes
    private static final int AC_GOOD = 0, AC_BAD_REQUEST = 1, AC_EXTRACT_TWICE = 2, AC_REFUSE_TASK = 3,
            AC_CANCEL_AFTER_2 = 4, AC_DEFER = 5, AC_REFUSE_SCHEMA = 6;

    private int madeBefore;
    private int releasedBefore;

    @BeforeEach
    void peer() {
        assumeTrue(PEER.isAvailable(), () -> "async_peer.c: " + PEER.unavailableReason());
        madeBefore = i("peer_arrays_made");
        releasedBefore = i("peer_arrays_released");
    }

    @AfterAll
    static void stop() throws InterruptedException {
        EXEC.shutdown();
        assertTrue(EXEC.awaitTermination(20, TimeUnit.SECONDS));
    }

    private static int i(String fn) {
        try {
            return (int) PEER.function(fn, FunctionDescriptor.of(ValueLayout.JAVA_INT)).invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static long l(String fn) {
        try {
            return (long) PEER.function(fn, FunctionDescriptor.of(ValueLayout.JAVA_LONG)).invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static void apStart(AsyncDeviceStream c, int n, int mode) throws Throwable {
        PEER.function("ap_start", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT)).invokeExact(c.handler(), n, mode);
    }

    private static void apJoin() throws Throwable {
        PEER.function("ap_join", FunctionDescriptor.ofVoid()).invokeExact();
    }

    /**
     * Every task the C producer made was spent once: extracted, handed back, refused (and freed by the producer),
     * or its extract_data failed.
     */
    private static void assertTasksSpent() {
        assertEquals(i("ap_tasks_made"), i("ap_tasks_extracted") + i("ap_tasks_discarded") + i("ap_tasks_refused")
                + i("ap_tasks_failed"));
    }

    private void assertArraysReleased() {
        assertEquals(i("peer_arrays_made") - madeBefore, i("peer_arrays_released") - releasedBefore);
    }

    private static long value(ImportedArray a, int j) {
        return a.root().buffer(1).getAtIndex(ValueLayout.JAVA_LONG, j);
    }

    // ---- the library consumes ----

    @Test
    void consumerReadsEveryBatchInOrderAndNeverRequestsBeyondItsWindow() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(2, ValidationLevel.FULL)) {
            apStart(c, 5, AP_GOOD);
            assertEquals("l", c.schema(WAIT).format());
            for (int b = 0; b < 5; b++) {
                try (ImportedArray a = c.next(WAIT)) {
                    assertEquals(4, a.root().length());
                    assertEquals(b * 100L + 3, value(a, 3));
                    // the window stays full: one more batch requested for each one taken (until the end came:
                    // the producer sends it once batch 5 is requested, after the third batch was taken)
                    if (b < 3) {
                        assertEquals(2 + b + 1, l("ap_requested"));
                    } else {
                        assertTrue(l("ap_requested") <= 2 + b + 1, () -> "requested " + l("ap_requested"));
                    }
                }
            }
            assertNull(c.next(WAIT));
            assertNull(c.next(WAIT));
            apJoin();
        }
        assertEquals(5, i("ap_tasks_extracted"));
        assertTasksSpent();
        assertArraysReleased();
        assertEquals(0, AsyncDeviceStream.liveHandlers());
    }

    @Test
    void aProducerHeldByTheWindowDeliversOnlyWhatWasRequestedAndCancelHandsQueuedTasksBack() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(3, ValidationLevel.DEFAULT)) {
            apStart(c, 10, AP_GOOD);
            c.schema(WAIT);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (i("ap_tasks_made") < 3 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(3, l("ap_requested"));
            c.cancel();
            c.cancel();
            assertNull(c.next(WAIT));
            apJoin();
            assertEquals(1, i("ap_cancelled"));
        }
        assertEquals(3, i("ap_tasks_made"));
        assertEquals(3, i("ap_tasks_discarded"));
        assertTasksSpent();
        assertArraysReleased();
    }

    @Test
    void closingMidStreamSpendsEveryTaskOnce() throws Throwable {
        AsyncDeviceStream c = AsyncDeviceStream.open(4, ValidationLevel.MINIMAL);
        apStart(c, 8, AP_GOOD);
        c.next(WAIT).close();
        c.close();
        c.close();
        apJoin();
        assertTasksSpent();
        assertArraysReleased();
        assertThrows(org.devicebridge.HandleClosedException.class, () -> c.next(WAIT));
    }

    @Test
    void anOnErrorBecomesAnArrowStreamExceptionWithTheProducersCodeAndMessage() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(1, ValidationLevel.FULL)) {
            apStart(c, 6, AP_ERROR_MID);
            c.next(WAIT).close();
            c.next(WAIT).close();
            c.next(WAIT).close();
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> c.next(WAIT));
            assertEquals(Errno.EIO, e.errno());
            assertEquals("disk gone", e.producerMessage());
            apJoin();
        }
        assertTasksSpent();
        assertArraysReleased();
    }

    @Test
    void aTaskBeyondTheDemandIsRefusedWithATypedError() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(1, ValidationLevel.FULL)) {
            apStart(c, 4, AP_IGNORE_DEMAND);
            apJoin(); // it sent task 1 (within the demand), then task 2, refused, then stopped and released
            ValidationException e = assertThrows(ValidationException.class, () -> c.next(WAIT));
            assertEquals(Category.STREAM, e.category());
            assertEquals("on_next_task", e.path());
            assertTrue(e.getMessage().contains("expected at most 1 tasks"), e.getMessage());
        }
        assertEquals(1, i("ap_tasks_refused"));
        assertTasksSpent();
        assertArraysReleased();
    }

    @Test
    void aTaskAfterTheEndIsAProtocolError() throws Throwable {
        expectViolation(AP_TASK_AFTER_END, "on_next_task", "after the end");
        assertEquals(1, i("ap_tasks_refused"));
    }

    @Test
    void anErrorAfterTheEndIsAProtocolError() throws Throwable {
        expectViolation(AP_ERROR_AFTER_END, "on_error", "after the end");
    }

    @Test
    void aReleaseWithoutEndOrErrorIsAProtocolError() throws Throwable {
        expectViolation(AP_NO_END, "release", "before release");
    }

    private void expectViolation(int mode, String path, String words) throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(8, ValidationLevel.FULL)) {
            apStart(c, 2, mode);
            apJoin();
            ValidationException e = assertThrows(ValidationException.class, () -> {
                for (int b = 0; b < 3; b++) {
                    try (ImportedArray a = c.next(WAIT)) {
                        if (a == null) {
                            break;
                        }
                    }
                }
            });
            assertEquals(path, e.path());
            assertTrue(e.getMessage().contains(words), e.getMessage());
        }
        assertTasksSpent();
        assertArraysReleased();
    }

    @Test
    void aNullSchemaIsRefused() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(2, ValidationLevel.FULL)) {
            apStart(c, 2, AP_NULL_SCHEMA);
            apJoin();
            ValidationException e = assertThrows(ValidationException.class, () -> c.schema(WAIT));
            assertEquals(Category.NULL_POINTER, e.category());
        }
        assertEquals(0, i("ap_tasks_made"));
    }

    @Test
    void aFailedExtractDataIsAnArrowStreamException() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(2, ValidationLevel.FULL)) {
            apStart(c, 3, AP_EXTRACT_FAILS);
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> c.next(WAIT));
            assertEquals(Errno.EIO, e.errno());
            assertTrue(e.getMessage().startsWith("extract_data"), e.getMessage());
            assertThrows(ArrowStreamException.class, () -> c.next(WAIT)); // sticky
            apJoin();
        }
        assertTasksSpent();
        assertTrue(i("ap_tasks_failed") >= 1);
    }

    @Test
    void aBatchOnAnotherDeviceThanTheProducersIsReleasedAndRefused() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(1, ValidationLevel.MINIMAL)) {
            apStart(c, 2, AP_WRONG_DEVICE);
            ValidationException e = assertThrows(ValidationException.class, () -> c.next(WAIT));
            assertEquals(Category.DEVICE, e.category());
        }
        apJoin();
        assertTasksSpent();
        assertArraysReleased();
    }

    @Test
    void aTimeoutLeavesTheStreamLive() throws Throwable {
        try (AsyncDeviceStream c = AsyncDeviceStream.open(1, ValidationLevel.FULL)) {
            ArrowStreamException e = assertThrows(ArrowStreamException.class, () -> c.next(Duration.ZERO));
            assertEquals(Errno.ETIMEDOUT, e.errno());
            assertTrue(c.isLive());
        } // never handed over: close frees the handler (the leak check proves it)
        assertEquals(0, AsyncDeviceStream.liveHandlers());
    }

    @Test
    void aWindowOutOfRangeIsRefused() {
        assertThrows(InvalidArgumentException.class, () -> AsyncDeviceStream.open(0, ValidationLevel.FULL));
        assertThrows(InvalidArgumentException.class,
                () -> AsyncDeviceStream.open(AsyncDeviceStream.MAX_WINDOW + 1, ValidationLevel.FULL));
    }

    // ---- the library produces ----

    private static MemorySegment source(Arena arena, int n, int failAt) throws Throwable {
        MemorySegment s = arena.allocate(ArrowDeviceArrayStream.layout());
        PEER.function("as_fill", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT)).invokeExact(s, n, failAt);
        return s;
    }

    private static MemorySegment acMake(int window, int mode) throws Throwable {
        return (MemorySegment) PEER.function("ac_make", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT)).invokeExact(window, mode);
    }

    private static int acAwaitRelease() throws Throwable {
        return (int) PEER.function("ac_await_release", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT))
                .invokeExact(20);
    }

    private static Throwable failure(CompletableFuture<Void> f) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
        return e.getCause();
    }

    private static long expectedSum(int n) {
        long sum = 0;
        for (int b = 0; b < n; b++) {
            for (int j = 0; j < 4; j++) {
                sum += b * 100L + j;
            }
        }
        return sum;
    }

    @Test
    void producerHandsEveryBatchOnDemandThenTheEndThenOneRelease() throws Throwable {
        int streamsBefore = i("as_streams_released");
        try (Arena arena = Arena.ofConfined()) {
            CompletableFuture<Void> done = AsyncDeviceStream.export(source(arena, 6, -1), acMake(2, AC_GOOD), EXEC);
            assertNull(done.get(20, TimeUnit.SECONDS));
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(6, i("ac_received"));
        assertEquals(1, i("ac_ended"));
        assertEquals(0, i("ac_violations"));
        assertEquals(expectedSum(6), l("ac_sum"));
        assertEquals(streamsBefore + 1, i("as_streams_released"));
        assertArraysReleased();
        assertEquals(0, AsyncStreamExport.liveExports());
    }

    @Test
    void aFailingSourceReachesTheConsumerAsOnErrorThenRelease() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            CompletableFuture<Void> done = AsyncDeviceStream.export(source(arena, 6, 3), acMake(2, AC_GOOD), EXEC);
            ArrowStreamException e = assertInstanceOf(ArrowStreamException.class, failure(done));
            assertEquals(Errno.EIO, e.errno());
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(Errno.EIO, i("ac_error_code"));
        assertEquals(3, i("ac_received"));
        assertEquals(0, i("ac_ended"));
        assertArraysReleased();
    }

    @Test
    void aRequestOfZeroIsAProtocolErrorReportedThroughOnError() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            CompletableFuture<Void> done = AsyncDeviceStream.export(source(arena, 3, -1),
                    acMake(2, AC_BAD_REQUEST), EXEC);
            ValidationException e = assertInstanceOf(ValidationException.class, failure(done));
            assertEquals("request", e.path());
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(Errno.EINVAL, i("ac_error_code"));
        assertEquals(0, i("ac_received"));
    }

    @Test
    void aTaskExtractedTwiceGetsEinvalTheSecondTime() throws Throwable {
        long staleBefore = AsyncProducerState.STALE_CALLS.get();
        try (Arena arena = Arena.ofConfined()) {
            AsyncDeviceStream.export(source(arena, 2, -1), acMake(1, AC_EXTRACT_TWICE), EXEC)
                    .get(20, TimeUnit.SECONDS);
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(Errno.EINVAL, i("ac_second_extract_rc"));
        assertEquals(staleBefore + 2, AsyncProducerState.STALE_CALLS.get());
        assertEquals(expectedSum(2), l("ac_sum"));
        assertArraysReleased();
    }

    @Test
    void aRefusedTaskEndsTheExportAndItsArrayIsReleased() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            CompletableFuture<Void> done = AsyncDeviceStream.export(source(arena, 5, -1),
                    acMake(3, AC_REFUSE_TASK), EXEC);
            ArrowStreamException e = assertInstanceOf(ArrowStreamException.class, failure(done));
            assertTrue(e.getMessage().startsWith("on_next_task"), e.getMessage());
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(0, i("ac_error_code")); // a refusal is followed by the release alone
        assertArraysReleased();
        assertEquals(0, AsyncStreamExport.liveExports());
    }

    @Test
    void aConsumersCancelEndsTheExportWithTheReleaseAlone() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            AsyncDeviceStream.export(source(arena, 50, -1), acMake(1, AC_CANCEL_AFTER_2), EXEC)
                    .get(20, TimeUnit.SECONDS);
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(2, i("ac_received"));
        assertEquals(0, i("ac_error_code"));
        assertArraysReleased();
    }

    @Test
    void aRefusedSchemaEndsTheExportWithoutTasks() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            CompletableFuture<Void> done = AsyncDeviceStream.export(source(arena, 5, -1),
                    acMake(3, AC_REFUSE_SCHEMA), EXEC);
            assertInstanceOf(ArrowStreamException.class, failure(done));
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(0, i("ac_received"));
    }

    @Test
    void tasksMayBeExtractedAfterTheHandlerWasReleased() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            AsyncDeviceStream.export(source(arena, 4, -1), acMake(8, AC_DEFER), EXEC).get(20, TimeUnit.SECONDS);
        }
        assertEquals(1, acAwaitRelease());
        assertEquals(4, AsyncStreamExport.liveExports()); // four tasks still the consumer's to extract
        assertEquals(0, i("ac_drain"));
        assertEquals(expectedSum(4), l("ac_sum"));
        assertEquals(0, AsyncStreamExport.liveExports());
        assertArraysReleased();
    }

    @Test
    void aNullHandlerIsRefusedAndTheStreamReleased() throws Throwable {
        int streamsBefore = i("as_streams_released");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = source(arena, 1, -1);
            ValidationException e = assertThrows(ValidationException.class,
                    () -> AsyncDeviceStream.export(s, MemorySegment.NULL, EXEC));
            assertEquals(Category.NULL_POINTER, e.category());
        }
        assertEquals(streamsBefore + 1, i("as_streams_released"));
    }

    // ---- both ends in this library ----

    @Test
    void theLibrarysProducerFeedsTheLibrarysConsumer() throws Throwable {
        try (Arena arena = Arena.ofConfined();
             AsyncDeviceStream c = AsyncDeviceStream.open(3, ValidationLevel.FULL)) {
            CompletableFuture<Void> done = AsyncDeviceStream.export(source(arena, 7, -1), c.handler(), EXEC);
            long sum = 0;
            for (;;) {
                try (ImportedArray a = c.next(WAIT)) {
                    if (a == null) {
                        break;
                    }
                    for (int j = 0; j < 4; j++) {
                        sum += value(a, j);
                    }
                }
            }
            assertEquals(expectedSum(7), sum);
            assertNull(done.get(20, TimeUnit.SECONDS));
        }
        assertArraysReleased();
        assertEquals(0, AsyncStreamExport.liveExports());
        assertEquals(0, AsyncDeviceStream.liveHandlers());
    }
}
