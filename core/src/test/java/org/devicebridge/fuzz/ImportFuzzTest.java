package org.devicebridge.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * The time-capped fuzz run: seeds from {@code devicebridge.fuzz.start} (default 0) upwards, in turn an
 * Arrow input (schema + array or device array), a DLPack input and an Arrow stream input (array or device
 * stream around an Arrow input), until {@code devicebridge.fuzz.inputs}
 * inputs (default 1,000,000) or {@code devicebridge.fuzz.seconds} seconds (default 600) - whichever comes
 * first. The documented long run: {@code -Ddevicebridge.fuzz.inputs=10000000 -Ddevicebridge.fuzz.seconds=100000}.
 * Every failing seed is printed; add it to {@code fuzz-seeds/*.txt} so that {@link FuzzSeedsTest} replays it.
 */
class ImportFuzzTest {
    /** Inputs before the native-memory baseline is taken (JIT, class loading, upcall stubs settle first). */
    private static final long WARM_UP = 20_000;
    /** Native growth tolerated after warm-up: JVM-internal noise; a leak of even 16 bytes per input exceeds it over 1M inputs. */
    private static final long MALLOC_SLACK = 16L << 20;
    private static final String[] TARGETS = {"arrow ", "dlpack ", "stream "};
    private static final System.Logger LOG = System.getLogger("org.devicebridge.fuzz");

    private static java.nio.ByteBuffer currentSeedFile() {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(
                java.nio.file.Path.of("target", "fuzz-current-seed"), java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            return ch.map(java.nio.channels.FileChannel.MapMode.READ_WRITE, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static final java.lang.invoke.MethodHandle MALLINFO2 = java.lang.foreign.Linker.nativeLinker().defaultLookup()
            .find("mallinfo2").map(f -> java.lang.foreign.Linker.nativeLinker().downcallHandle(f,
                    java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.MemoryLayout.structLayout(java.lang.foreign.MemoryLayout.sequenceLayout(10,
                            java.lang.foreign.ValueLayout.JAVA_LONG))))).orElse(null);

    /** Bytes malloc has handed out and not had back (glibc mallinfo2: uordblks + hblkhd), or -1 if unknown. */
    static long mallocInUse() {
        if (MALLINFO2 == null) {
            return -1;
        }
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment info = (java.lang.foreign.MemorySegment) MALLINFO2.invokeExact(
                    (java.lang.foreign.SegmentAllocator) a);
            return info.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 7) + info.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 4);
        } catch (Throwable t) {
            return -1;
        }
    }

    @Test
    void importersSurviveStructureAwareFuzzingWithExactReleaseCounts(TestReporter reporter) {
        long start = Long.getLong("devicebridge.fuzz.start", 0);
        long inputs = Long.getLong("devicebridge.fuzz.inputs", 1_000_000);
        long seconds = Long.getLong("devicebridge.fuzz.seconds", 600);
        long handles = HandleTracker.liveHandles();
        long exports = ExportRegistry.outstandingExports();
        long t0 = System.nanoTime();
        long deadline = t0 + seconds * 1_000_000_000L;
        long[] accepted = new long[3];
        long[] rejected = new long[3];
        List<String> failures = new ArrayList<>();
        long done = 0;
        long mallocAfterWarmUp = -1;
        // the current seed, in a mapped file that survives a JVM crash: od -An -td8 core/target/fuzz-current-seed
        java.nio.ByteBuffer current = currentSeedFile();
        try (BufferAllocator allocator = new RootAllocator()) {
            FuzzOracle oracle = new FuzzOracle(allocator);
            for (long seed = start; done < inputs && failures.size() < 20; seed++, done++) {
                if ((done & 255) == 0 && System.nanoTime() > deadline) {
                    break;
                }
                if (done == WARM_UP) {
                    mallocAfterWarmUp = mallocInUse();
                }
                int target = (int) Math.floorMod(seed, 3L);
                current.putLong(0, seed);
                try {
                    FuzzOracle.Outcome o = target == 0 ? oracle.arrow(seed) : target == 1 ? oracle.dlpack(seed) : oracle.stream(seed);
                    if (o == FuzzOracle.Outcome.ACCEPTED) {
                        accepted[target]++;
                    } else {
                        rejected[target]++;
                    }
                } catch (Throwable t) {
                    failures.add(TARGETS[target] + seed + ": " + t);
                    System.out.println("FUZZ FAILURE " + TARGETS[target] + seed);
                    t.printStackTrace(System.out);
                }
                if (done > 0 && done % 20_000 == 0) {
                    System.out.println(String.format(Locale.ROOT, "fuzz: %,d inputs, %.0f/s", done,
                            done / ((System.nanoTime() - t0) / 1e9)));
                }
            }
            System.gc();
            long mallocGrowth = mallocAfterWarmUp < 0 ? 0 : mallocInUse() - mallocAfterWarmUp;
            double secs = (System.nanoTime() - t0) / 1e9;
            String summary = String.format(Locale.ROOT,
                    "fuzz: %,d inputs (seeds %d..%d) in %.1f s = %.0f inputs/s; arrow accepted %,d rejected %,d;"
                            + " dlpack accepted %,d rejected %,d; stream accepted %,d rejected %,d; arrow accepted nested %,d, with dictionaries %,d; read through"
                            + " Arrow Java %,d, declined by it %,d, Arrow Java value-range limits %,d; malloc growth after"
                            + " warm-up %,d bytes; failures %d",
                    done, start, start + done - 1, secs, done / secs, accepted[0], rejected[0], accepted[1], rejected[1], accepted[2], rejected[2],
                    oracle.acceptedNested, oracle.acceptedDictionary, oracle.arrowJavaRead, oracle.arrowJavaDeclined,
                    oracle.arrowJavaValueLimits, mallocGrowth, failures.size());
            System.out.println(summary);
            LOG.log(System.Logger.Level.INFO, summary);
            reporter.publishEntry("fuzz", summary);
            assertTrue(failures.isEmpty(), () -> String.join("\n", failures));
            assertTrue(accepted[0] > 0 && rejected[0] > 0 && accepted[1] > 0 && rejected[1] > 0 && accepted[2] > 0 && rejected[2] > 0,
                    "the generators must produce both accepted and rejected inputs: " + summary);
            assertEquals(0, allocator.getAllocatedMemory());
            if (done >= 50 * WARM_UP) {
                assertTrue(mallocGrowth < MALLOC_SLACK, "native memory grew by " + mallocGrowth + " bytes: " + summary);
            }
        }
        assertEquals(handles, HandleTracker.liveHandles(), "live handles");
        assertEquals(exports, ExportRegistry.outstandingExports(), "outstanding exports");
    }
}
