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
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each docs page that shows a program shows the compiled one verbatim (from its first import on), and the
 * program prints what the page promises.
 */
class DocProgramsTest {
    /** A page, the program it shows, the program's main, and what it prints. */
    record Page(String doc, String file, Main main, String output) {
        @Override
        public String toString() {
            return doc;
        }
    }

    @FunctionalInterface
    interface Main {
        void run(String[] args) throws Exception;
    }

    static Stream<Arguments> pages() {
        return Stream.of(
                new Page("docs/async-streams.md", "core/src/test/java/org/devicebridge/readme/AsyncStreams.java",
                        AsyncStreams::main, "schema: id\nid = 1, 2\nid = 3, 4\n"),
                new Page("docs/ffm.md", "core/src/test/java/org/devicebridge/readme/FfmOnly.java",
                        FfmOnly::main, "id[2] = 30\nnulls: 1\nmemory released: true\n"))
                .map(Arguments::of);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("pages")
    void theDocsBlockIsTheCompiledProgram(Page page) throws IOException {
        String doc = Files.readString(ReadmeQuickStartTest.repositoryRoot().resolve(page.doc()));
        Matcher m = Pattern.compile("<!-- program: " + Pattern.quote(page.file()) + " -->\\s*```java\\n(.*?)```",
                Pattern.DOTALL).matcher(doc);
        assertTrue(m.find(), "no program block for " + page.file() + " in " + page.doc());
        String file = Files.readString(ReadmeQuickStartTest.repositoryRoot().resolve(page.file()));
        assertEquals(file.substring(file.indexOf("\nimport ") + 1), m.group(1));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("pages")
    void theProgramPrintsWhatThePageSays(Page page) throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            page.main().run(new String[0]);
        } finally {
            System.setOut(out);
        }
        assertEquals(page.output(), captured.toString(StandardCharsets.UTF_8));
    }
}
