package org.devicebridge.readme;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** docs/ffm.md shows {@link FfmOnly} verbatim (from its first import on); this runs it. */
class FfmOnlyDocTest {
    private static final String FILE = "core/src/test/java/org/devicebridge/readme/FfmOnly.java";

    @Test
    void theDocsBlockIsTheCompiledProgram() throws IOException {
        String doc = Files.readString(ReadmeQuickStartTest.repositoryRoot().resolve("docs/ffm.md"));
        Matcher m = Pattern.compile("<!-- program: " + Pattern.quote(FILE) + " -->\\s*```java\\n(.*?)```",
                Pattern.DOTALL).matcher(doc);
        assertTrue(m.find(), "no program block for " + FILE + " in docs/ffm.md");
        String file = Files.readString(ReadmeQuickStartTest.repositoryRoot().resolve(FILE));
        assertEquals(file.substring(file.indexOf("\nimport ") + 1), m.group(1));
    }

    @Test
    void theProgramViewsExportsAndReleasesTheColumnOnce() throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            FfmOnly.main(new String[0]);
        } finally {
            System.setOut(out);
        }
        assertEquals("id[2] = 30\nnulls: 1\nmemory released: true\n", captured.toString(StandardCharsets.UTF_8));
    }
}
