package org.devicebridge.testing;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Prints every skipped or aborted test with its reason on the console. Surefire sends the tests' own
 * output to files ({@code redirectTestOutputToFile}), so this writes to the process's standard error
 * directly, which Surefire shows as it comes. Registered through
 * {@code META-INF/services/org.junit.platform.launcher.TestExecutionListener}.
 */
public final class SkipReasonPrinter implements TestExecutionListener {
    private static final PrintStream CONSOLE = new PrintStream(new FileOutputStream(FileDescriptor.err), true,
            StandardCharsets.UTF_8);

    @Override
    public void executionSkipped(TestIdentifier test, String reason) {
        CONSOLE.println("[SKIPPED] " + name(test) + ": " + reason);
    }

    @Override
    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
        if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
            CONSOLE.println("[SKIPPED] " + name(test) + ": " + result.getThrowable().map(Throwable::getMessage)
                    .orElse("aborted"));
        }
    }

    private static String name(TestIdentifier test) {
        String id = test.getUniqueId();
        int cls = id.indexOf("[class:");
        String where = cls < 0 ? "" : id.substring(cls + 7, id.indexOf(']', cls)).replaceFirst("^.*\\.", "") + ".";
        return where + test.getDisplayName();
    }
}
