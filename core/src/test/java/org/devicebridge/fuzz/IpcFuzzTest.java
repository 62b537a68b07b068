package org.devicebridge.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.ValidationException;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.ipc.IpcParsing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * The IPC fuzz run CI relies on: seeds {@code devicebridge.fuzz.start} (default 0) to {@code start + inputs - 1}
 * ({@code devicebridge.fuzz.inputs}, default 1,000,000; the same properties as {@link ImportFuzzTest}), each
 * seed in turn a batch descriptor, a tensor descriptor and a schema message (seed mod 3) from {@link IpcFuzz},
 * read as {@code IpcImport.importBatch} and {@code IpcImport.importTensor} read them before opening any handle
 * (no CUDA driver needed). Spread over {@code devicebridge.fuzz.threads} threads (default: one per core) in
 * blocks; an input depends on its seed only.
 *
 * <p>Oracle, per input: a {@link ValidationException} or another subclass of the library's exception (never
 * its bare base class), or a result that reads back equal from its own JSON (schema: from its own message);
 * an unmutated input accepted; never any other exception or error ({@link OutOfMemoryError},
 * {@link StackOverflowError} included); at most {@link #ALLOCATION_CAP} bytes allocated by the thread for one
 * input; no input running past {@code devicebridge.fuzz.inputMillis} (default 10,000: a hang guard, not a
 * budget). After the run, the library holds exactly what it held before ({@link Fuzz#leakCheck()}: malloc
 * blocks, arenas, pinned and device memory, handles, exports). The test FAILS unless every requested input ran. Every failing seed is printed with its mutations.
 */
class IpcFuzzTest {
    /** Bytes one input may make its thread allocate: far above what the caps let any input cost. */
    static final long ALLOCATION_CAP = 64L << 20;
    private static final String[] TARGETS = {"batch", "tensor", "schema"};
    private static final int BLOCK = 1024;
    /** The JDK's per-thread allocation counter (found reflectively: the test module does not read jdk.management). */
    private static final Object THREAD_BEAN;
    private static final Method ALLOCATED;

    static {
        try {
            THREAD_BEAN = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            ALLOCATED = Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes");
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static long allocatedBytes() {
        try {
            return (long) ALLOCATED.invoke(THREAD_BEAN);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("the JDK's allocation counter", e);
        }
    }

    /** Runs one seed; {@return whether its input was accepted}; throws on an oracle violation. */
    static boolean one(long seed) {
        int target = (int) Math.floorMod(seed, 3L);
        SplittableRandom r = new SplittableRandom(seed);
        IpcFuzz.Input in = switch (target) {
            case 0 -> IpcFuzz.batch(r);
            case 1 -> IpcFuzz.tensor(r);
            default -> IpcFuzz.schema(r);
        };
        long allocated = allocatedBytes();
        boolean accepted;
        try {
            accepted = switch (target) {
                case 0 -> batch(in.json());
                case 1 -> tensor(in.json());
                default -> schema(in.schema());
            };
        } catch (DeviceBridgeException e) {
            if (e.getClass() == DeviceBridgeException.class || e.getMessage() == null || e.getMessage().isEmpty()) {
                throw failure(seed, in, "threw the untyped base exception or no message", e);
            }
            if (!in.mutated()) {
                throw failure(seed, in, "refused an unmutated input", e);
            }
            accepted = false;
        } catch (Throwable t) {
            throw failure(seed, in, "threw outside the library's hierarchy", t);
        }
        long used = allocatedBytes() - allocated;
        if (used > ALLOCATION_CAP) {
            throw failure(seed, in, "allocated " + used + " bytes for one input", null);
        }
        return accepted;
    }

    private static boolean batch(String json) {
        IpcParsing.readBatch(json);
        return true;
    }

    private static boolean tensor(String json) {
        IpcParsing.readTensor(json);
        return true;
    }

    private static boolean schema(byte[] message) {
        SchemaNode type = IpcParsing.schema(message);
        SchemaNode again = IpcParsing.schema(IpcParsing.serialize(type));
        if (!IpcParsing.field(type).equals(IpcParsing.field(again))) {
            throw new AssertionError("read back differently from its own message: " + IpcParsing.field(type));
        }
        return true;
    }

    private static AssertionError failure(long seed, IpcFuzz.Input in, String what, Throwable cause) {
        String shown = in.json() != null ? (in.json().length() > 600 ? in.json().substring(0, 600) + "..." : in.json())
                : in.schema().length + " bytes";
        return new AssertionError(TARGETS[(int) Math.floorMod(seed, 3L)] + " seed " + seed + " [" + in.mutations().trim()
                + "] " + what + (cause == null ? "" : ": " + cause) + "\n  input: " + shown, cause);
    }

    /** One fuzzing thread's counts. */
    private static final class Worker implements Runnable {
        final long[] accepted = new long[3];
        final long[] rejected = new long[3];
        long done;
        long slowest;
        final Shared shared;

        Worker(Shared shared) {
            this.shared = shared;
        }

        @Override
        public void run() {
            while (shared.failures.size() < 20 && System.nanoTime() < shared.deadline) {
                long from = shared.next.getAndAdd(BLOCK);
                if (from >= shared.end) {
                    return;
                }
                for (long seed = from; seed < Math.min(shared.end, from + BLOCK); seed++) {
                    long t0 = System.nanoTime();
                    int target = (int) Math.floorMod(seed, 3L);
                    try {
                        if (one(seed)) {
                            accepted[target]++;
                        } else {
                            rejected[target]++;
                        }
                    } catch (Throwable t) {
                        shared.failures.add(String.valueOf(t.getMessage()));
                        synchronized (System.out) {
                            System.out.println("IPC FUZZ FAILURE " + TARGETS[target] + " " + seed);
                            t.printStackTrace(System.out);
                        }
                    }
                    long ns = System.nanoTime() - t0;
                    slowest = Math.max(slowest, ns);
                    if (ns > shared.inputNanos) {
                        shared.failures.add(TARGETS[target] + " seed " + seed + " ran " + ns / 1_000_000 + " ms");
                    }
                    done++;
                }
            }
        }
    }

    private static final class Shared {
        final AtomicLong next;
        final long end;
        final long deadline;
        final long inputNanos = Long.getLong("devicebridge.fuzz.inputMillis", 10_000) * 1_000_000L;
        final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();

        Shared(long start, long inputs, long seconds) {
            next = new AtomicLong(start);
            end = start + inputs;
            deadline = System.nanoTime() + seconds * 1_000_000_000L;
        }
    }

    @Test
    void ipcInputsAreTypedAndBoundedUnderStructureAwareFuzzing(TestReporter reporter) throws InterruptedException {
        long start = Long.getLong("devicebridge.fuzz.start", 0);
        long inputs = Long.getLong("devicebridge.fuzz.inputs", 1_000_000);
        long seconds = Long.getLong("devicebridge.fuzz.seconds", 1_200);
        int threads = Integer.getInteger("devicebridge.fuzz.threads", Runtime.getRuntime().availableProcessors());
        Fuzz.LeakCheck leaks = Fuzz.leakCheck();
        long t0 = System.nanoTime();
        Shared shared = new Shared(start, inputs, seconds);
        List<Worker> workers = new ArrayList<>();
        List<Thread> running = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Worker w = new Worker(shared);
            workers.add(w);
            Thread t = new Thread(w, "ipc-fuzz-" + i);
            t.start();
            running.add(t);
        }
        for (Thread t : running) {
            t.join();
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        long done = 0;
        long slowest = 0;
        long[] accepted = new long[3];
        long[] rejected = new long[3];
        for (Worker w : workers) {
            done += w.done;
            slowest = Math.max(slowest, w.slowest);
            for (int t = 0; t < 3; t++) {
                accepted[t] += w.accepted[t];
                rejected[t] += w.rejected[t];
            }
        }
        String summary = String.format(Locale.ROOT, "ipc fuzz: %,d inputs (seeds %d..%d) on %d threads in %.1f s ="
                        + " %.0f inputs/s; batch accepted %,d rejected %,d; tensor accepted %,d rejected %,d; schema"
                        + " accepted %,d rejected %,d; slowest input %.1f ms; failures %d", done, start, start + done - 1,
                threads, secs, done / secs, accepted[0], rejected[0], accepted[1], rejected[1], accepted[2], rejected[2],
                slowest / 1e6, shared.failures.size());
        System.out.println(summary);
        reporter.publishEntry("ipc-fuzz", summary);
        assertTrue(shared.failures.isEmpty(), () -> String.join("\n", shared.failures));
        long ran = done;
        assertEquals(inputs, ran, () -> "only " + ran + " of the " + inputs + " requested inputs ran: " + summary);
        for (int t = 0; t < 3; t++) {
            int target = t;
            assertTrue(done < 1000 || (accepted[t] > 0 && rejected[t] > 0),
                    () -> "target " + TARGETS[target] + " must produce both accepted and rejected inputs: " + summary);
        }
        leaks.verify("after seeds " + start + ".." + (start + done - 1));
    }
}
