package org.devicebridge.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/**
 * The README's quick start is these three programs, verbatim: each ```java block follows a line
 * {@code <!-- quick start: core/src/test/java/org/devicebridge/readme/X.java -->} and must equal that file
 * from its first import on. Maven compiles the files; these tests run them.
 */
class ReadmeQuickStartTest {
    private static final Pattern BLOCK = Pattern.compile(
            "<!-- quick start: (\\S+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

    static Path repositoryRoot() {
        Path base = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath();
        return Files.exists(base.resolve("README.md")) ? base : base.getParent();
    }

    static Map<String, String> readmeBlocks() throws IOException {
        String readme = Files.readString(repositoryRoot().resolve("README.md"));
        Map<String, String> blocks = new LinkedHashMap<>();
        Matcher m = BLOCK.matcher(readme);
        while (m.find()) {
            blocks.put(m.group(1), m.group(2));
        }
        return blocks;
    }

    @Test
    void everyQuickStartBlockIsAProgramInTheTestTreeVerbatim() throws IOException {
        Map<String, String> blocks = readmeBlocks();
        assertEquals(3, blocks.size(), "quick start blocks found in README.md: " + blocks.keySet());
        for (Map.Entry<String, String> b : blocks.entrySet()) {
            String file = Files.readString(repositoryRoot().resolve(b.getKey()));
            String program = file.substring(file.indexOf("\nimport ") + 1);
            assertEquals(program, b.getValue(), b.getKey() + " and its README block differ");
        }
    }

    private static String run(Runnable main) {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            main.run();
        } finally {
            System.setOut(out);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void theArrowProgramReadsTheSecondIdAndRoundTripsThroughArrowJava() {
        String out = run(() -> QuickStartArrow.main(new String[0]));
        assertTrue(out.contains("id[1] = 20"), out);
        assertTrue(out.contains("id\n10\n20\nnull\n"), out);
    }

    @Test
    void theDLPackProgramReadsElementOneTwo() {
        String out = run(() -> QuickStartDLPack.main(new String[0]));
        assertTrue(out.contains("t[1][2] = 5.0"), out);
        assertEquals(3, out.split(Pattern.quote("t[1] = 1.0"), -1).length - 1, out);
    }

    @Test
    @RequiresCuda
    void theCudaProgramBringsEveryRowBack() {
        String out = run(() -> QuickStartCuda.main(new String[0]));
        assertTrue(out.contains("rows back from the GPU: 1000"), out);
    }
}
