package org.devicebridge.generated;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * generated/ is an artifact of headers/: this test recomputes the SHA-256 of every input (headers,
 * jextract argument files, the regenerate script) and of every generated file, and compares them with
 * generated/jextract.stamp, which headers/regenerate.sh wrote. A changed header without a regeneration,
 * or a hand edit of generated code, fails here.
 */
class GeneratedBindingsAreCurrentTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final Path STAMP = ROOT.resolve("generated/jextract.stamp");

    @Test
    void stampNamesTheJextractThatRan() throws IOException {
        List<String> lines = Files.readAllLines(STAMP);
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("jextract: jextract ")),
                "jextract.stamp records no jextract version");
    }

    @Test
    void everyInputIsUnchangedSinceRegeneration() throws IOException {
        Map<String, String> recorded = recorded("input");
        assertFalse(recorded.isEmpty(), "jextract.stamp lists no inputs");
        Map<String, String> actual = new TreeMap<>();
        try (Stream<Path> files = Files.list(ROOT.resolve("headers"))) {
            files.filter(p -> {
                String n = p.getFileName().toString();
                return n.endsWith(".h") || n.endsWith(".jextract") || n.equals("regenerate.sh");
            }).forEach(p -> actual.put(ROOT.relativize(p).toString(), sha256(p)));
        }
        assertEquals(recorded, actual, "headers/ changed since generated/ was regenerated: run "
                + "headers/regenerate.sh (JEXTRACT=/path/to/jextract) and commit both together");
    }

    @Test
    void everyGeneratedFileIsAsJextractWroteIt() throws IOException {
        Map<String, String> recorded = recorded("output");
        assertFalse(recorded.isEmpty(), "jextract.stamp lists no outputs");
        Map<String, String> actual = new TreeMap<>();
        for (String dir : new String[] {"generated/src/main/java", "generated/src/main/jpms"}) {
            try (Stream<Path> files = Files.walk(ROOT.resolve(dir))) {
                files.filter(Files::isRegularFile).forEach(p -> actual.put(ROOT.relativize(p).toString(), sha256(p)));
            }
        }
        try (Stream<Path> files = Files.walk(ROOT.resolve("generated/src/main/jpms"))) {
            files.filter(Files::isRegularFile).forEach(p -> actual.put(ROOT.relativize(p).toString(), sha256(p)));
        }
        assertEquals(recorded, actual, "generated/src/main/java differs from what headers/regenerate.sh "
                + "wrote (a hand edit, or a file added or removed): regenerate instead of editing");
    }

    private static Map<String, String> recorded(String kind) throws IOException {
        Map<String, String> map = new TreeMap<>();
        for (String line : Files.readAllLines(STAMP)) {
            String[] parts = line.split(" ", 3);
            if (parts.length == 3 && parts[0].equals(kind)) {
                map.put(parts[2], parts[1]);
            }
        }
        return map;
    }

    private static String sha256(Path p) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
