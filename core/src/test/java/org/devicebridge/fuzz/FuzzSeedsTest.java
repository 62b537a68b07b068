package org.devicebridge.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Replays every seed that ever failed the fuzz oracle (core/src/test/resources/fuzz-seeds/arrow.txt,
 * malformed.txt, dlpack.txt and stream.txt: one seed a line, {@code #} starts a comment saying what it
 * broke), plus a fixed slice of seeds, so that a regression shows up in the normal fast test run. Every
 * failure fails it, as in {@link ImportFuzzTest}: nothing is tolerated.
 */
class FuzzSeedsTest {
    private static BufferAllocator allocator;
    private static FuzzOracle oracle;

    @BeforeAll
    static void open() {
        allocator = new RootAllocator();
        oracle = new FuzzOracle(allocator);
    }

    @AfterAll
    static void close() {
        allocator.close();
    }

    static Stream<Arguments> seeds() throws IOException {
        List<Arguments> all = new ArrayList<>();
        for (String target : new String[] {"arrow", "malformed", "dlpack", "stream"}) {
            for (String line : lines("/fuzz-seeds/" + target + ".txt")) {
                String s = line.replaceFirst("#.*", "").trim();
                if (!s.isEmpty()) {
                    all.add(Arguments.of(target, Long.parseLong(s), line.contains("#") ? line.substring(line.indexOf('#') + 1).trim() : ""));
                }
            }
        }
        return all.stream();
    }

    private static List<String> lines(String resource) throws IOException {
        try (InputStream in = Objects.requireNonNull(FuzzSeedsTest.class.getResourceAsStream(resource), resource);
             BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            return r.lines().toList();
        }
    }

    @ParameterizedTest(name = "{0} seed {1}: {2}")
    @MethodSource("seeds")
    void seedThatOnceFailedPassesTheOracle(String target, long seed, String what) {
        switch (target) {
            case "arrow" -> oracle.arrow(seed);
            case "malformed" -> oracle.malformed(seed);
            case "dlpack" -> oracle.dlpack(seed);
            default -> oracle.stream(seed);
        }
        assertEquals(0, allocator.getAllocatedMemory());
    }

    @ParameterizedTest(name = "first {0} seeds of both targets")
    @MethodSource("slice")
    void aFixedSliceOfSeedsPassesTheOracleWithBothOutcomes(int count) {
        int[] outcomes = new int[8];
        for (long seed = 0; seed < count; seed++) {
            for (int target = 0; target < 4; target++) {
                FuzzOracle.Outcome o = switch (target) {
                    case 0 -> oracle.arrow(seed);
                    case 1 -> oracle.malformed(seed);
                    case 2 -> oracle.dlpack(seed);
                    default -> oracle.stream(seed);
                };
                outcomes[2 * target + o.ordinal()]++;
            }
        }
        for (int o : outcomes) {
            assertFalse(o == 0, "every target must both accept and reject some inputs: " + java.util.Arrays.toString(outcomes));
        }
    }

    static Stream<Integer> slice() {
        return Stream.of(1000);
    }
}
