package org.devicebridge.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;

/**
 * Path (b) of {@link B10WorkerHandOff}, the host part: Spark's path today. The JVM listens on a loopback TCP port,
 * starts {@code b10_host_peer.py}, and keeps one Arrow IPC stream open each way on the accepted socket (Arrow
 * Java's {@link ArrowStreamWriter} out, {@link ArrowStreamReader} in), as Spark's Arrow Python runner does within
 * a task. {@link #roundTrip} writes one host batch and reads the peer's answer. The device parts (download before,
 * upload after) are the caller's. Owns the socket, the streams, the peer process and the roots it allocates.
 */
final class B10HostPath implements AutoCloseable {
    private final Process peer;
    private final Path stderr;
    private final ServerSocket server;
    private final Socket socket;
    private final BufferAllocator allocator;
    private final ArrowStreamReader reader;
    private VectorSchemaRoot out;
    private ArrowStreamWriter writer;

    private B10HostPath(Process peer, Path stderr, ServerSocket server, Socket socket, BufferAllocator allocator) {
        this.peer = peer;
        this.stderr = stderr;
        this.server = server;
        this.socket = socket;
        this.allocator = allocator;
        try {
            this.reader = new ArrowStreamReader(Channels.newChannel(socket.getInputStream()), allocator);
        } catch (IOException e) {
            throw new IllegalStateException("b: the socket's input stream: " + e, e);
        }
    }

    /**
     * Starts the peer ({@code python b10_host_peer.py --port P --function F [--no-cuda]}) and accepts its
     * connection. Every read and the accept time out after {@code timeoutSeconds}; the watchdog kills the peer and
     * closes the sockets when the phase runs past its limit.
     */
    static B10HostPath start(B10WorkerHandOff.Options o, BufferAllocator allocator, Path dir,
                             B10Support.Watchdog watchdog) throws IOException {
        ServerSocket server = new ServerSocket();
        Process peer = null;
        Socket socket = null;
        Path err = dir.resolve("host_peer.stderr");
        try {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
            server.setSoTimeout(500); // accept in short waits, to notice a peer that died before it connected
            watchdog.guard(server);
            List<String> cmd = new ArrayList<>(List.of(o.python(), o.pythonDir().resolve("b10_host_peer.py").toString(),
                    "--port", Integer.toString(server.getLocalPort()), "--function", o.function(),
                    "--timeout", Integer.toString(o.timeoutSeconds())));
            if (o.dryRun()) {
                cmd.add("--no-cuda");
            }
            peer = B10Support.Children.start(cmd, err, o.pythonDir());
            watchdog.guard(peer);
            long deadline = System.nanoTime() + o.timeoutSeconds() * 1_000_000_000L;
            while (socket == null) {
                try {
                    socket = server.accept();
                } catch (java.net.SocketTimeoutException e) {
                    if (!peer.isAlive()) {
                        throw new IOException("the peer exited with " + peer.exitValue() + " before it connected");
                    }
                    if (System.nanoTime() - deadline > 0) {
                        throw new IOException("the peer did not connect within " + o.timeoutSeconds() + " s");
                    }
                }
            }
            socket.setSoTimeout(o.timeoutSeconds() * 1000);
            socket.setTcpNoDelay(true);
            watchdog.guard(socket);
            return new B10HostPath(peer, err, server, socket, allocator);
        } catch (IOException | RuntimeException e) {
            if (socket != null) {
                socket.close();
            }
            server.close();
            B10Support.Children.end(peer, 0);
            throw new IOException("b: starting the peer failed: " + e + "\npeer stderr:\n" + B10Support.tail(err, 30), e);
        }
    }

    /**
     * Writes {@code batch} (borrowed; its buffers are shared with the writer's root until the next call) as the
     * next message of the outgoing stream and reads the peer's next batch.
     *
     * @return the reader's root, holding the peer's answer until the next call (borrowed)
     */
    VectorSchemaRoot roundTrip(VectorSchemaRoot batch) throws IOException {
        if (writer == null) {
            out = VectorSchemaRoot.create(batch.getSchema(), allocator);
            writer = new ArrowStreamWriter(out, null, Channels.newChannel(socket.getOutputStream()));
            writer.start();
        }
        try (ArrowRecordBatch rb = new VectorUnloader(batch).getRecordBatch()) {
            new VectorLoader(out).load(rb);
        }
        writer.writeBatch();
        if (!reader.loadNextBatch()) {
            throw new IOException("b: the peer ended its stream early\npeer stderr:\n" + B10Support.tail(stderr, 30));
        }
        return reader.getVectorSchemaRoot();
    }

    /** Ends the outgoing stream, reads the peer's to its end, and closes everything; the peer exits by itself. */
    @Override
    public void close() throws IOException {
        IOException failure = null;
        try {
            if (writer != null) {
                writer.end();
            }
            socket.shutdownOutput();
            while (reader.loadNextBatch()) {
                // the peer answers every batch it read: none should remain
            }
        } catch (IOException e) {
            failure = e;
        }
        try {
            reader.close();
        } catch (IOException e) {
            failure = failure == null ? e : failure;
        }
        if (writer != null) {
            writer.close();
        }
        if (out != null) {
            out.close();
        }
        socket.close();
        server.close();
        B10Support.Children.end(peer, 30);
        if (peer.exitValue() != 0) {
            failure = new IOException("b: the peer exited with " + peer.exitValue() + "\npeer stderr:\n"
                    + B10Support.tail(stderr, 30));
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Compares {@code actual} with {@code source} (int64 columns): every column equal, but the first plus one when
     * {@code plusOne}; samples 1024 rows spread over the batch and the last row.
     *
     * @throws IllegalStateException on the first difference
     */
    static void check(String what, VectorSchemaRoot source, VectorSchemaRoot actual, boolean plusOne) {
        if (source.getRowCount() != actual.getRowCount()
                || source.getFieldVectors().size() != actual.getFieldVectors().size()) {
            throw new IllegalStateException(String.format(Locale.ROOT, "%s: expected %d rows x %d columns but found"
                    + " %d x %d", what, source.getRowCount(), source.getFieldVectors().size(), actual.getRowCount(),
                    actual.getFieldVectors().size()));
        }
        int rows = source.getRowCount();
        for (int c = 0; c < source.getFieldVectors().size(); c++) {
            BigIntVector want = (BigIntVector) source.getVector(c);
            BigIntVector got = (BigIntVector) actual.getVector(c);
            long add = plusOne && c == 0 ? 1 : 0;
            for (int k = 0; k <= 1024 && rows > 0; k++) {
                int i = k == 1024 ? rows - 1 : (int) ((long) k * rows / 1024);
                if (got.isNull(i) || got.get(i) != want.get(i) + add) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "%s: column %d row %d: expected %d"
                            + " but found %s", what, c, i, want.get(i) + add, got.isNull(i) ? "null" : got.get(i)));
                }
            }
        }
    }
}
