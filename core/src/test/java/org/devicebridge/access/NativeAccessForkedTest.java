package org.devicebridge.access;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.devicebridge.NativeHandle;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.testing.JdkFlags;
import org.junit.jupiter.api.Test;

/**
 * Native access and optional dependencies, each in a JVM of its own ({@link AccessChild}): on the class path and
 * on the module path (built from {@code target/classes} of {@code generated} and {@code core}), with
 * {@code --illegal-native-access=deny} and no grant, half a grant, and the full grant; and without Arrow Java or
 * without Arrow Flight.
 * Every entry point, on its first call and on its second, throws {@code NativeAccessException} naming the exact
 * flag where access is denied, and never an {@code ExceptionInInitializerError} or {@code NoClassDefFoundError}.
 */
class NativeAccessForkedTest {
    private static final String CLASS_PATH_FLAG = "--enable-native-access=ALL-UNNAMED";
    private static final String MODULE_PATH_FLAG = "--enable-native-access=org.devicebridge.core,org.devicebridge.generated";
    private static final String DENY = JdkFlags.DENY;

    /** Entry points that may reach native code (they all check native access first). */
    private static final List<String> NATIVE = List.of("arrowStructs", "arrowImport", "dlpack", "cuda", "pinned",
            "python", "arrowExport", "arrowJavaImport", "dlpackArrow", "cudaArrowDownload",
            "arrowMemory", "arrowMemoryRoot", "arrowMemoryFactory", "pooledArrowMemory", "pinnedArrowMemory");
    /** Entry points that never throw: the value types, and the availability queries. */
    private static final List<String> QUERIES = List.of("values", "cudaAvailable", "pythonAvailable");
    /** Entry points that need Arrow Java. */
    private static final List<String> ARROW_JAVA = List.of("arrowExport", "arrowJavaImport", "dlpackArrow",
            "cudaArrowDownload", "arrowMemory", "arrowMemoryRoot", "arrowMemoryFactory",
            "pooledArrowMemory", "pinnedArrowMemory");
    /** Entry points that need Arrow Java but never native code: only Arrow Java is checked. */
    private static final List<String> ARROW_JAVA_ONLY = List.of("arrowMemoryLive", "pinnedIsPinned");
    /** Flight's entry points: every static one of DeviceFlight and DeviceFlightClient. */
    private static final List<String> FLIGHT = List.of("deviceFlightServe", "deviceFlightServeRoots",
            "deviceFlightSend", "deviceFlightSendRoots", "deviceFlightReceive", "deviceFlightReceiveRoots",
            "deviceFlightClient");

    @Test
    void onTheClassPathWithoutAGrantEveryEntryPointThrowsNativeAccessExceptionNamingTheClassPathFlagEveryTime()
            throws Exception {
        assumeTrue(JdkFlags.canDeny(), "only JDK 24+ can deny native access (--illegal-native-access)");
        Map<String, String> out = run(List.of(DENY, "-cp", classPath(true)), FLIGHT.toArray(String[]::new));
        assertDenied(out, CLASS_PATH_FLAG);
        assertTypedEveryTime(out, FLIGHT, "NativeAccessException: ", CLASS_PATH_FLAG);
    }

    @Test
    void onTheClassPathWithTheGrantNoEntryPointThrowsNativeAccessExceptionOrAnError() throws Exception {
        Map<String, String> out = run(List.of(CLASS_PATH_FLAG, DENY, "-cp", classPath(true)));
        assertGranted(out);
        assertEquals("OK 7.0", out.get("dlpack #1"), out.toString());
    }

    @Test
    void onTheModulePathWithoutAGrantEveryEntryPointThrowsNativeAccessExceptionNamingTheModulePathFlag()
            throws Exception {
        assumeTrue(JdkFlags.canDeny(), "only JDK 24+ can deny native access (--illegal-native-access)");
        Map<String, String> out = run(modulePath(DENY));
        assertDenied(out, MODULE_PATH_FLAG);
    }

    @Test
    void onTheModulePathAGrantForCoreAloneIsRefusedWithTheFullFlag() throws Exception {
        assumeTrue(JdkFlags.canDeny(), "only JDK 24+ can deny native access (--illegal-native-access)");
        Map<String, String> out = run(modulePath("--enable-native-access=org.devicebridge.core", DENY));
        assertDenied(out, MODULE_PATH_FLAG);
    }

    @Test
    void onTheModulePathWithTheGrantDLPackWorksAndArrowJavaIsReportedMissing() throws Exception {
        Map<String, String> out = run(modulePath(MODULE_PATH_FLAG, DENY), FLIGHT.toArray(String[]::new));
        assertGranted(out);
        assertEquals("OK 7.0", out.get("dlpack #0"), out.toString());
        for (String s : concat(ARROW_JAVA, FLIGHT)) {
            for (int i = 0; i < 2; i++) {
                String line = out.get(s + " #" + i);
                assertTrue(line.startsWith("ArrowJavaUnavailableException: ") && line.contains("org.apache.arrow:arrow-vector")
                        && line.contains("--add-modules org.apache.arrow.vector"), s + " #" + i + ": " + line);
            }
        }
    }

