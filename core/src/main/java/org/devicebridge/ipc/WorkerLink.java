package org.devicebridge.ipc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.ipc.WorkerProtocol.Kind;
import org.devicebridge.ipc.WorkerProtocol.Message;

/**
 * The line transport of a {@link WorkerChannel}: one reader thread that reads the worker's lines (each bounded
 * in bytes before it is stored, strict UTF-8) and one writer thread that writes the JVM's, so that every wait
 * for the worker, reading or writing, has a timeout and no caller blocks in a stalled pipe. Close messages and
 * {@code unmapped} lists are handed to the {@link Events} at once, on the reader thread; replies ({@code hello},
 * {@code result} with its descriptor line, {@code error}, {@code bye}) queue in order for {@link #next}.
 *
 * <p>The end of the worker's output (EOF, a read error, a broken pipe on write) is reported once through
 * {@link Events#gone}; a line the protocol refuses through {@link Events#refused}, after which nothing more is
 * read. Thread-safe. The link owns both streams and closes them in {@link #close()}.
 */
final class WorkerLink implements AutoCloseable {
    /** What the reader and writer threads report to the channel; called on those threads, never throws out. */
    interface Events {
        void closed(String exportId);

        void unmapped(List<String> handles);

        void gone(Throwable cause);

        void refused(ValidationException cause);
    }

    /** A reply: a header and, after a {@code result}, its descriptor line. */
    record Reply(Message header, String descriptor) {}

    /** The end of the replies: the worker went away or broke the protocol. */
    private record End(RuntimeException failure) {}

    private static final Object STOP = new Object();
    private final InputStream in;
    private final OutputStream out;
    private final Events events;
    private final BlockingQueue<Object> replies = new LinkedBlockingQueue<>();
    private final BlockingQueue<Object> outbox = new LinkedBlockingQueue<>();
    private volatile End end;
    private final byte[] buf = new byte[1 << 16];
    private int pos;
    private int lim;

    private record Outgoing(byte[] bytes, CompletableFuture<Void> written) {}

    WorkerLink(InputStream in, OutputStream out, Events events) {
        this.in = Objects.requireNonNull(in, "fromWorker");
        this.out = Objects.requireNonNull(out, "toWorker");
        this.events = events;
    }

    void start() {
        thread("devicebridge-worker-reader", this::readLoop).start();
        thread("devicebridge-worker-writer", this::writeLoop).start();
    }

    private static Thread thread(String name, Runnable body) {
        Thread t = Thread.ofPlatform().daemon().name(name).inheritInheritableThreadLocals(false).unstarted(body);
        t.setContextClassLoader(null);
        return t;
    }

    /**
     * Queues {@code lines} to be written together, in order, and waits until they are written.
     *
     * @throws TimeoutException if they are not written within {@code timeout} (the pipe is full: the worker stalls)
     * @throws IOException if the worker's end is closed
     */
    void write(Duration timeout, String... lines) throws TimeoutException, IOException, InterruptedException {
        CompletableFuture<Void> written = post(lines);
        try {
            written.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        }
    }

    /** Queues {@code lines} to be written together, in order, without waiting. */
    CompletableFuture<Void> post(String... lines) {
        StringBuilder b = new StringBuilder();
        for (String l : lines) {
            b.append(l).append('\n');
        }
        CompletableFuture<Void> written = new CompletableFuture<>();
        outbox.add(new Outgoing(b.toString().getBytes(StandardCharsets.UTF_8), written));
        return written;
    }

    /**
     * {@return the next reply}
     *
     * @param timeout how long to wait
     * @throws TimeoutException if none came within {@code timeout}
     * @throws RuntimeException the failure that ended the replies (EOF, a refused line), again on every later call
     */
    Reply next(Duration timeout) throws TimeoutException, InterruptedException {
        Object o = replies.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
        if (o == null) {
            throw new TimeoutException();
        }
        if (o instanceof End x) {
            replies.add(x); // the end stays at the head for later calls
            throw x.failure();
        }
        return (Reply) o;
    }

