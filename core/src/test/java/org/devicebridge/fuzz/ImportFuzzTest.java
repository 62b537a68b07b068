package org.devicebridge.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.fuzz.MalformedArrow.Malformation;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * The fuzz run CI relies on: seeds {@code devicebridge.fuzz.start} (default 0) to {@code start + inputs - 1}
 * ({@code devicebridge.fuzz.inputs}, default 1,000,000), each seed in turn a random Arrow input, a
 * malformed-content Arrow input, a DLPack input and an Arrow stream input (seed mod 4), each checked by
 * {@link FuzzOracle}. The seeds are spread over {@code devicebridge.fuzz.threads} threads (default: one per
 * core), in blocks taken in order; an input depends on its seed only, never on the thread or the order.
 * The test FAILS unless every requested input ran: {@code devicebridge.fuzz.seconds} (default 1,200) is a
 * guard against a hang, not a budget. The threads work in rounds of one block each; after every round, while
 * no input is in flight, and at the end, {@link Fuzz#leakCheck()} must find exactly what the library held
 * before the first input: not one malloc block, arena, pinned or device allocation, handle or export more
 * or less. That exact count is the leak verdict; the C heap's growth ({@code mallinfo2}, which includes
 * the JVM's own) is only printed. The documented long run, on seeds CI does not use:
 * {@code -Ddevicebridge.fuzz.start=7340000000 -Ddevicebridge.fuzz.inputs=10000000
 * -Ddevicebridge.fuzz.seconds=100000}. Every failing seed is printed; add it to {@code fuzz-seeds/*.txt}
 * so that {@link FuzzSeedsTest} replays it.
 */
class ImportFuzzTest {
    /** Inputs before the C heap's figure is taken for the log line (JIT, class loading, upcall stubs settle first). */
    private static final long WARM_UP = 40_000;
    private static final String[] TARGETS = {"arrow ", "malformed ", "dlpack ", "stream "};
    private static final int BLOCK = 512;
    private static final System.Logger LOG = System.getLogger("org.devicebridge.fuzz");

    /** The seed each thread is on, in a mapped file that survives a JVM crash: {@code od -An -td8 core/target/fuzz-current-seed}. */
    private static ByteBuffer currentSeedFile(int threads) {
        try (FileChannel ch = FileChannel.open(Path.of("target", "fuzz-current-seed"), StandardOpenOption.CREATE,
                StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, 8L * threads).order(ByteOrder.LITTLE_ENDIAN);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static final MethodHandle MALLINFO2 = Linker.nativeLinker().defaultLookup().find("mallinfo2")
            .map(f -> Linker.nativeLinker().downcallHandle(f, FunctionDescriptor.of(
                    MemoryLayout.structLayout(MemoryLayout.sequenceLayout(10, ValueLayout.JAVA_LONG))))).orElse(null);

    /** Bytes malloc has handed out and not had back (glibc mallinfo2: uordblks + hblkhd), or -1 if unknown. */
    static long mallocInUse() {
        if (MALLINFO2 == null) {
            return -1;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment info = (MemorySegment) MALLINFO2.invokeExact((SegmentAllocator) a);
            return info.getAtIndex(ValueLayout.JAVA_LONG, 7) + info.getAtIndex(ValueLayout.JAVA_LONG, 4);
        } catch (Throwable t) {
            return -1;
        }
    }

    /** One fuzzing thread: its oracle (own allocator), outcome counts and failures. */
    private static final class Worker implements Runnable {
        final int index;
        final BufferAllocator allocator;
        final FuzzOracle oracle;
        final long[] accepted = new long[4];
        final long[] rejected = new long[4];
        final Shared shared;
        long done;

        Worker(int index, BufferAllocator allocator, Shared shared) {
            this.index = index;
            this.allocator = allocator;
            this.oracle = new FuzzOracle(allocator);
            this.shared = shared;
        }

        /** One block per round, then the round's barrier (whose action checks for leaks), until the run stops. */
        @Override
        public void run() {
            while (!shared.stop) {
                long from = shared.next.getAndAdd(BLOCK);
                if (from < shared.end) {
                    long to = Math.min(shared.end, from + BLOCK);
                    for (long seed = from; seed < to; seed++) {
                        one(seed);
                    }
                    shared.progress(to - from);
                }
                try {
                    shared.round.await();
                } catch (InterruptedException | java.util.concurrent.BrokenBarrierException e) {
                    shared.failures.add("fuzz thread " + index + " stopped: " + e);
                    return;
                }
            }
        }

        private void one(long seed) {
            int target = (int) Math.floorMod(seed, 4L);
            shared.current.putLong(8 * index, seed);
            try {
                FuzzOracle.Outcome o = switch (target) {
                    case 0 -> oracle.arrow(seed);
                    case 1 -> oracle.malformed(seed);
                    case 2 -> oracle.dlpack(seed);
                    default -> oracle.stream(seed);
                };
                if (o == FuzzOracle.Outcome.ACCEPTED) {
                    accepted[target]++;
                } else {
                    rejected[target]++;
                }
            } catch (Throwable t) {
                fail(target, seed, t);
            }
            done++;
        }

        private void fail(int target, long seed, Throwable t) {
            {
                shared.failures.add(TARGETS[target] + seed + ": " + t);
                synchronized (System.out) {
                    System.out.println("FUZZ FAILURE " + TARGETS[target] + seed);
                    t.printStackTrace(System.out);
                }
            }
        }
    }

    /** What the threads share: the next block of seeds, the failures, progress. */
    private static final class Shared {
        final AtomicLong next;
        final long end;
        final long deadline;
        final long t0 = System.nanoTime();
        final ByteBuffer current;
        final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        final AtomicLong done = new AtomicLong();
        final int maxFailures = Integer.getInteger("devicebridge.fuzz.maxFailures", 20);
        volatile long mallocAfterWarmUp = -1;
        final Fuzz.LeakCheck leaks = Fuzz.leakCheck();
        /** Every thread waits here after its block; the last one in checks for leaks and decides whether to go on. */
        final CyclicBarrier round;
        /** Set by the barrier's action, read by every thread after it: all stop in the same round. */
        volatile boolean stop;
        long rounds;

        Shared(long start, long inputs, long seconds, int threads) {
            next = new AtomicLong(start);
            end = start + inputs;
            deadline = t0 + seconds * 1_000_000_000L;
            current = currentSeedFile(threads);
            round = new CyclicBarrier(threads, this::endOfRound);
        }

        /** Runs while every thread waits: no input is in flight, so the library must hold exactly its baseline. */
        private void endOfRound() {
            rounds++;
            String held = leaks.outstanding();
            if (!held.isEmpty()) {
                failures.add(String.format(Locale.ROOT, "library allocations outstanding after round %d (seeds up to %d): %s",
                        rounds, Math.min(end, next.get()) - 1, held));
            }
            stop = next.get() >= end || failures.size() >= maxFailures || System.nanoTime() >= deadline;
        }

        void progress(long n) {
            long before = done.getAndAdd(n);
            long after = before + n;
            if (before < WARM_UP && after >= WARM_UP) {
                mallocAfterWarmUp = mallocInUse();
            }
            if (before / 100_000 != after / 100_000) {
                System.out.println(String.format(Locale.ROOT, "fuzz: %,d inputs, %.0f/s", after,
                        after / ((System.nanoTime() - t0) / 1e9)));
            }
        }
    }

    @Test
    void importersSurviveStructureAwareFuzzingWithExactReleaseCounts(TestReporter reporter) throws InterruptedException {
        long start = Long.getLong("devicebridge.fuzz.start", 0);
        long inputs = Long.getLong("devicebridge.fuzz.inputs", 1_000_000);
        long seconds = Long.getLong("devicebridge.fuzz.seconds", 1_200);
        int threads = Integer.getInteger("devicebridge.fuzz.threads", Runtime.getRuntime().availableProcessors());
        long handles = HandleTracker.liveHandles();
        long exports = ExportRegistry.outstandingExports();
        long failedReleases = HandleTracker.failedReleases();
        Shared shared = new Shared(start, inputs, seconds, threads);
        List<Worker> workers = new ArrayList<>();
        try (BufferAllocator root = new RootAllocator()) {
            List<Thread> running = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                Worker w = new Worker(i, root.newChildAllocator("fuzz-" + i, 0, Long.MAX_VALUE), shared);
                workers.add(w);
                Thread t = new Thread(w, "fuzz-" + i);
                t.start();
                running.add(t);
            }
            for (Thread t : running) {
                t.join();
            }
            System.gc();
            long mallocGrowth = shared.mallocAfterWarmUp < 0 ? 0 : mallocInUse() - shared.mallocAfterWarmUp;
            double secs = (System.nanoTime() - shared.t0) / 1e9;
            long done = 0;
            long[] accepted = new long[4];
            long[] rejected = new long[4];
            ArrowOracle.Stats stats = new ArrowOracle.Stats();
            for (Worker w : workers) {
                done += w.done;
                for (int t = 0; t < 4; t++) {
                    accepted[t] += w.accepted[t];
                    rejected[t] += w.rejected[t];
                }
                stats.add(w.oracle.arrow.stats);
                assertEquals(0, w.allocator.getAllocatedMemory(), "Arrow allocator of " + w.index);
                w.allocator.close();
            }
            String summary = String.format(Locale.ROOT,
                    "fuzz: %,d inputs (seeds %d..%d) on %d threads in %.1f s = %.0f inputs/s; arrow accepted %,d rejected %,d;"
                            + " malformed accepted %,d rejected %,d; dlpack accepted %,d rejected %,d; stream accepted %,d rejected %,d;"
                            + " arrow accepted nested %,d, with dictionaries %,d; Arrow Java bridge: at FULL loaded with right"
                            + " values %,d, declined (unsupported) %,d; at DEFAULT loaded with right values %,d, declined %,d,"
                            + " refused (validation) %,d; exported back and re-imported with the same values %,d, export"
                            + " unsupported %,d; right only under the other null-count convention %,d;"
                            + " leak checks (one per round, exact) %,d; C heap growth after warm-up (mallinfo2, includes"
                            + " the JVM's own; not a verdict) %,d bytes; failures %d",
                    done, start, start + done - 1, threads, secs, done / secs, accepted[0], rejected[0], accepted[1], rejected[1],
                    accepted[2], rejected[2], accepted[3], rejected[3], stats.acceptedNested, stats.acceptedDictionary,
                    stats.bridgeLoadedFull, stats.bridgeUnsupportedFull, stats.bridgeLoadedDefault,
                    stats.bridgeUnsupportedDefault, stats.bridgeRefusedDefault, stats.exportedBack, stats.exportUnsupported,
                    stats.nullCountConvention, shared.rounds, mallocGrowth,
                    shared.failures.size());
            StringBuilder table = new StringBuilder("fuzz: malformed inputs by row (inputs, also rejected below the row's level):");
            for (Map.Entry<Malformation, long[]> e : stats.malformations.entrySet()) {
                table.append(String.format(Locale.ROOT, "%n  %-34s %-8s %,9d %,9d", e.getKey(),
                        e.getKey().level == null ? "-" : e.getKey().level, e.getValue()[0], e.getValue()[1]));
            }
            System.out.println(summary);
            System.out.println(table);
            LOG.log(System.Logger.Level.INFO, summary);
            reporter.publishEntry("fuzz", summary);
            assertTrue(shared.failures.isEmpty(), () -> String.join("\n", shared.failures));
            assertEquals(inputs, done, () -> String.format(Locale.ROOT, "only %,d of the %,d requested inputs ran in %.0f s"
                    + " (devicebridge.fuzz.seconds=%d): %s", shared.done.get(), inputs, secs, seconds, summary));
            for (int t = 0; t < 4; t++) {
                int target = t;
                assertTrue(done < 1000 || (accepted[t] > 0 && rejected[t] > 0),
                        () -> "target " + TARGETS[target] + "must produce both accepted and rejected inputs: " + summary);
            }
            shared.leaks.verify("at the end of the run (seeds " + start + ".." + (start + done - 1) + ")");
        }
        assertEquals(handles, HandleTracker.liveHandles(), "live handles");
        assertEquals(exports, ExportRegistry.outstandingExports(), "outstanding exports");
        assertEquals(failedReleases, HandleTracker.failedReleases(), "failed releases");
    }
}