    @Test
    void onTheClassPathWithoutArrowJavaEntryPointsThatNeedItSaySoAndTheOthersWork() throws Exception {
        List<String> args = new ArrayList<>(List.of(CLASS_PATH_FLAG, DENY, "-cp", classPath(false)));
        Map<String, String> out = run(args, "cudaArrowImport", ARROW_JAVA_ONLY.get(0), ARROW_JAVA_ONLY.get(1));
        assertGranted(out);
        assertEquals("OK 7.0", out.get("dlpack #0"), out.toString());
        for (String s : concat(ARROW_JAVA, ARROW_JAVA_ONLY)) {
            for (int i = 0; i < 2; i++) {
                String line = out.get(s + " #" + i);
                assertTrue(line.startsWith("ArrowJavaUnavailableException: ") && line.contains(" needs Arrow Java")
                        && line.contains("add org.apache.arrow:arrow-vector") && line.contains("to the class path"),
                        s + " #" + i + ": " + line);
            }
        }
        // CudaArrow.importDeviceArray needs no Arrow Java: without a driver it says so (with one, the null copies are
        // refused), and either way the struct was released exactly once
        for (int i = 0; i < 2; i++) {
            String line = out.get("cudaArrowImport #" + i);
            assertTrue(line.equals("OK CudaUnavailableException, released 1 time(s)")
                    || line.equals("OK NullPointerException, released 1 time(s)"), line);
        }
    }

    @Test
    void onTheClassPathWithoutFlightCoreFlightEntryPointsNameTheJarEveryTimeAndTheValueTypesWork() throws Exception {
        String noFlight = classPath(true, jar -> !jar.startsWith("flight-core"));
        assertTrue(System.getProperty("java.class.path").contains("flight-core")
                && !noFlight.contains("flight-core"), noFlight);
        List<String> scenarios = concat(FLIGHT, List.of("flightValues", "flightProducer"));
        Map<String, String> out = run(List.of(CLASS_PATH_FLAG, DENY, "-cp", noFlight), scenarios.toArray(String[]::new));
        assertTypedEveryTime(out, FLIGHT, "ArrowJavaUnavailableException: ", " needs Arrow Flight");
        assertTypedEveryTime(out, FLIGHT, "ArrowJavaUnavailableException: ", "add org.apache.arrow:flight-core");
        assertTypedEveryTime(out, FLIGHT, "ArrowJavaUnavailableException: ", "to the class path");
        for (int i = 0; i < 2; i++) {
            assertTrue(out.get("deviceFlightServe #" + i).contains("DeviceFlight.serve needs"), out.toString());
            assertTrue(out.get("deviceFlightClient #" + i).contains("DeviceFlightClient.of needs"), out.toString());
            assertEquals("OK 7 true false", out.get("flightValues #" + i), out.toString());
            // extends Flight's NoOpFlightProducer: documented as needing flight-core to load at all
            assertTrue(out.get("flightProducer #" + i).startsWith("OK not linked: NoClassDefFoundError: org/apache/arrow/flight/"),
                    out.toString());
        }
        assertGranted(out);
        assertEquals("OK 7.0", out.get("dlpack #0"), out.toString());
    }

    @Test
    void withoutLibpythonPythonThrowsPythonUnavailableExceptionEveryTimeAndWithoutADriverCudaThrowsItsOwn()
            throws Exception {
        Map<String, String> out = run(List.of(CLASS_PATH_FLAG, DENY, "-Ddevicebridge.python.library=/nonexistent/libpython3.so",
                "-cp", classPath(true)));
        assertGranted(out);
        for (int i = 0; i < 2; i++) {
            String python = out.get("python #" + i);
            assertTrue(python.startsWith("PythonUnavailableException: ") && python.contains("devicebridge.python.library"),
                    python);
            // this machine's driver decides: a count where there is one, the typed refusal where there is none
            String cuda = out.get("cuda #" + i);
            assertTrue(cuda.matches("OK \\d+") || cuda.startsWith("CudaUnavailableException: CUDA driver not available"),
                    cuda);
        }
        assertEquals("OK false", out.get("pythonAvailable #1"), out.toString());
    }

    @Test
    void onAnotherCpuEveryEntryPointSaysTheAnswerIsLinuxX8664NotALinkError() throws Exception {
        Map<String, String> out = run(List.of(CLASS_PATH_FLAG, DENY, "-Dos.arch=aarch64", "-cp", classPath(true)),
                FLIGHT.toArray(String[]::new));
        for (String s : concat(NATIVE, FLIGHT)) {
            for (int i = 0; i < 2; i++) {
                String line = out.get(s + " #" + i);
                assertTrue(line.startsWith("UnsupportedFeatureException: ") && line.contains("os.arch=aarch64")
                        && line.contains("the CPU is not") && line.contains("Linux on x86-64"), s + " #" + i + ": " + line);
            }
        }
        assertTrue(out.get("cudaAvailable #0").startsWith("OK false devicebridge does not support"), out.toString());
        assertEquals("OK false", out.get("pythonAvailable #0"), out.toString());
    }

