package org.devicebridge.arrow.flight;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.probe.FlightProbe;
import org.junit.jupiter.api.BeforeAll;
import org.devicebridge.testing.JdkFlags;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Flight through devicebridge as a user runs it, in a forked JVM ({@link FlightProbe}: a loopback
 * {@code DoGet} and {@code DoPut} of host batches through {@link DeviceFlight} and {@link DeviceFlightClient},
 * on devicebridge's FFM allocation manager): on the class path; on the module path with devicebridge, Arrow
 * Java, {@code flight-core}, gRPC and Netty all there (gRPC's jars as automatic modules); and with devicebridge
 * and Arrow Java on the module path but Flight on the class path. The flags each needs are the README's
 * ("Class path and module path"). Two jars that Flight's own dependencies bring make the module path fail
 * before any code runs, for reasons outside this project; those failures are checked too, so that the README
 * stays true: {@code jsr305} (through {@code grpc-protobuf}) and {@code javax.annotation-api} (through
 * {@code flight-core}) both hold {@code javax.annotation}, and Arrow's Netty allocator
 * ({@code arrow-memory-netty-buffer-patch}) holds a package of {@code netty-buffer}.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class FlightModulePathForkedTest {
    private static final String NATIVE_MODULES = "--enable-native-access=org.devicebridge.core,org.devicebridge.generated";
    /** {@code ArrowMemory} sets Arrow Java's default allocation manager (a private field). */
    private static final String OPEN_MEMORY = "--add-opens=org.apache.arrow.memory.core/org.apache.arrow.memory=org.devicebridge.core";
    /** Flight writes Arrow IPC messages through {@code ArrowBuf.nioBuffer()}. */
    private static final String OPEN_NIO_MODULES = "--add-opens=java.base/java.nio=org.apache.arrow.memory.core";
    /** gRPC's Netty transport is an automatic module, which requires nothing: its Netty HTTP/2 codec is added by name. */
    private static final String MODULES = "org.devicebridge.core,org.apache.arrow.flight.core,io.netty.codec.http2";
    /** Arrow Java's jars (and theirs), which may go on the module path without Flight's. */
    private static final Predicate<String> ARROW_JAVA = jar -> startsWithAny(jar, "arrow-vector-", "arrow-format-",
            "arrow-memory-core-", "flatbuffers-java-", "jackson-", "commons-codec-", "slf4j-");
    /** Without Arrow's Netty allocator (the probe uses devicebridge's FFM one). */
    private static final Predicate<String> NO_NETTY_ALLOCATOR = jar -> !jar.startsWith("arrow-memory-netty-");
    /** One {@code javax.annotation} jar of the two: {@code jsr305} left out. */
    private static final Predicate<String> ONE_JAVAX_ANNOTATION = jar -> !jar.startsWith("jsr305-");
    private static final Predicate<String> MODULE_PATH = NO_NETTY_ALLOCATOR.and(ONE_JAVAX_ANNOTATION);

    @BeforeAll
    static void needsSurefiresTestClassPath() {
        assumeTrue(System.getProperty("surefire.test.class.path") != null,
                "needs the jar files Surefire puts on the test class path (property surefire.test.class.path):"
                        + " run it with mvn test, not the JUnit console launcher");
    }

    @Test
    void flightRunsOnTheClassPathWithTheNioOpensOnly() throws Exception {
        String out = run(List.of("--enable-native-access=ALL-UNNAMED", JdkFlags.DENY,
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "-cp", join(probeDir(), libraries(), join(flightJars(NO_NETTY_ALLOCATOR)))));
        assertTrue(out.contains("RESULT ok core=null flight=null grpc=null"), out);
        assertFalse(out.contains("Exception"), out);
    }

    @Test
    void flightRunsOnTheModulePathWithGrpcAsAutomaticModules() throws Exception {
        String out = run(List.of(NATIVE_MODULES, JdkFlags.DENY, OPEN_MEMORY, OPEN_NIO_MODULES,
                "--module-path", join(libraries(), join(flightJars(MODULE_PATH))),
                "--add-modules", MODULES, "-cp", probeDir()));
        assertTrue(out.contains("RESULT ok core=org.devicebridge.core flight=org.apache.arrow.flight.core grpc=io.grpc"),
                out);
        assertFalse(out.contains("Exception"), out);
    }

    @Test
    void devicebridgeOnTheModulePathReadsFlightOnTheClassPathWithAddReads() throws Exception {
        List<String> flags = List.of(NATIVE_MODULES, JdkFlags.DENY, OPEN_MEMORY, OPEN_NIO_MODULES,
                "--module-path", join(libraries(), join(flightJars(ARROW_JAVA))),
                "--add-modules", "org.devicebridge.core,org.apache.arrow.vector",
                "-cp", join(probeDir(), join(flightJars(ARROW_JAVA.negate().and(NO_NETTY_ALLOCATOR)))));
        String out = run(prepend("--add-reads=org.devicebridge.core=ALL-UNNAMED", flags));
        assertTrue(out.contains("RESULT ok core=org.devicebridge.core flight=null grpc=null"), out);

        String denied = runFailing(flags);
        assertTrue(denied.contains("IllegalAccessError") && denied.contains("does not read unnamed module"), denied);
    }

    @Test
    void bothJavaxAnnotationJarsOnTheModulePathStopTheJvmBeforeItStarts() throws Exception {
        String out = runFailing(List.of(NATIVE_MODULES, OPEN_MEMORY, OPEN_NIO_MODULES,
                "--module-path", join(libraries(), join(flightJars(NO_NETTY_ALLOCATOR))),
                "--add-modules", MODULES, "-cp", probeDir()));
        // the wording depends on the order the modules are resolved in; both name the two modules and the package
        assertTrue(out.contains("ResolutionException") && out.contains("package javax.annotation")
                && out.contains("jsr305") && out.contains("java.annotation"), out);
    }

    @Test
    void arrowsNettyAllocatorOnTheModulePathSplitsNettyBuffer() throws Exception {
        List<String> jars = flightJars(ONE_JAVAX_ANNOTATION);
        assertEquals(2, jars.stream().filter(j -> j.contains("arrow-memory-netty-")).count(), jars.toString());
        String out = runFailing(List.of(NATIVE_MODULES, OPEN_MEMORY, OPEN_NIO_MODULES,
                "--module-path", join(libraries(), join(jars)), "--add-modules", MODULES, "-cp", probeDir()));
        // the wording depends on the order the modules are resolved in; both name the two modules and the package
        assertTrue(out.contains("ResolutionException") && out.contains("package io.netty.buffer")
                && out.contains("arrow.memory.netty.buffer.patch") && out.contains("io.netty.buffer"), out);
    }

    private static List<String> prepend(String flag, List<String> flags) {
        List<String> all = new ArrayList<>();
        all.add(flag);
        all.addAll(flags);
        return all;
    }

    /** Runs the probe in a new JVM (the one running the tests); it must exit 0; returns its output. */
    private static String run(List<String> jvmArgs) throws IOException, InterruptedException {
        Run r = fork(jvmArgs);
        assertEquals(0, r.exit, r.command + "\n" + r.out);
        return r.out;
    }

    /** Runs the probe in a new JVM that must fail; returns its output. */
    private static String runFailing(List<String> jvmArgs) throws IOException, InterruptedException {
        Run r = fork(jvmArgs);
        assertTrue(r.exit != 0, "expected a failure: " + r.command + "\n" + r.out);
        return r.out;
    }

    private record Run(String command, int exit, String out) {}

    private static Run fork(List<String> jvmArgs) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(JdkFlags.taken(jvmArgs)); // --illegal-native-access=deny only where the JDK has it (24+)
        command.add(FlightProbe.class.getName());
        Path log = Files.createTempFile("flight-probe", ".log");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("probe timed out: " + command);
            }
            return new Run(String.join(" ", command), p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
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
        return Path.of(FlightProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
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

    /**
     * The jars of Arrow Java, {@code flight-core} and what they bring (gRPC, Netty, protobuf, Guava...) that
     * {@code keep} accepts by file name: the test's class path without devicebridge, the test libraries and
     * {@code arrow-c-data} (the tests' own producer and consumer).
     */
    private static List<String> flightJars(Predicate<String> keep) {
        List<String> jars = testClassPath().stream()
                .filter(s -> s.endsWith(".jar"))
                .filter(s -> {
                    String name = Path.of(s).getFileName().toString();
                    return !startsWithAny(name, "devicebridge-", "junit-", "assertj-", "byte-buddy", "opentest4j-",
                            "apiguardian-", "arrow-c-data-") && keep.test(name);
                })
                .toList();
        assertFalse(jars.isEmpty(), "no jar on " + testClassPath());
        return jars;
    }

    private static boolean startsWithAny(String name, String... prefixes) {
        return Arrays.stream(prefixes).anyMatch(name::startsWith);
    }

    private static String join(List<String> parts) {
        return String.join(File.pathSeparator, parts);
    }

    private static String join(String... parts) {
        return String.join(File.pathSeparator, parts);
    }
}
