package org.devicebridge.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.bench.B10Support.Children;
import org.devicebridge.bench.B10Support.Row;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.TransferOptions;
import org.devicebridge.ipc.WorkerChannel;

/**
 * The worker hand-off benchmark (issue 31): JVM -> Python worker -> JVM per batch of int64 columns, a trivial
 * function on the worker ({@code plus_one}: +1 on the first column; or {@code identity}), warm (the worker
 * started and its first batch timed apart), median and p90 of {@code --iterations} batches:
 * <ul>
 *   <li>(a1) {@link WorkerChannel} round trip of the batch as an upload leaves it (stream-ordered pool memory,
 *       which the channel copies once into shareable memory per call: {@code copiedBytes} says how much);</li>
 *   <li>(a2) the same batch in {@code cuMemAlloc} memory ({@link B10DefaultAllocBatch}), shared zero-copy;</li>
 *   <li>(a3) the batch uploaded into the device's IPC-shareable pool ({@link TransferOptions#withIpcShareable}):
 *       the pool goes to the worker once over its socket, the batch zero-copy (where the driver cannot share a
 *       pool, the upload lands in the default pool and the row copies as (a1) does);</li>
 *   <li>(b) Spark's path today: download, Arrow IPC stream over a loopback socket to {@code b10_host_peer.py}
 *       (pyarrow reads, CuPy uploads every buffer, the function, downloads, an IPC stream back), upload;</li>
 *   <li>(c) the raw CUDA IPC floor, in Python alone ({@code b10_ipc_floor.py}), one direction.</li>
 * </ul>
 * Every phase runs under a time limit (its children killed when it expires), every child is ended on every path,
 * and the JVM exits with 0 when every phase passed, 1 otherwise. {@code --dry-run} runs (b)'s socket and IPC
 * stream plumbing on host memory only (no CUDA; the peer with {@code --no-cuda}, which needs only pyarrow).
 * Usage is in {@link #USAGE}.
 */
public final class B10WorkerHandOff {
    static final String USAGE = """
            B10WorkerHandOff [--python python3] [--python-dir bench/src/main/python] [--iterations 20]
                             [--shapes 16x1048576,8x1048576] [--only a1,a2,a3,b,c] [--function plus_one|identity]
                             [--timeout 300] [--dry-run]
            """;