    @Test
    void theSelfCheckWithoutNativeAccessNamesTheFlagAndExitsNonZeroWithoutAStackTrace() throws Exception {
        assumeTrue(JdkFlags.canDeny(), "only JDK 24+ can deny native access (--illegal-native-access)");
        List<String> command = new ArrayList<>(List.of(java(), DENY, "-cp", classPath(true),
                "org.devicebridge.selfcheck.SelfCheck"));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(child.waitFor(120, TimeUnit.SECONDS), output);
        assertEquals(1, child.exitValue(), output);
        assertTrue(output.contains("native access:   DENIED") && output.contains(CLASS_PATH_FLAG), output);
        assertTrue(output.contains("self-check: FAILED before any round trip: "), output);
        assertFalse(output.contains("Exception in thread") || output.contains("\tat ") || output.contains("Error"), output);
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    // ------------------------------------------------------------------------------------------ checks

    private static void assertDenied(Map<String, String> out, String flag) {
        for (String s : NATIVE) {
            for (int i = 0; i < 2; i++) {
                String line = out.get(s + " #" + i);
                assertTrue(line != null && line.startsWith("NativeAccessException: ") && line.contains(flag),
                        s + " #" + i + ": " + line + "\n" + out);
            }
        }
        for (String s : QUERIES) {
            for (int i = 0; i < 2; i++) {
                assertTrue(out.get(s + " #" + i).startsWith("OK "), s + " #" + i + ": " + out.get(s + " #" + i));
            }
        }
        assertTrue(out.get("cudaAvailable #0").startsWith("OK false native access is not enabled"), out.toString());
        assertEquals("OK false", out.get("pythonAvailable #1"), out.toString());
    }

    private static void assertTypedEveryTime(Map<String, String> out, List<String> scenarios, String prefix, String text) {
        for (String s : scenarios) {
            for (int i = 0; i < 2; i++) {
                String line = out.get(s + " #" + i);
                assertTrue(line != null && line.startsWith(prefix) && line.contains(text), s + " #" + i + ": " + line);
            }
        }
    }

    private static void assertGranted(Map<String, String> out) {
        for (Map.Entry<String, String> e : out.entrySet()) {
            assertFalse(e.getValue().startsWith("NativeAccessException"), e.toString());
            // an Error (ExceptionInInitializerError, NoClassDefFoundError, ...) is never an answer
            assertFalse(e.getValue().matches("^\\w*Error: .*"), e.toString());
        }
        assertTrue(out.get("values #0").startsWith("OK "), out.get("values #0"));
    }

    // ------------------------------------------------------------------------------------------ the child

    private static Map<String, String> run(List<String> jvmArgs, String... extraScenarios) throws IOException,
            InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(java());
        command.addAll(JdkFlags.taken(jvmArgs));
        command.add(AccessChild.class.getName());
        Set<String> scenarios = new LinkedHashSet<>(QUERIES);
        scenarios.addAll(NATIVE);
        scenarios.addAll(List.of(extraScenarios));
        command.addAll(scenarios);
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(child.waitFor(120, TimeUnit.SECONDS), "child did not finish: " + output);
        assertEquals(0, child.exitValue(), "child output:\n" + output);
        Map<String, String> lines = new LinkedHashMap<>();
        for (String line : output.split("\n")) {
            int colon = line.indexOf(": ");
            if (colon > 0 && line.substring(0, colon).matches("\\w+ #\\d")) {
                lines.put(line.substring(0, colon), line.substring(colon + 2));
            }
        }
        for (String s : scenarios) {
            assertTrue(lines.containsKey(s + " #0") && lines.containsKey(s + " #1"), s + " missing in:\n" + output);
        }
        return lines;
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The module path of devicebridge's two modules, and this test's child on the class path. */
    private static List<String> modulePath(String... flags) {
        List<String> args = new ArrayList<>(List.of(flags));
        args.addAll(List.of("--module-path", location(NativeHandle.class) + File.pathSeparator + location(ArrowSchema.class),
                "--add-modules", "org.devicebridge.core", "-cp", location(AccessChild.class)));
        return args;
    }

    /**
     * The child's class path: this test's classes, core and generated, then (with Arrow Java) the rest of this
     * JVM's class path. Locations of classes rather than java.class.path alone: a launcher that loads tests
     * through its own class loader (the JUnit console launcher on the GPU machine) puts only itself there.
     */
    private static String classPath(boolean withArrowJava) {
        return classPath(withArrowJava, jar -> true);
    }

    private static String classPath(boolean withArrowJava, java.util.function.Predicate<String> keep) {
        Set<String> entries = new LinkedHashSet<>(List.of(location(AccessChild.class), location(NativeHandle.class),
                location(ArrowSchema.class)));
        if (withArrowJava) {
            entries.add(location(org.apache.arrow.vector.VectorSchemaRoot.class));
            entries.add(location(org.apache.arrow.memory.BufferAllocator.class));
            for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
                if (keep.test(Path.of(e).getFileName().toString())) {
                    entries.add(e);
                }
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    private static String location(Class<?> c) {
        try {
            return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
