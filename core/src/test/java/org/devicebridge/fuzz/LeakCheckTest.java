package org.devicebridge.fuzz;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.devicebridge.internal.Native;
import org.junit.jupiter.api.Test;

/** The fuzzers' leak verdict fails on one malloc block left behind, and passes once it is freed. */
class LeakCheckTest {
    @Test
    void oneBlockLeftBehindFailsTheCheckAndFreeingItPasses() {
        Fuzz.LeakCheck check = Fuzz.leakCheck();
        MemorySegment block = Native.malloc(16);
        try {
            AssertionError e = assertThrows(AssertionError.class, () -> check.verify("after the test's input"));
            assertTrue(e.getMessage().contains("after the test's input: 1 malloc block(s)"), e.getMessage());
        } finally {
            Native.free(block);
        }
        check.verify("after the free");
    }
}
