package org.devicebridge.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.List;
import org.devicebridge.NativeHandle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/**
 * The leak check itself: a class that leaves a handle open fails, so does one whose handle's release throws
 * or during which the library logs an error (a failed callback); one that closes its handles passes.
 */
@AllowsLeaks("its fixtures fail releases on purpose, inside the test kit: the counts they raise are the point")
class NoLeaksExtensionTest {
    static NativeHandle left;

    /** Runs only inside EngineTestKit below, never as a test of its own. */
    static final class OnlyInTestKit implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return context.getConfigurationParameter(TESTKIT).isPresent()
                    ? ConditionEvaluationResult.enabled("inside the test kit")
                    : ConditionEvaluationResult.disabled("a fixture of NoLeaksExtensionTest");
        }
    }

    private static final String TESTKIT = "devicebridge.testkit";

    @ExtendWith(OnlyInTestKit.class)
    static class LeavesAHandleOpen {
        @Test
        void opensAndForgets() {
            left = new NativeHandle("deliberately unclosed handle", () -> { }) { };
        }
    }

    @ExtendWith(OnlyInTestKit.class)
    static class ClosesItsHandle {
        @Test
        void opensAndCloses() {
            try (NativeHandle h = new NativeHandle("closed handle", () -> { }) { }) {
                assertTrue(h.isLive());
            }
        }
    }

    @ExtendWith(OnlyInTestKit.class)
    static class FailsARelease {
        @Test
        void closesAHandleWhoseReleaseThrows() {
            new NativeHandle("handle with a failing release", () -> {
                throw new IllegalStateException("release failed on purpose");
            }) { }.close();
        }
    }

    @ExtendWith(OnlyInTestKit.class)
    static class LogsALibraryError {
        @Test
        void failsADeleter() {
            // a library callback that fails logs an error (it cannot throw into native code)
            org.devicebridge.dlpack.ExportedTensor e = org.devicebridge.dlpack.DLPack.exportVersioned(
                    org.devicebridge.dlpack.TensorSpec.of(java.lang.foreign.Arena.global().allocate(8),
                            org.devicebridge.dlpack.DType.UINT8, 8),
                    () -> {
                        throw new IllegalStateException("owner close failed on purpose");
                    });
            e.close();
        }
    }

    static java.lang.foreign.MemorySegment block;

    @ExtendWith(OnlyInTestKit.class)
    static class LeavesAMallocBlock {
        @Test
        void mallocsAndForgets() {
            block = org.devicebridge.internal.Native.malloc(40);
        }
    }

    @ExtendWith(OnlyInTestKit.class)
    static class KeepsABlockInAPool {
        @Test
        void mallocsAndPoolsIt() {
            block = org.devicebridge.internal.Native.malloc(40);
            org.devicebridge.internal.Native.kept(block); // as a pool keeps an idle block: the pool's, not a leak
        }
    }

    @ExtendWith(OnlyInTestKit.class)
    static class FreesItsBlock {
        @Test
        void mallocsAndFrees() {
            org.devicebridge.internal.Native.free(org.devicebridge.internal.Native.malloc(40));
        }
    }

    @AfterAll
    static void closeTheLeftHandle() {
        if (left != null) {
            left.close();
        }
    }

    @Test
    void aClassThatLeavesAHandleOpenFails() {
        List<Event> failures = EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .configurationParameter(TESTKIT, "true")
                .selectors(selectClass(LeavesAHandleOpen.class)).execute()
                .containerEvents().failed().list();
        assertTrue(failures.stream().anyMatch(e -> e.getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable)
                .map(t -> t.getMessage().contains("1 handle(s) left open")).orElse(false)), failures.toString());
        left.close();
    }

    @Test
    void aClassWhoseReleaseThrowsFails() {
        assertClassFailsWith(FailsARelease.class, "1 release step(s) threw");
    }

    @Test
    void aClassDuringWhichTheLibraryLogsAnErrorFails() {
        assertClassFailsWith(LogsALibraryError.class, "error(s) logged by the library");
    }

    private static void assertClassFailsWith(Class<?> fixture, String message) {
        List<Event> failures = EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .configurationParameter(TESTKIT, "true")
                .selectors(selectClass(fixture)).execute()
                .allEvents().failed().list();
        assertTrue(failures.stream().anyMatch(e -> e.getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable)
                .map(t -> t.getMessage().contains(message)).orElse(false)), failures.toString());
    }

    @Test
    void aTestThatLeavesAMallocBlockFails() {
        try {
            assertClassFailsWith(LeavesAMallocBlock.class, "left library allocations outstanding: 1 malloc block(s)");
        } finally {
            org.devicebridge.internal.Native.free(block);
        }
    }

    @Test
    void aTestWhosePoolKeepsABlockPassesAndFreeingItBalances() {
        org.devicebridge.internal.Allocations.Snapshot before = org.devicebridge.internal.Allocations.inUse();
        org.devicebridge.internal.Allocations.Snapshot pooledBefore = org.devicebridge.internal.Allocations.pooled();
        EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .configurationParameter(TESTKIT, "true")
                .selectors(selectClass(KeepsABlockInAPool.class)).execute()
                .containerEvents().assertStatistics(stats -> stats.failed(0));
        org.junit.jupiter.api.Assertions.assertEquals(1, org.devicebridge.internal.Allocations.pooled().minus(pooledBefore)
                .blocks(org.devicebridge.internal.Allocations.Kind.HEAP));
        org.devicebridge.internal.Native.reused(block);
        org.devicebridge.internal.Native.free(block);
        assertTrue(org.devicebridge.internal.Allocations.inUse().minus(before).isZero(),
                () -> org.devicebridge.internal.Allocations.inUse().minus(before).toString());
    }

    @Test
    void aTestThatFreesWhatItAllocatedPasses() {
        EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .configurationParameter(TESTKIT, "true")
                .selectors(selectClass(FreesItsBlock.class)).execute()
                .allEvents().assertStatistics(stats -> stats.failed(0).succeeded(3));
    }

    @Test
    void aClassThatClosesItsHandlesPasses() {
        EngineTestKit.engine("junit-jupiter")
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .configurationParameter(TESTKIT, "true")
                .selectors(selectClass(ClosesItsHandle.class)).execute()
                .containerEvents().assertStatistics(stats -> stats.failed(0));
    }
}
