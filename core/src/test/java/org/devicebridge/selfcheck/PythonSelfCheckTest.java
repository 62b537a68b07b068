package org.devicebridge.selfcheck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.python.PythonTesting;
import org.junit.jupiter.api.Test;

/** The self-check section reports the consumers it found and passes every exchange it runs. */
class PythonSelfCheckTest {

    @Test
    void reportsNumpyAndPassesEveryExchangeItRuns() {
        PythonTesting.runtimeWith("numpy");
        long liveBefore = HandleTracker.liveHandles();
        List<String> lines = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        List<String> checks = new ArrayList<>();
        new PythonSelfCheck().run(new SelfCheckSection.Report() {
            @Override
            public void line(String key, String value) {
                lines.add(key + ": " + value);
            }

            @Override
            public void check(String name, boolean passed, String detail) {
                checks.add(name);
                if (!passed) {
                    failures.add(name + ": " + detail);
                }
            }
        });
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("numpy: found ")), lines.toString());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("CPython: 3.")), lines.toString());
        assertTrue(checks.containsAll(List.of("numpy <- Java", "numpy -> Java")), checks.toString());
        assertEquals(List.of(), failures);
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
    }
}
