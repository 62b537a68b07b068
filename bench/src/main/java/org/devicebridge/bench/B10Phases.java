package org.devicebridge.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.bench.B10Support.Children;
import org.devicebridge.bench.B10Support.Row;
import org.devicebridge.bench.B10Support.Watchdog;
import org.devicebridge.bench.B10WorkerHandOff.Options;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.ipc.IpcExport;
import org.devicebridge.ipc.WorkerChannel;

/**
 * The measured phases of {@link B10WorkerHandOff}: each starts its own Python process (so that each first batch
 * is that process's first), times {@code iterations + 1} batches (the first reported apart), checks one more
 * batch's values untimed, and ends its process on every path, under a {@link Watchdog}.
 */
final class B10Phases {
    private B10Phases() {}

    /** What the device phases share: Arrow memory, the stream, the staging transfer and the host source batch. */
    record Device(BufferAllocator allocator, CudaStream stream, HostDeviceTransfer transfer, VectorSchemaRoot host) {}

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    /**
     * (a): {@code batch} through a {@link WorkerChannel} to {@code devicebridge_worker.py} (with
     * {@code b10_functions}' function) and back: send, receive at MINIMAL, synchronize the stream, close the result.
     */
    static Row handOff(Options o, Device d, CudaArrowBatch batch, String path, String shape) throws Exception {
        Path dir = Files.createTempDirectory("b10-worker");
        Path module = WorkerChannel.writeWorkerModule(dir);
        Path err = dir.resolve("worker.stderr");
        CudaStream stream = d.stream();
        double[] t = new double[o.iterations() + 1];
        long copied = -1;
        Process p = null;
        WorkerChannel ch = null;
        try (Watchdog w = Watchdog.watch(path, o.timeoutSeconds())) {
            p = Children.start(List.of(o.python(), module.toString(), "--function", "b10_functions:" + o.function()),
                    err, o.pythonDir());
            w.guard(p);
            ch = WorkerChannel.open(p.getInputStream(), p.getOutputStream(), B10WorkerHandOff.timeout(o));
            for (int i = 0; i < t.length; i++) {
                long t0 = System.nanoTime();
                IpcExport e = ch.send(batch, stream);
                try (CudaArrowBatch r = ch.receive(stream, ValidationLevel.MINIMAL, null)) {
                    stream.synchronize(); // the worker's result is ready here; our last use before closing it
                }
                t[i] = ms(System.nanoTime() - t0);
                copied = e.copiedBytes();
            }
            // untimed: one more call, its result downloaded and compared with the source
            ch.send(batch, stream);
            try (CudaArrowBatch r = ch.receive(stream, ValidationLevel.DEFAULT, d.transfer());
                 VectorSchemaRoot back = CudaArrow.download(r, new DeviceCopies(d.allocator(), d.transfer(), stream))) {
                B10HostPath.check(path, d.host(), back, o.plusOne());
            }
            WorkerChannel closing = ch;
            ch = null;
            closing.close(); // bye: the worker unmaps everything and exits
        } catch (Exception | Error e) {
            throw new IllegalStateException(path + ": " + e + "\nworker stderr:\n" + B10Support.tail(err, 40), e);
        } finally {
            if (ch != null) { // failed: end the worker first, so that nothing of ours is still mapped there
                if (p != null) {
                    p.destroyForcibly();
                    p.waitFor();
                }
                ch.forceClose();
            }
            Children.end(p, 30);
        }
        String note = String.format(Locale.ROOT, "round trip; copiedBytes %d per call%s", copied,
                copied > 0 ? " (pool memory copied once into cuMemAlloc memory by the export)" : " (zero-copy)");
        System.out.printf(Locale.ROOT, "[b10] %s, %s: first %.3f ms; %s%n", path, shape, t[0], note);
        return new Row(path, shape, t[0], B10WorkerHandOff.warm(t), note);
    }

