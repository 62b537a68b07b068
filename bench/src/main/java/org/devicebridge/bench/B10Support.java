package org.devicebridge.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * What {@link B10WorkerHandOff} needs besides the measured paths: the samples of one table row and their
 * statistics, the child processes it started (each ended on every path, and by a shutdown hook), and a watchdog
 * that ends a phase's children when the phase runs past its time limit (which turns a blocked read into an
 * error instead of a hung JVM).
 */
final class B10Support {
    private B10Support() {}

    /** One row of the table: what was measured, the first batch's time and the warm samples, in milliseconds. */
    record Row(String path, String shape, double firstMs, double[] warmMs, String note) {
        double median() {
            return percentile(50);
        }

        double p90() {
            return percentile(90);
        }

        /** Nearest-rank percentile of the warm samples; NaN without samples. */
        double percentile(int p) {
            if (warmMs.length == 0) {
                return Double.NaN;
            }
            double[] s = warmMs.clone();
            Arrays.sort(s);
            int rank = (int) Math.ceil(p / 100.0 * s.length);
            return s[Math.max(0, Math.min(s.length - 1, rank - 1))];
        }
    }

    static String ms(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%.3f", v);
    }

    static void printTable(List<Row> rows) {
        System.out.println();
        System.out.println("| path | batch | first batch (ms) | median (ms) | p90 (ms) | n | note |");
        System.out.println("|---|---|---:|---:|---:|---:|---|");
        for (Row r : rows) {
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %d | %s |%n", r.path(), r.shape(),
                    ms(r.firstMs()), ms(r.median()), ms(r.p90()), r.warmMs().length, r.note());
        }
    }

    /** The child processes started so far; each is ended on every path and by the JVM's shutdown hook. */
    static final class Children {
        private static final List<Process> LIVE = new CopyOnWriteArrayList<>();

        static {
            Runtime.getRuntime().addShutdownHook(new Thread(Children::endAll, "b10-end-children"));
        }

        private Children() {}

        /** Starts {@code command} with its stderr into {@code stderr}; the caller ends it with {@link #end}. */
        static Process start(List<String> command, Path stderr, Path pythonPath) throws IOException {
            ProcessBuilder pb = new ProcessBuilder(command).redirectError(stderr.toFile());
            if (pythonPath != null) {
                String old = pb.environment().get("PYTHONPATH");
                pb.environment().put("PYTHONPATH", pythonPath.toAbsolutePath()
                        + (old == null || old.isEmpty() ? "" : java.io.File.pathSeparator + old));
            }
            Process p = pb.start();
            LIVE.add(p);
            return p;
        }

        /** Waits up to {@code seconds} for {@code p} to exit by itself, then kills it; idempotent. */
        static void end(Process p, int seconds) {
            if (p == null) {
                return;
            }
            try {
                if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                    p.destroy();
                    if (!p.waitFor(5, TimeUnit.SECONDS)) {
                        p.destroyForcibly();
                        p.waitFor(10, TimeUnit.SECONDS);
                    }
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            LIVE.remove(p);
        }

        static void endAll() {
            for (Process p : LIVE) {
                p.destroyForcibly();
            }
        }
    }

    /** The last lines of a child's stderr, for an error message. */
    static String tail(Path file, int lines) {
        try {
            if (!Files.exists(file)) {
                return "(no stderr)";
            }
            List<String> all = Files.readAllLines(file);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | RuntimeException e) {
            return "(stderr unreadable: " + e + ")";
        }
    }

    /**
     * Ends what {@link #watch} names when a phase runs past its limit: a daemon thread that kills the phase's
     * children and closes its resources (sockets), so that whatever the phase waits on fails at once.
     */
    static final class Watchdog implements AutoCloseable {
        private final Thread thread;
        private final List<AutoCloseable> onExpiry = new CopyOnWriteArrayList<>();
        private volatile boolean expired;

        private Watchdog(String phase, int seconds) {
            thread = Thread.ofPlatform().daemon().name("b10-watchdog").unstarted(() -> {
                try {
                    Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
                } catch (InterruptedException e) {
                    return; // the phase ended in time
                }
                expired = true;
                System.err.printf(Locale.ROOT, "[b10] phase %s ran past its limit of %d s: ending its children%n",
                        phase, seconds);
                List<AutoCloseable> todo = new ArrayList<>(onExpiry);
                for (AutoCloseable c : todo) {
                    try {
                        c.close();
                    } catch (Exception ignored) {
                        // best effort: the phase fails on its own blocked call next
                    }
                }
            });
            thread.start();
        }

        static Watchdog watch(String phase, int seconds) {
            return new Watchdog(phase, seconds);
        }

        /** Kills {@code p} (and closes what else is registered) if the phase expires. */
        void guard(Process p) {
            onExpiry.add(p::destroyForcibly);
        }

        void guard(AutoCloseable c) {
            onExpiry.add(c);
        }

        boolean expired() {
            return expired;
        }

        @Override
        public void close() {
            thread.interrupt();
        }
    }
}
