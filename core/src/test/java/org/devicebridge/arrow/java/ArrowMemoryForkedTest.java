package org.devicebridge.arrow.java;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.devicebridge.probe.ArrowMemoryProbe;
import org.devicebridge.testing.JdkFlags;
import org.junit.jupiter.api.Test;

/**
 * The Arrow Java bridge on FFM memory as a user runs it, in a forked JVM with {@code arrow-vector},
 * {@code arrow-memory-core} and their dependencies only (no Netty jar, no {@code --add-opens}, no Netty
 * property): on the class path with nothing but the native-access flag, and on the module path with the one
 * {@code --add-opens} the default needs. Also: the typed errors when the call comes too late, or the
 * package is not open. Each case runs {@link ArrowMemoryProbe}.
 */
class ArrowMemoryForkedTest {
    private static final String NATIVE_CLASS_PATH = "--enable-native-access=ALL-UNNAMED";
    private static final String NATIVE_MODULES = "--enable-native-access=org.devicebridge.core,org.devicebridge.generated";
    private static final String OPENS = "--add-opens=org.apache.arrow.memory.core/org.apache.arrow.memory=org.devicebridge.core";

    @Test
    void theBridgeRunsOnTheClassPathWithoutNettyAndWithoutAnyArrowFlag() throws Exception {
        String out = run(List.of(NATIVE_CLASS_PATH, JdkFlags.DENY, "-cp",
                join(probeDir(), libraries(), arrowJars())), "bridge");
        assertTrue(out.contains("RESULT ok"), out);
        assertFalse(out.contains("Exception"), out);
    }

    @Test
    void installingAfterArrowJavaFailedToInitialiseIsTyped() throws Exception {
        String out = run(List.of(NATIVE_CLASS_PATH, "-cp", join(probeDir(), libraries(), arrowJars())), "late");
        assertTrue(out.contains("RESULT typed Arrow Java's BaseAllocator failed to initialise"), out);
    }

    @Test
    void theBridgeRunsOnTheModulePathWithOneAddOpens() throws Exception {
        String out = run(List.of(NATIVE_MODULES, JdkFlags.DENY, OPENS,
                "--module-path", join(libraries(), arrowJars()),
                "--add-modules", "org.devicebridge.core,org.apache.arrow.vector",
                "-cp", probeDir()), "bridge");
        assertTrue(out.contains("RESULT ok"), out);
        assertTrue(out.contains("module=org.devicebridge.core"), "ran as a named module: " + out);
        assertFalse(out.contains("Exception"), out);
    }

    @Test
    void onTheModulePathWithoutTheFlagTheErrorNamesIt() throws Exception {
        String out = run(List.of(NATIVE_MODULES, "--module-path", join(libraries(), arrowJars()),
                "--add-modules", "org.devicebridge.core,org.apache.arrow.vector", "-cp", probeDir()), "not-open");
        assertTrue(out.contains("RESULT typed") && out.contains(OPENS), out);
    }

    /** Runs the probe in a new JVM (the one running the tests), returns its stdout and stderr. */
    private static String run(List<String> jvmArgs, String mode) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(JdkFlags.taken(jvmArgs)); // --illegal-native-access=deny only where the JDK has it (24+)
        command.add(ArrowMemoryProbe.class.getName());
        command.add(mode);
        Path log = Files.createTempFile("arrow-memory-probe", ".log");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "probe timed out: " + command);
            String out = Files.readString(log, StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), String.join(" ", command) + "\n" + out);
            return out;
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** The test's class path (Surefire's manifest-only jar hides it in a property). */
    private static List<String> testClassPath() {
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        return Arrays.stream(cp.split(File.pathSeparator)).filter(s -> !s.isBlank()).toList();
    }

    /** Where the probe's class is: the test classes. */
    private static String probeDir() throws Exception {
        return Path.of(ArrowMemoryProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    /** devicebridge's two modules: core's classes (with their descriptor) and the generated bindings. */
    private static String libraries() throws Exception {
        String core = Path.of(ArrowMemory.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        String generated = testClassPath().stream()
                .filter(s -> s.contains("devicebridge-generated") || s.replace('\\', '/').endsWith("generated/target/classes"))
                .findFirst().orElseThrow(() -> new AssertionError("generated bindings not on " + testClassPath()));
        assertTrue(Files.exists(Path.of(core, "module-info.class")), "core's module descriptor is compiled");
        return core + File.pathSeparator + generated;
    }

    /** arrow-vector, arrow-memory-core and what they need; no Netty, no arrow-c-data, no test libraries. */
    private static String arrowJars() {
        List<String> wanted = List.of("arrow-vector-", "arrow-format-", "arrow-memory-core-", "flatbuffers-java-",
                "jackson-", "commons-codec-", "slf4j-api-", "slf4j-nop-");
        List<String> jars = testClassPath().stream()
                .filter(s -> wanted.stream().anyMatch(w -> Path.of(s).getFileName().toString().startsWith(w)))
                .toList();
        assertTrue(jars.stream().noneMatch(j -> j.contains("netty")), jars.toString());
        assertTrue(jars.stream().anyMatch(j -> j.contains("arrow-memory-core")), jars.toString());
        return String.join(File.pathSeparator, jars);
    }

    private static String join(String... parts) {
        return Arrays.stream(parts).collect(Collectors.joining(File.pathSeparator));
    }
}