    /** (b): download, Arrow IPC stream to the peer and back over a loopback socket, upload; per batch. */
    static Row hostPath(Options o, Device d, CudaArrowBatch batch, String shape) throws Exception {
        String path = "b download + Arrow IPC stream over TCP loopback + upload";
        Path dir = Files.createTempDirectory("b10-host");
        CudaStream stream = d.stream();
        double[] t = new double[o.iterations() + 1];
        try (Watchdog w = Watchdog.watch("b", o.timeoutSeconds());
             B10HostPath h = B10HostPath.start(o, d.allocator(), dir, w)) {
            for (int i = 0; i < t.length; i++) {
                long t0 = System.nanoTime();
                try (VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(d.allocator(), d.transfer(), stream))) {
                    VectorSchemaRoot back = h.roundTrip(down);
                    try (CudaArrowBatch up = CudaArrow.upload(back, DeviceCopies.of(d.transfer(), stream))) {
                        stream.synchronize();
                    }
                }
                t[i] = ms(System.nanoTime() - t0);
            }
            try (VectorSchemaRoot down = CudaArrow.download(batch, new DeviceCopies(d.allocator(), d.transfer(), stream))) {
                B10HostPath.check("b", d.host(), h.roundTrip(down), o.plusOne());
            }
        }
        String note = "round trip; peer: pyarrow read, CuPy upload of every buffer, function, download, write";
        System.out.printf(Locale.ROOT, "[b10] b, %s: first %.3f ms%n", shape, t[0]);
        return new Row(path, shape, t[0], B10WorkerHandOff.warm(t), note);
    }

    /** (b) without CUDA ({@code --dry-run}): the host batch itself over the socket and back; checks every answer. */
    static Row hostPathDry(Options o, BufferAllocator allocator, int[] s) throws Exception {
        Path dir = Files.createTempDirectory("b10-dry");
        double[] t = new double[o.iterations() + 1];
        try (VectorSchemaRoot host = Batches.int64Root(allocator, s[0], s[1]);
             Watchdog w = Watchdog.watch("b-dry", o.timeoutSeconds());
             B10HostPath h = B10HostPath.start(o, allocator, dir, w)) {
            for (int i = 0; i < t.length; i++) {
                long t0 = System.nanoTime();
                VectorSchemaRoot back = h.roundTrip(host);
                t[i] = ms(System.nanoTime() - t0);
                B10HostPath.check("b-dry batch " + i, host, back, o.plusOne());
            }
        }
        return new Row("b-dry Arrow IPC stream over TCP loopback (host only)", String.format(Locale.ROOT,
                "%d x int64 x %d rows", s[0], s[1]), t[0], B10WorkerHandOff.warm(t), "dry run: no CUDA, not a result");
    }

    /** (c): {@code b10_ipc_floor.py} for every shape; its SAMPLES lines become rows. */
    static List<Row> floor(Options o) throws Exception {
        Path dir = Files.createTempDirectory("b10-floor");
        Path err = dir.resolve("floor.stderr");
        List<String> shapes = new ArrayList<>();
        for (int[] s : o.shapes()) {
            shapes.add(s[0] + "x" + s[1]);
        }
        Process p = null;
        try (Watchdog w = Watchdog.watch("c", o.timeoutSeconds())) {
            p = Children.start(List.of(o.python(), o.pythonDir().resolve("b10_ipc_floor.py").toString(), "--shapes",
                    String.join(",", shapes), "--iterations", Integer.toString(o.iterations()), "--timeout",
                    Integer.toString(o.timeoutSeconds())), err, o.pythonDir());
            w.guard(p);
            p.getOutputStream().close();
            List<Row> rows = B10WorkerHandOff.readSamples(p);
            Children.end(p, 30);
            if (p.exitValue() != 0 || rows.size() != 3 * shapes.size()) {
                throw new IllegalStateException("c: b10_ipc_floor.py exited with " + p.exitValue() + " after "
                        + rows.size() + " of " + 3 * shapes.size() + " results\nstderr:\n" + B10Support.tail(err, 40));
            }
            return rows;
        } finally {
            Children.end(p, 0);
        }
    }
}