    /** The command line. */
    record Options(String python, Path pythonDir, int iterations, List<int[]> shapes, Set<String> only,
                   String function, int timeoutSeconds, boolean dryRun) {
        static Options parse(String[] args) {
            String python = "python3";
            Path dir = Path.of("bench", "src", "main", "python");
            int iterations = 20;
            String shapes = "16x1048576,8x1048576";
            String only = "a1,a2,a3,b,c";
            String function = "plus_one";
            int timeout = 300;
            boolean dry = false;
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--dry-run")) {
                    dry = true;
                    continue;
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing the value of " + a + "\n" + USAGE);
                }
                String v = args[++i];
                switch (a) {
                    case "--python" -> python = v;
                    case "--python-dir" -> dir = Path.of(v);
                    case "--iterations" -> iterations = Integer.parseInt(v);
                    case "--shapes" -> shapes = v;
                    case "--only" -> only = v;
                    case "--function" -> function = v;
                    case "--timeout" -> timeout = Integer.parseInt(v);
                    default -> throw new IllegalArgumentException("unknown option " + a + "\n" + USAGE);
                }
            }
            if (!function.equals("plus_one") && !function.equals("identity")) {
                throw new IllegalArgumentException("--function: plus_one or identity, not " + function);
            }
            if (iterations < 1 || timeout < 1) {
                throw new IllegalArgumentException("--iterations and --timeout must be positive");
            }
            if (!Files.isRegularFile(dir.resolve("b10_host_peer.py"))) {
                throw new IllegalArgumentException("--python-dir " + dir.toAbsolutePath() + " does not hold"
                        + " b10_host_peer.py: run from the repository root or pass --python-dir");
            }
            List<int[]> parsed = new ArrayList<>();
            for (String s : shapes.split(",")) {
                String[] cr = s.trim().toLowerCase(Locale.ROOT).split("x");
                parsed.add(new int[] {Integer.parseInt(cr[0]), Integer.parseInt(cr[1])});
            }
            return new Options(python, dir, iterations, parsed, Set.of(only.split(",")), function, timeout, dry);
        }

        boolean plusOne() {
            return function.equals("plus_one");
        }
    }

    private B10WorkerHandOff() {}

    public static void main(String[] args) {
        int rc;
        try {
            rc = run(Options.parse(args));
        } catch (Throwable t) {
            System.err.println("[b10] FAILED: " + t);
            t.printStackTrace();
            rc = 2;
        } finally {
            Children.endAll();
        }
        System.out.flush();
        System.exit(rc); // the channel's threads are daemons, but nothing else may keep the JVM alive either
    }

    private static String shape(int[] s) {
        return String.format(Locale.ROOT, "%d x int64 x %d rows (%d MiB)", s[0], s[1], (long) s[0] * s[1] * 8 >> 20);
    }

    static int run(Options o) throws Exception {
        System.out.printf(Locale.ROOT, "[b10] python %s, scripts %s, %d warm iterations, function %s, limit %d s"
                + " per phase%s%n", o.python(), o.pythonDir().toAbsolutePath(), o.iterations(), o.function(),
                o.timeoutSeconds(), o.dryRun() ? ", DRY RUN (host only, no CUDA)" : "");
        List<Row> rows = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator()) {
            if (o.dryRun()) {
                for (int[] s : o.shapes()) {
                    phase("b-dry " + shape(s), failures, () -> rows.add(B10Phases.hostPathDry(o, allocator, s)));
                }
            } else {
                GpuSupport.requireCuda();
                try (CudaStream stream = CudaStream.create(Device.cuda(0));
                     HostDeviceTransfer transfer = HostDeviceTransfer.create(Device.cuda(0), 64L << 20)) {
                    for (int[] s : o.shapes()) {
                        deviceShape(o, allocator, stream, transfer, s, rows, failures);
                    }
                    stream.synchronize();
                }
                if (o.only().contains("c")) {
                    phase("c", failures, () -> rows.addAll(B10Phases.floor(o)));
                }
            }
        }
        B10Support.printTable(rows);
        printTargets(rows);
        if (!failures.isEmpty()) {
            System.out.println("\n[b10] phases that failed (their rows are missing):");
            failures.forEach(f -> System.out.println("  " + f));
            return 1;
        }
        return 0;
    }

    private static void deviceShape(Options o, BufferAllocator allocator, CudaStream stream, HostDeviceTransfer transfer,
                                    int[] s, List<Row> rows, List<String> failures) {
        try (VectorSchemaRoot host = Batches.int64Root(allocator, s[0], s[1]);
             CudaArrowBatch uploaded = CudaArrow.upload(host, DeviceCopies.of(transfer, stream))) {
            stream.synchronize();
            B10Phases.Device d = new B10Phases.Device(allocator, stream, transfer, host);
            if (o.only().contains("a1")) {
                phase("a1 " + shape(s), failures, () -> rows.add(B10Phases.handOff(o, d, uploaded, "a1 WorkerChannel,"
                        + " upload's pool memory", shape(s))));
            }
            if (o.only().contains("a2")) {
                phase("a2 " + shape(s), failures, () -> {
                    try (B10DefaultAllocBatch a2 = B10DefaultAllocBatch.copyOf(uploaded, host.getSchema(), stream,
                            transfer)) {
                        rows.add(B10Phases.handOff(o, d, a2.batch(), "a2 WorkerChannel, cuMemAlloc memory", shape(s)));
                    }
                });
            }
            if (o.only().contains("a3")) {
                phase("a3 " + shape(s), failures, () -> {
                    try (HostDeviceTransfer shareable = HostDeviceTransfer.create(Device.cuda(0),
                            TransferOptions.defaults().withStagingBytes(64L << 20).withIpcShareable(true));
                         CudaArrowBatch pooled = CudaArrow.upload(host, DeviceCopies.of(shareable, stream))) {
                        stream.synchronize();
                        rows.add(B10Phases.handOff(o, d, pooled, "a3 WorkerChannel, upload into the IPC-shareable pool",
                                shape(s)));
                    }
                });
            }
            if (o.only().contains("b")) {
                phase("b " + shape(s), failures, () -> rows.add(B10Phases.hostPath(o, d, uploaded, shape(s))));
            }
            stream.synchronize();
        }
    }

    @FunctionalInterface
    interface Body {
        void run() throws Exception;
    }

    /** Runs one phase; a failure is printed and recorded, and the next phase runs. */
    private static void phase(String name, List<String> failures, Body body) {
        System.out.println("[b10] phase " + name);
        try {
            body.run();
        } catch (Throwable t) {
            System.err.println("[b10] phase " + name + " FAILED: " + t);
            t.printStackTrace();
            failures.add(name + ": " + t);
        }
    }

    /** The targets beside the figures, per batch shape: (a) within 2x of (c) warm, (b) >= 50x (a). */
    private static void printTargets(List<Row> rows) {
        System.out.println("\nTargets (issue 31): (a) within 2x of (c) warm; (a) >= 50x faster than (b) at 1M rows."
                + " (a) and (b) are round trips, (c) one direction; medians compared.");
        for (Row a : rows) {
            if (!a.path().startsWith("a")) {
                continue;
            }
            for (Row other : rows) {
                if (!other.shape().equals(a.shape())) {
                    continue;
                }
                if (other.path().startsWith("c_open") || other.path().startsWith("c_cached")) {
                    double r = a.median() / other.median();
                    System.out.printf(Locale.ROOT, "  %s vs %s, %s: %.2fx%s%n", a.path(), other.path(), a.shape(), r,
                            other.path().startsWith("c_open") ? (r <= 2 ? "  (target met)" : "  (target MISSED)") : "");
                } else if (other.path().startsWith("b ")) {
                    double r = other.median() / a.median();
                    System.out.printf(Locale.ROOT, "  (b) / %s, %s: %.1fx faster%s%n", a.path(), a.shape(), r,
                            r >= 50 ? "  (target met)" : "  (target MISSED)");
                }
            }
        }
    }

    static double[] warm(double[] all) {
        return Arrays.copyOfRange(all, 1, all.length);
    }

    /** Reads {@code b10_ipc_floor.py}'s SAMPLES lines from {@code p}'s output. */
    static List<Row> readSamples(Process p) throws java.io.IOException {
        List<Row> rows = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                System.out.println("[b10] c: " + line);
                String[] f = line.trim().split(" ");
                if (f.length != 6 || !f[0].equals("SAMPLES")) {
                    continue;
                }
                int[] s = {Integer.parseInt(f[2]), Integer.parseInt(f[3])};
                double first = Double.parseDouble(f[4].substring("first=".length()));
                String w = f[5].substring("warm=".length());
                double[] warm = w.isEmpty() ? new double[0]
                        : Arrays.stream(w.split(",")).mapToDouble(Double::parseDouble).toArray();
                String note = switch (f[1]) {
                    case "c_open" -> "Python alone, one direction: open handles + event, wait, read, close";
                    case "c_cached" -> "Python alone, one direction: handles kept open; event, wait, read";
                    default -> "producer's view of c_open (send to answer over a pipe)";
                };
                rows.add(new Row(f[1] + " (c)", shape(s), first, warm, note));
            }
        }
        return rows;
    }

    static Duration timeout(Options o) {
        return Duration.ofSeconds(o.timeoutSeconds());
    }
}
