package org.devicebridge.testing;

import java.util.ArrayList;
import java.util.List;
import org.devicebridge.internal.Allocations;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Registered for every test class (service file + junit-platform.properties autodetection).
 *
 * <p>After each test: fails the test when the library holds more than before it ({@link Allocations#inUse()}:
 * malloc blocks and their bytes, the arenas it owns, pinned and device allocations, blocks lent by a pinned
 * pool, IPC mappings, live handles, unreleased exports), compared exactly with the counts taken before the
 * test's {@code @BeforeEach} methods ran. What a pool keeps idle (a thread's kept struct block, a host block
 * cache, a pinned pool's slabs) is the pool's, not in use, so a class may keep pools alive across its tests;
 * a block lent from a pool and not given back is in use.
 *
 * <p>After the class: fails the class when it leaves owning handles open or exports unreleased (compared with the counts before the
 * class ran), when the Cleaner had to release a handle that was never closed, or when a release failed:
 * a handle's release step threw ({@code HandleTracker.failedReleases}), a put-off release of a forgotten
 * handle never ran ({@code HandleTracker.pendingDeferredReleases}), or the library logged an error where it
 * swallows a failure it cannot throw - a release or deleter callback, a Cleaner action
 * ({@link CountingLoggerFinder}). Device memory is checked by the CUDA tests themselves (driver counters).
 * Tests that leak or fail releases on purpose restore the counts (e.g. by waiting for the Cleaner) or are
 * annotated {@link AllowsLeaks}.
 */
public final class NoLeaksExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
        AfterEachCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(NoLeaksExtension.class);

    private record Baseline(long liveHandles, long exports, long leaked, long failedReleases, long deferred, long errors) {}

    @Override
    public void beforeAll(ExtensionContext context) {
        context.getStore(NS).put("baseline", new Baseline(HandleTracker.liveHandles(),
                ExportRegistry.outstandingExports(), HandleTracker.leakedHandles(), HandleTracker.failedReleases(),
                HandleTracker.pendingDeferredReleases(), CountingLoggerFinder.libraryErrors()));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NS).put("inUse", Allocations.inUse());
    }

    @Override
    public void afterEach(ExtensionContext context) throws InterruptedException {
        if (context.getRequiredTestClass().isAnnotationPresent(AllowsLeaks.class)
                || context.getRequiredTestMethod().isAnnotationPresent(AllowsLeaks.class)) {
            return;
        }
        Allocations.Snapshot before = context.getStore(NS).get("inUse", Allocations.Snapshot.class);
        Allocations.Snapshot growth = Allocations.inUse().minus(before);
        // a release racing the end of the test (another thread, a native consumer) gets a moment
        for (int i = 0; i < 50 && growth.hasGrowth(); i++) {
            Thread.sleep(20);
            growth = Allocations.inUse().minus(before);
        }
        if (growth.hasGrowth()) {
            throw new AssertionError(context.getDisplayName() + " left library allocations outstanding: "
                    + growth.describe(true));
        }
    }

    @Override
    public void afterAll(ExtensionContext context) throws InterruptedException {
        if (context.getRequiredTestClass().isAnnotationPresent(AllowsLeaks.class)) {
            return;
        }
        Baseline before = context.getStore(NS).get("baseline", Baseline.class);
        List<String> problems = new ArrayList<>();
        // a release racing the end of the class (another thread, a native consumer) gets a moment
        for (int i = 0; i < 50 && (HandleTracker.liveHandles() > before.liveHandles()
                || ExportRegistry.outstandingExports() > before.exports()
                || HandleTracker.pendingDeferredReleases() > before.deferred()); i++) {
            Thread.sleep(20);
        }
        if (HandleTracker.liveHandles() > before.liveHandles()) {
            problems.add((HandleTracker.liveHandles() - before.liveHandles()) + " handle(s) left open");
        }
        if (ExportRegistry.outstandingExports() > before.exports()) {
            problems.add((ExportRegistry.outstandingExports() - before.exports()) + " export(s) never released");
        }
        if (HandleTracker.leakedHandles() > before.leaked()) {
            problems.add((HandleTracker.leakedHandles() - before.leaked()) + " handle(s) released by the Cleaner, never closed");
        }
        if (HandleTracker.failedReleases() > before.failedReleases()) {
            problems.add((HandleTracker.failedReleases() - before.failedReleases()) + " release step(s) threw");
        }
        if (HandleTracker.pendingDeferredReleases() > before.deferred()) {
            problems.add((HandleTracker.pendingDeferredReleases() - before.deferred())
                    + " put-off release(s) of forgotten handles never completed");
        }
        if (CountingLoggerFinder.libraryErrors() > before.errors()) {
            problems.add((CountingLoggerFinder.libraryErrors() - before.errors())
                    + " error(s) logged by the library (a failed release, deleter or cleanup), the last: "
                    + CountingLoggerFinder.lastError());
        }
        if (!problems.isEmpty()) {
            throw new AssertionError(context.getRequiredTestClass().getSimpleName() + " leaked: " + String.join("; ", problems));
        }
    }
}
