package org.devicebridge.readme;

import org.devicebridge.testing.PythonProcess;
import static org.devicebridge.testing.PythonProcess.python;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/** docs/worker.md's program is {@link WorkerHandOff} verbatim, and (on a GPU, with CuPy) it runs. */
class WorkerHandOffTest {
    private static final Pattern BLOCK = Pattern.compile("<!-- program: (\\S+) -->\\s*```java\\n(.*?)```",
            Pattern.DOTALL);

    @Test
    void theGuidesProgramIsWorkerHandOffVerbatim() throws IOException {
        String doc = Files.readString(ReadmeQuickStartTest.repositoryRoot().resolve("docs/worker.md"));
        Matcher m = BLOCK.matcher(doc);
        assertTrue(m.find(), "docs/worker.md has a program block");
        String file = Files.readString(ReadmeQuickStartTest.repositoryRoot().resolve(m.group(1)));
        assertEquals(file.substring(file.indexOf("\nimport ") + 1), m.group(2));
    }

    @Test
    @RequiresCuda
    void theProgramBringsEveryRowBackFromAWorker() throws Exception {
        assumeTrue(PythonProcess.runs(PythonProcess.CUPY_WITH_GPU), python() + " has no CuPy with a GPU");
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            WorkerHandOff.main(new String[] {python()});
        } finally {
            System.setOut(out);
        }
        assertTrue(captured.toString(StandardCharsets.UTF_8).contains("rows back from the worker: 1000"),
                captured.toString(StandardCharsets.UTF_8));
    }
}
