package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.Pipe;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ipc.WorkerChannel.PeerException;
import org.devicebridge.ipc.WorkerChannel.PeerException.Reason;
import org.devicebridge.ipc.WorkerProtocol.Kind;
import org.devicebridge.ipc.WorkerProtocol.Payload;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The worker protocol without a GPU: a fake worker (a Java thread on two in-memory pipes) speaks it to a real
 * {@link WorkerChannel}. The greeting and goodbye, what the channel writes, every bound and refusal on what it
 * reads (line length per kind, UTF-8, nesting, duplicate keys, version, kinds, sequence numbers, close messages
 * for unknown exports, handle lists), a worker that exits (EOF) and one that stalls (timeout), and an error
 * from the worker's function. No timing is asserted: timeouts are only made short.
 */
class WorkerChannelTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration SHORT = Duration.ofMillis(200);
    private static final String HELLO = "{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"pid\": 42}";
    private static final String BYE = "{\"devicebridge_worker\": 1, \"kind\": \"bye\", \"unmapped\": []}";

    private final List<Fake> fakes = new ArrayList<>();

    /** A worker played by a thread: what the channel wrote is in {@link #heard}, its failures in {@link #errors}. */
    private static final class Fake {
        final Pipe toJvm;
        final Pipe toWorker;
        final InputStream jvmIn;
        final OutputStream jvmOut;
        final BufferedReader in;
        final OutputStream out;
        final List<String> heard = Collections.synchronizedList(new ArrayList<>());
        final ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        Thread thread;

        Fake() throws IOException {
            toJvm = Pipe.open();
            toWorker = Pipe.open();
            jvmIn = Channels.newInputStream(toJvm.source());
            jvmOut = Channels.newOutputStream(toWorker.sink());
            in = new BufferedReader(new InputStreamReader(Channels.newInputStream(toWorker.source()),
                    StandardCharsets.UTF_8));
            out = Channels.newOutputStream(toJvm.sink());
        }

        String hear() throws IOException {
            String line = in.readLine();
            heard.add(line);
            return line;
        }

        void say(String... lines) throws IOException {
            for (String l : lines) {
                out.write((l + "\n").getBytes(StandardCharsets.UTF_8));
            }
            out.flush();
        }

        void sayBytes(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
        }

        void hangUp() throws IOException {
            out.close();
        }

        void play(Script script) {
            thread = Thread.ofPlatform().daemon().start(() -> {
                try {
                    script.run(this);
                } catch (Throwable t) {
                    errors.add(t);
                }
            });
        }

        void join() throws InterruptedException {
            thread.join(WAIT.toMillis());
            if (!errors.isEmpty()) {
                throw new AssertionError("the fake worker failed", errors.peek());
            }
        }
    }

    @FunctionalInterface
    private interface Script {
        void run(Fake f) throws Exception;
    }

    private Fake fake(Script script) throws IOException {
        Fake f = new Fake();
        fakes.add(f);
        f.play(script);
        return f;
    }

    @AfterEach
    void closeFakes() throws IOException {
        for (Fake f : fakes) {
            f.out.close();
            f.in.close();
        }
    }

    /** A channel greeted by a fake that then plays {@code rest}. */
    private WorkerChannel greeted(Script rest, Duration timeout) throws IOException {
        Fake f = fake(w -> {
            w.hear();
            w.say(HELLO);
            rest.run(w);
        });
        return WorkerChannel.open(f.jvmIn, f.jvmOut, timeout);
    }

    private static String result(long seq, String payload) {
        return "{\"devicebridge_worker\": 1, \"kind\": \"result\", \"seq\": " + seq + ", \"payload\": \"" + payload
                + "\", \"unmapped\": []}";
    }

    @Test
    void greetsWithHelloAndSaysGoodbyeWithBye() throws Exception {
        Fake f = fake(w -> {
            assertEquals(WorkerProtocol.hello(), w.hear());
            w.say(HELLO);
            assertEquals(WorkerProtocol.bye(), w.hear());
            w.say(BYE);
            assertNull(w.in.readLine(), "the channel closed its end after the goodbye");
        });
        WorkerChannel c = WorkerChannel.open(f.jvmIn, f.jvmOut, WAIT);
        c.close();
        c.close(); // idempotent
        f.join();
        assertEquals(List.of(WorkerProtocol.hello(), WorkerProtocol.bye()), f.heard);
        assertThrows(HandleClosedException.class, () -> c.nextResult(Payload.ARROW_BATCH));
    }

    @Test
    void aWorkerThatNeverGreetsTimesOutAndOneThatExitsIsExited() throws Exception {
        Fake silent = fake(Fake::hear);
        PeerException t = assertThrows(PeerException.class, () -> WorkerChannel.open(silent.jvmIn, silent.jvmOut, SHORT));
        assertEquals(Reason.TIMED_OUT, t.reason(), t.getMessage());
        Fake gone = fake(w -> {
            w.hear();
            w.hangUp();
        });
        PeerException e = assertThrows(PeerException.class, () -> WorkerChannel.open(gone.jvmIn, gone.jvmOut, WAIT));
        assertEquals(Reason.EXITED, e.reason(), e.getMessage());
        Fake half = fake(w -> {
            w.hear();
            w.sayBytes("{\"devicebridge_worker\": 1, \"ki".getBytes(StandardCharsets.US_ASCII));
            w.hangUp();
        });
        PeerException h = assertThrows(PeerException.class, () -> WorkerChannel.open(half.jvmIn, half.jvmOut, WAIT));
        assertEquals(Reason.EXITED, h.reason(), "a partial last line is the end of a worker that died writing");
        assertThrows(InvalidArgumentException.class, () -> WorkerChannel.open(half.jvmIn, half.jvmOut, Duration.ZERO));
    }

    static Stream<Arguments> hostileGreetings() {
        String deep = "{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"x\": " + "[".repeat(200) + "]".repeat(200) + "}";
        String tooLong = "{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"x\": \"" + "a".repeat(1 << 16) + "\"}";
        return Stream.of(
                Arguments.of("a line over 65,536 bytes", tooLong, Category.SIZE, ""),
                Arguments.of("nesting over 160", deep, Category.DEPTH, "x[0]*"),
                Arguments.of("a repeated key", "{\"devicebridge_worker\": 1, \"kind\": \"hello\", \"kind\": \"hello\"}",
                        Category.FORMAT, ""),
                Arguments.of("another version", "{\"devicebridge_worker\": 2, \"kind\": \"hello\"}", Category.VERSION,
                        "devicebridge_worker"),
                Arguments.of("no version", "{\"kind\": \"hello\"}", Category.STRUCTURE, "devicebridge_worker"),
                Arguments.of("a kind only the JVM sends", "{\"devicebridge_worker\": 1, \"kind\": \"call\"}",
                        Category.FORMAT, "kind"),
                Arguments.of("not an object", "[1]", Category.FORMAT, ""),
                Arguments.of("a bye for a hello", BYE, Category.STRUCTURE, "kind"),
                Arguments.of("text after the object", HELLO + " x", Category.FORMAT, ""));
    }

    @ParameterizedTest(name = "{0} is refused")
    @MethodSource("hostileGreetings")
    void hostileGreetingsAreRefusedWithCategoryAndPath(String what, String line, Category category, String path)
            throws Exception {
        Fake f = fake(w -> {
            w.hear();
            w.say(line);
        });
        ValidationException e = assertThrows(ValidationException.class, () -> WorkerChannel.open(f.jvmIn, f.jvmOut, WAIT));
        assertEquals(category, e.category(), e.getMessage());
        if (path.endsWith("*")) {
            assertTrue(e.path().startsWith(path.substring(0, path.length() - 1)), e.path());
        } else {
            assertEquals(path, e.path(), e.getMessage());
        }
        f.join();
    }

    @Test
    void bytesThatAreNotUtf8AreRefused() throws Exception {
        Fake f = fake(w -> {
            w.hear();
            byte[] line = (HELLO.substring(0, HELLO.length() - 1) + ", \"x\": \"\u0000\"}\n").getBytes(StandardCharsets.UTF_8);
            line[line.length - 4] = (byte) 0xC3; // a lead byte without its continuation
            w.sayBytes(line);
        });
        ValidationException e = assertThrows(ValidationException.class, () -> WorkerChannel.open(f.jvmIn, f.jvmOut, WAIT));
        assertEquals(Category.FORMAT, e.category(), e.getMessage());
        f.join();
    }

    @Test
    void anErrorFromTheWorkersFunctionIsFailedAndTheChannelGoesOn() throws Exception {
        try (WorkerChannel c = greeted(w -> {
            w.say("{\"devicebridge_worker\": 1, \"kind\": \"error\", \"seq\": 1, \"message\": \"ZeroDivisionError:"
                    + " division by zero\", \"unmapped\": []}");
            w.say(result(2, "tensor"), "{\"any\": \"descriptor line\"}");
            assertEquals(WorkerProtocol.bye(), w.hear());
            w.say(BYE);
        }, WAIT)) {
            PeerException e = assertThrows(PeerException.class, () -> c.nextResult(Payload.ARROW_BATCH));
            assertEquals(Reason.FAILED, e.reason());
            assertTrue(e.getMessage().contains("ZeroDivisionError: division by zero"), e.getMessage());
            WorkerLink.Reply r = c.nextResult(Payload.TENSOR);
            assertEquals(Kind.RESULT, r.header().kind());
            assertEquals(2, r.header().seq());
            assertEquals("{\"any\": \"descriptor line\"}", r.descriptor(), "the descriptor line is read whole");
        }
    }

    static Stream<Arguments> hostileReplies() {
        String hex = "ab".repeat(64);
        return Stream.of(
                Arguments.of("an answer out of order", List.of(result(2, "arrow_batch"), "{}"), Category.STRUCTURE, "seq"),
                Arguments.of("seq 0", List.of("{\"devicebridge_worker\": 1, \"kind\": \"error\", \"seq\": 0,"
                        + " \"message\": \"m\"}"), Category.SIZE, "seq"),
                Arguments.of("an unknown payload", List.of(result(1, "table"), "{}"), Category.FORMAT, "payload"),
                Arguments.of("a descriptor line over the tensor bound",
                        List.of(result(1, "tensor"), "{\"x\": \"" + "a".repeat(1 << 16) + "\"}"), Category.SIZE, ""),
                Arguments.of("an empty error text", List.of("{\"devicebridge_worker\": 1, \"kind\": \"error\", \"seq\": 1,"
                        + " \"message\": \"\"}"), Category.SIZE, "message"),
                Arguments.of("an error text over 16,384 characters", List.of("{\"devicebridge_worker\": 1, \"kind\":"
                        + " \"error\", \"seq\": 1, \"message\": \"" + "m".repeat((1 << 14) + 1) + "\"}"),
                        Category.SIZE, "message"),
                Arguments.of("a handle that is not 64 bytes", List.of("{\"devicebridge_worker\": 1, \"kind\": \"bye\","
                        + " \"unmapped\": [\"abcd\"]}"), Category.STRUCTURE, "unmapped[0]"),
                Arguments.of("a handle that is not hex", List.of("{\"devicebridge_worker\": 1, \"kind\": \"bye\","
                        + " \"unmapped\": [\"" + "zz".repeat(64) + "\"]}"), Category.FORMAT, "unmapped[0]"),
                Arguments.of("more than 256 unmapped handles", List.of("{\"devicebridge_worker\": 1, \"kind\": \"bye\","
                        + " \"unmapped\": [" + String.join(", ", Collections.nCopies(257, "\"" + hex + "\"")) + "]}"),
                        Category.SIZE, "unmapped"),
                Arguments.of("a close message for no export", List.of("{\"devicebridge_ipc_closed\": \"nobody\"}"),
                        Category.CONTENT, "devicebridge_ipc_closed"),
                Arguments.of("a close message with an empty id", List.of("{\"devicebridge_ipc_closed\": \"\"}"),
                        Category.SIZE, "devicebridge_ipc_closed"));
    }

    @ParameterizedTest(name = "{0} ends the channel")
    @MethodSource("hostileReplies")
    void hostileRepliesAreRefusedAndEndTheChannel(String what, List<String> lines, Category category, String path)
            throws Exception {
        WorkerChannel c = greeted(w -> w.say(lines.toArray(String[]::new)), WAIT);
        ValidationException e = assertThrows(ValidationException.class, () -> c.nextResult(Payload.TENSOR));
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        assertThrows(RuntimeException.class, () -> c.nextResult(Payload.TENSOR), "nothing more is read");
        c.close(); // nothing was shared: the ended channel closes without the worker
        assertThrows(HandleClosedException.class, () -> c.nextResult(Payload.TENSOR));
    }

    @Test
    void aStalledWorkerTimesOutAndAnExitedOneIsExitedOnEveryLaterCall() throws Exception {
        WorkerChannel stalled = greeted(w -> { }, SHORT);
        PeerException t = assertThrows(PeerException.class, () -> stalled.nextResult(Payload.ARROW_BATCH));
        assertEquals(Reason.TIMED_OUT, t.reason());
        assertInstanceOf(HandleClosedException.class, assertThrows(RuntimeException.class,
                () -> stalled.nextResult(Payload.ARROW_BATCH)), "a stalled channel is ended");
        stalled.forceClose();

        WorkerChannel exited = greeted(Fake::hangUp, WAIT);
        PeerException e = assertThrows(PeerException.class, () -> exited.nextResult(Payload.ARROW_BATCH));
        assertEquals(Reason.EXITED, e.reason());
        PeerException again = assertThrows(PeerException.class, () -> exited.nextResult(Payload.ARROW_BATCH));
        assertEquals(Reason.EXITED, again.reason());
        exited.close(); // only releases: the worker is gone
    }

    @Test
    void aGoodbyeSkipsResultsNeverReceivedAndAWorkerThatExitsInsteadIsFine() throws Exception {
        WorkerChannel c = greeted(w -> {
            assertEquals(WorkerProtocol.bye(), w.hear());
            w.say(result(1, "arrow_batch"), "{\"never\": \"opened\"}", BYE);
        }, WAIT);
        c.close();
        WorkerChannel d = greeted(w -> {
            w.hear();
            w.hangUp();
        }, WAIT);
        d.close();
        assertThrows(RuntimeException.class, () -> d.nextResult(Payload.ARROW_BATCH));
    }

    @Test
    void theCallHeaderNamesSequencePayloadUnmapAndTransientHandles() {
        String hex = "0f".repeat(64);
        String h = WorkerProtocol.call(7, Payload.ARROW_BATCH, List.of(hex), List.of(0, 2));
        Map<String, Object> m = StrictJson.object(h, WorkerProtocol.MAX_HEADER_BYTES);
        assertEquals(1L, m.get("devicebridge_worker"));
        assertEquals("call", m.get("kind"));
        assertEquals(7L, m.get("seq"));
        assertEquals("arrow_batch", m.get("payload"));
        assertEquals(List.of(hex), m.get("unmap"));
        assertEquals(List.of(0L, 2L), m.get("transient"));
        assertThrows(IllegalArgumentException.class, () -> WorkerProtocol.call(1, Payload.TENSOR,
                Collections.nCopies(WorkerProtocol.MAX_HANDLE_LIST + 1, hex), List.of()));
        String longest = WorkerProtocol.call(Long.MAX_VALUE, Payload.ARROW_BATCH,
                Collections.nCopies(WorkerProtocol.MAX_HANDLE_LIST, hex), List.of());
        assertTrue(longest.length() < WorkerProtocol.MAX_HEADER_BYTES, "the longest call header fits the line bound");
        WorkerProtocol.Message closed = WorkerProtocol.read("{\"devicebridge_ipc_closed\": \"id-1\"}");
        assertEquals("id-1", closed.closedId());
        assertNull(closed.kind());
    }

    @Test
    void theWorkerModuleIsWrittenFromTheJar(@TempDir Path dir) throws IOException {
        Path module = WorkerChannel.writeWorkerModule(dir);
        assertEquals(dir.resolve("devicebridge_worker.py"), module);
        String text = Files.readString(module);
        assertTrue(text.contains("def serve("), "the worker loop");
        assertTrue(text.contains("ipcOpenMemHandle"), "maps with CUDA IPC");
    }
}