    private void readLoop() {
        try {
            while (true) {
                String line = readLine(WorkerProtocol.MAX_HEADER_BYTES);
                if (line == null) {
                    finish(new End(new WorkerChannel.PeerException(WorkerChannel.PeerException.Reason.EXITED,
                            "the worker closed its end of the channel (it exited or was killed)", null)), null);
                    return;
                }
                Message m = WorkerProtocol.read(line);
                if (m.closedId() != null) {
                    events.closed(m.closedId());
                    continue;
                }
                if (!m.unmapped().isEmpty()) {
                    events.unmapped(m.unmapped());
                }
                String descriptor = null;
                if (m.kind() == Kind.RESULT) {
                    descriptor = readLine(m.payload().maxLineBytes);
                    if (descriptor == null) {
                        finish(new End(new WorkerChannel.PeerException(WorkerChannel.PeerException.Reason.EXITED,
                                "the worker closed its end of the channel before the descriptor of result "
                                + m.seq(), null)), null);
                        return;
                    }
                }
                replies.add(new Reply(m, descriptor));
            }
        } catch (ValidationException e) {
            finish(new End(e), e);
        } catch (IOException e) {
            finish(new End(new WorkerChannel.PeerException(WorkerChannel.PeerException.Reason.EXITED,
                    "reading from the worker failed: " + e.getMessage(), e)), null);
        } catch (RuntimeException | Error e) {
            finish(new End(new WorkerChannel.PeerException(WorkerChannel.PeerException.Reason.EXITED,
                    "the channel's reader failed: " + e, e)), null);
            throw e;
        }
    }

    /** Ends the replies once; a refusal goes to {@link Events#refused}, anything else to {@link Events#gone}. */
    private synchronized void finish(End e, ValidationException refused) {
        if (end != null) {
            return;
        }
        end = e;
        try { // the channel's state first: whoever takes the end from the queue sees it
            if (refused != null) {
                events.refused(refused);
            } else {
                events.gone(e.failure());
            }
        } finally {
            replies.add(e);
        }
    }

    /**
     * {@return the next line without its line feed, or {@code null} at the end of the input (a partial last line
     * counts as the end: the worker died while writing)}
     *
     * @throws ValidationException {@code SIZE} for a line longer than {@code maxBytes} (nothing beyond the bound is
     *         stored), {@code FORMAT} for bytes that are not UTF-8
     */
    private String readLine(int maxBytes) throws IOException {
        byte[] line = new byte[Math.min(maxBytes, 1024)];
        int n = 0;
        while (true) {
            if (pos == lim) {
                lim = in.read(buf, 0, buf.length);
                pos = 0;
                if (lim <= 0) {
                    lim = 0;
                    return null;
                }
            }
            int nl = -1;
            for (int k = pos; k < lim; k++) {
                if (buf[k] == '\n') {
                    nl = k;
                    break;
                }
            }
            int take = (nl < 0 ? lim : nl) - pos;
            if (take > maxBytes - n) {
                throw new ValidationException(Category.SIZE, "", "expected a line of at most " + maxBytes
                        + " bytes from the worker but found more");
            }
            if (n + take > line.length) {
                line = Arrays.copyOf(line, (int) Math.min(maxBytes, Math.max(2L * line.length, n + take)));
            }
            System.arraycopy(buf, pos, line, n, take);
            n += take;
            pos += take;
            if (nl >= 0) {
                pos++; // the line feed
                return decode(line, n);
            }
        }
    }

    private static String decode(byte[] line, int n) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(line, 0, n)).toString();
        } catch (CharacterCodingException e) {
            throw new ValidationException(Category.FORMAT, "", "expected UTF-8 text from the worker but found bytes"
                    + " that are not UTF-8", e);
        }
    }

    private void writeLoop() {
        try {
            while (true) {
                Object o = outbox.take();
                if (o == STOP) {
                    return;
                }
                Outgoing g = (Outgoing) o;
                try {
                    out.write(g.bytes());
                    if (outbox.isEmpty()) {
                        out.flush();
                    }
                    g.written().complete(null);
                } catch (IOException e) {
                    g.written().completeExceptionally(e);
                    failQueued(e);
                    finish(new End(new WorkerChannel.PeerException(WorkerChannel.PeerException.Reason.EXITED,
                            "writing to the worker failed (it exited or was killed): " + e.getMessage(), e)), null);
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void failQueued(IOException e) {
        for (Object o; (o = outbox.poll()) != null; ) {
            if (o instanceof Outgoing g) {
                g.written().completeExceptionally(e);
            }
        }
    }

    /** Stops the writer after what is queued and closes both streams (which ends the reader); idempotent. */
    @Override
    public void close() {
        outbox.add(STOP);
        try {
            out.close();
        } catch (IOException ignored) {
            // the worker's end is gone already: nothing is lost by not closing ours cleanly
        }
        try {
            in.close();
        } catch (IOException ignored) {
            // as above
        }
    }
}
