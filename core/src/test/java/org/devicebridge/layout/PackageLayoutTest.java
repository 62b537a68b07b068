package org.devicebridge.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The package layout by dependency, checked on the sources: what each package may import, and what the
 * module exports. A package that imports one above it, or one beside it that it must not need, fails here.
 */
class PackageLayoutTest {
    private static final Path MAIN = Path.of("src/main/java/org/devicebridge");
    private static final Pattern IMPORT = Pattern.compile("^import (?:static )?([\\w.]+)(?:\\.\\*)?;", Pattern.MULTILINE);

    /** The imports of every source file directly in {@code pkg} (not its subpackages), as "File: import". */
    private static List<String> imports(String pkg) throws IOException {
        List<String> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(MAIN.resolve(pkg))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                Matcher m = IMPORT.matcher(Files.readString(f));
                while (m.find()) {
                    out.add(f.getFileName() + ": " + m.group(1));
                }
            }
        }
        return out;
    }

    @Test
    void theArrowPackageNeedsOnlyTheFfmApiNeitherArrowJavaNorCuda() throws IOException {
        List<String> wrong = imports("arrow").stream()
                .filter(i -> i.contains(" org.apache.arrow.") || i.contains(" org.devicebridge.cuda.")
                        || i.contains(" org.devicebridge.arrow.java.") || i.contains(" org.devicebridge.arrow.cuda."))
                .toList();
        assertEquals(List.of(), wrong);
    }

    @Test
    void internalImportsOnlyTheJdkAndGeneratedCode() throws IOException {
        List<String> wrong = imports("internal").stream()
                .filter(i -> !i.contains(" java.") && !i.contains(" org.devicebridge.generated.")
                        && !i.contains(" org.devicebridge.internal."))
                .toList();
        assertEquals(List.of(), wrong);
    }

    @Test
    void theArrowJavaBridgeAndTheLowerPackagesDoNotNeedCuda() throws IOException {
        for (String pkg : List.of("arrow/java", "dlpack", "python", "foreign")) {
            List<String> wrong = imports(pkg).stream()
                    .filter(i -> i.contains(" org.devicebridge.arrow.cuda.") || i.contains(" org.devicebridge.selfcheck."))
                    .toList();
            assertEquals(List.of(), wrong, pkg);
        }
    }

    @Test
    void onlyTheBridgeArrowOnCudaAndFlightNeedArrowJava() throws IOException {
        // DLPack's Arrow Java converter lives in the bridge (arrow.java), not in dlpack
        for (String pkg : List.of("", "arrow", "cuda", "dlpack", "python", "internal")) {
            List<String> wrong = imports(pkg).stream().filter(i -> i.contains(" org.apache.arrow.")).toList();
            assertEquals(List.of(), wrong, pkg);
        }
    }

    @Test
    void theBasePackageWithTheDeviceIdentityImportsNoOtherPackage() throws IOException {
        // org.devicebridge (Device, DeviceKind, the handle, the exceptions) is the lowest package every other one imports
        List<String> wrong = imports("").stream()
                .filter(i -> i.contains(" org.devicebridge.") && !i.matches(".* org\\.devicebridge\\.(internal\\.|[A-Z])[\\w.]*"))
                .toList();
        assertEquals(List.of(), wrong);
    }

    @Test
    void arrowFlightIsUsedOnlyByItsOwnPackage() throws IOException {
        for (String pkg : List.of("", "arrow", "arrow/java", "arrow/cuda", "cuda", "dlpack", "python", "ipc", "foreign",
                "internal", "selfcheck")) {
            List<String> wrong = imports(pkg).stream()
                    .filter(i -> i.contains(" org.apache.arrow.flight.") || i.contains(" org.devicebridge.arrow.flight."))
                    .toList();
            assertEquals(List.of(), wrong, pkg);
        }
    }

    @Test
    void theFlightPackageNeedsOnlyArrowOnCudaTheBridgeCudaAndFlight() throws IOException {
        // org.devicebridge.arrow's own types too: a put's FULL validation and its ValidationLevel option; and the
        // two checks every entry point makes first (native access, then Arrow Java and Flight)
        List<String> wrong = imports("arrow/flight").stream()
                .filter(i -> i.contains(" org.devicebridge.") && !i.matches(".* org\\.devicebridge\\.(arrow\\.flight|arrow\\.cuda"
                        + "|arrow\\.java|cuda|arrow\\.[A-Z]\\w*$|[A-Z]\\w*$|foreign\\.ArrowJavaCheck\\.requireFlight"
                        + "|foreign\\.NativeCalls\\.requireNativeAccess)[\\w.]*"))
                .toList();
        assertEquals(List.of(), wrong);
    }

    @Test
    void cudaIpcNeedsOnlyThePackagesBelowIt() throws IOException {
        // CUDA IPC of batches (Arrow, Arrow on CUDA, the bridge for the schema message) and tensors (DLPack), over
        // the driver and the plumbing; never Flight or Python
        List<String> wrong = imports("ipc").stream()
                .filter(i -> i.contains(" org.devicebridge.") && !i.matches(".* org\\.devicebridge\\.(ipc|arrow\\.cuda|arrow\\.java"
                        + "|arrow\\.[A-Z][\\w.]*$|cuda|dlpack|foreign|internal|generated|[A-Z][\\w.]*$)[\\w.]*"))
                .toList();
        assertEquals(List.of(), wrong);
    }

    @Test
    void nothingBelowCudaIpcImportsIt() throws IOException {
        for (String pkg : List.of("", "arrow", "arrow/java", "arrow/cuda", "arrow/flight", "cuda", "dlpack", "python",
                "foreign", "internal")) {
            List<String> wrong = imports(pkg).stream().filter(i -> i.contains(" org.devicebridge.ipc.")).toList();
            assertEquals(List.of(), wrong, pkg);
        }
    }

    @Test
    void onlyTheBatchSideOfCudaIpcNeedsArrowJava() throws IOException {
        // Arrow Java (optional) is linked only where the schema message is written and read; the tensor side, the
        // codec and the acknowledgement need neither Arrow Java nor Arrow on CUDA
        List<String> arrowJava = imports("ipc").stream()
                .filter(i -> i.contains(" org.apache.arrow.") || i.contains(" org.devicebridge.arrow.java."))
                .filter(i -> !i.startsWith("IpcSchemas.java: "))
                .toList();
        assertEquals(List.of(), arrowJava);
        List<String> tensorSide = imports("ipc").stream()
                // WorkerChannel and the two entries (IpcExport, IpcImport) carry batches and tensors alike; Arrow Java
                // is reached only through IpcBatch*
                .filter(i -> !i.startsWith("IpcBatch") && !i.startsWith("IpcExportPlanner.java: ")
                        && !i.startsWith("WorkerChannel.java: ") && !i.startsWith("IpcExport.java: ")
                        && !i.startsWith("IpcImport.java: ")
                        && !i.startsWith("IpcSchemas.java: ") && !i.startsWith("SchemaMessageVerifier.java: "))
                .filter(i -> i.contains(" org.apache.arrow.") || i.contains(" org.devicebridge.arrow."))
                .toList();
        assertEquals(List.of(), tensorSide);
    }

    /** A reference to a class of this library, by package: an import, a static import or a qualified name in code. */
    private static final Pattern QUALIFIED = Pattern.compile("\\borg\\.devicebridge((?:\\.[a-z]\\w*)*)\\.[A-Z]");

    /** Every main package (as "org.devicebridge[.sub]") with the library packages its code refers to. */
    private static java.util.Map<String, Set<String>> packageGraph() throws IOException {
        java.util.Map<String, Set<String>> graph = new java.util.TreeMap<>();
        try (Stream<Path> files = Files.walk(MAIN)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                String pkg = ("org.devicebridge." + MAIN.relativize(f.getParent()).toString().replace('\\', '/')
                        .replace('/', '.')).replaceAll("\\.$", "");
                // comments name classes for the reader (a {@link} is no dependency); the code is what links
                String code = Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
                Set<String> out = graph.computeIfAbsent(pkg, k -> new TreeSet<>());
                Matcher m = QUALIFIED.matcher(code);
                while (m.find()) {
                    String target = "org.devicebridge" + m.group(1);
                    if (!target.equals(pkg) && !target.startsWith("org.devicebridge.generated")) {
                        out.add(target);
                    }
                }
            }
        }
        return graph;
    }

    @Test
    void noTwoMainPackagesDependOnEachOtherEvenThroughOthers() throws IOException {
        // DESIGN 9: dependencies point down; a cycle (a package lending its private methods to one above it
        // through a plumbing package, say) is a back door. Tarjan's strongly connected components of the graph
        java.util.Map<String, Set<String>> graph = packageGraph();
        assertTrue(graph.size() >= 10 && graph.get("org.devicebridge.arrow.cuda").contains("org.devicebridge.arrow"),
                "the package graph was read: " + graph);
        List<Set<String>> cycles = new ArrayList<>();
        java.util.Map<String, Integer> index = new java.util.HashMap<>();
        java.util.Map<String, Integer> low = new java.util.HashMap<>();
        java.util.Deque<String> stack = new java.util.ArrayDeque<>();
        for (String start : graph.keySet()) {
            if (!index.containsKey(start)) {
                strongConnect(start, graph, index, low, stack, cycles);
            }
        }
        assertEquals(List.of(), cycles, "package cycles among main code");
    }

    private static void strongConnect(String v, java.util.Map<String, Set<String>> graph,
                                      java.util.Map<String, Integer> index, java.util.Map<String, Integer> low,
                                      java.util.Deque<String> stack, List<Set<String>> cycles) {
        index.put(v, index.size());
        low.put(v, index.get(v));
        stack.push(v);
        for (String w : graph.getOrDefault(v, Set.of())) {
            if (!index.containsKey(w)) {
                strongConnect(w, graph, index, low, stack, cycles);
                low.put(v, Math.min(low.get(v), low.get(w)));
            } else if (stack.contains(w)) {
                low.put(v, Math.min(low.get(v), index.get(w)));
            }
        }
        if (low.get(v).equals(index.get(v))) {
            Set<String> component = new TreeSet<>();
            String w;
            do {
                w = stack.pop();
                component.add(w);
            } while (!w.equals(v));
            if (component.size() > 1) {
                cycles.add(component);
            }
        }
    }

    @Test
    void theModuleExportsThePublicPackagesOnly() throws IOException {
        String descriptor = Files.readString(Path.of("src/main/jpms/module-info.java"));
        Set<String> exported = new TreeSet<>();
        Matcher m = Pattern.compile("^\\s*exports ([\\w.]+);", Pattern.MULTILINE).matcher(descriptor);
        while (m.find()) {
            exported.add(m.group(1));
        }
        assertEquals(new TreeSet<>(List.of("org.devicebridge", "org.devicebridge.arrow", "org.devicebridge.arrow.cuda",
                "org.devicebridge.arrow.flight", "org.devicebridge.arrow.java", "org.devicebridge.cuda", "org.devicebridge.dlpack",
                "org.devicebridge.python", "org.devicebridge.ipc")), exported);
    }

    @Test
    void theSelfCheckHasOnePublicClassItsMain() throws IOException {
        List<String> publicTypes = new ArrayList<>();
        try (Stream<Path> files = Files.list(MAIN.resolve("selfcheck"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                if (Pattern.compile("^public ", Pattern.MULTILINE).matcher(Files.readString(f)).find()) {
                    publicTypes.add(f.getFileName().toString());
                }
            }
        }
        assertEquals(List.of("SelfCheck.java"), publicTypes);
        assertTrue(Files.exists(MAIN.resolve("selfcheck/SelfCheck.java")));
    }

    @Test
    void noMainFileIsOver400Lines() throws IOException {
        // STYLE 19: a file is one job; one past ~400 lines holds more than one (issue 29 item 3)
        List<String> over = new ArrayList<>();
        Path sources = Path.of("src/main/java");
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                String name = MAIN.relativize(f).toString().replace('\\', '/');
                long lines = Files.readAllLines(f).size();
                if (lines > 400) {
                    over.add(name + ": " + lines);
                }
            }
        }
        assertEquals(List.of(), over);
    }


    /**
     * The positional parameters {@code m} declares: what the class file says, less what the compiler adds (an enum
     * constructor's name and ordinal, an inner class's outer instance).
     */
    private static int declaredParameters(Class<?> c, java.lang.reflect.Executable m) {
        int n = m.getParameterCount();
        if (m instanceof java.lang.reflect.Constructor<?>) {
            if (c.isEnum()) {
                n -= 2;
            } else if (c.isMemberClass() && !java.lang.reflect.Modifier.isStatic(c.getModifiers())) {
                n -= 1;
            }
        }
        return n;
    }

    /** A record's canonical constructor: its parameters are its named components, the cure for a long list. */
    private static boolean canonical(Class<?> c, java.lang.reflect.Executable m) {
        return c.isRecord() && m instanceof java.lang.reflect.Constructor<?> && java.util.Arrays.equals(m.getParameterTypes(),
                java.util.Arrays.stream(c.getRecordComponents()).map(java.lang.reflect.RecordComponent::getType).toArray());
    }

    @Test
    void noMainMethodTakesMoreThanFivePositionalParameters() throws Exception {
        // STYLE 17: more than a handful of positional parameters becomes a parameter record. Checked on the
        // compiled main classes (lambdas, bridges and other synthetic methods are the compiler's; anonymous and
        // local classes are skipped: their constructors carry captured variables)
        Path classes = Path.of("target/classes");
        List<String> over = new ArrayList<>();
        int scanned = 0;
        try (Stream<Path> files = Files.walk(classes.resolve("org/devicebridge"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                String name = classes.relativize(f).toString().replace('\\', '/').replace('/', '.').replaceAll("\\.class$", "");
                Class<?> c = Class.forName(name, false, getClass().getClassLoader());
                if (c.isAnonymousClass() || c.isLocalClass() || c.isSynthetic()) {
                    continue;
                }
                scanned++;
                List<java.lang.reflect.Executable> all = new ArrayList<>(List.of(c.getDeclaredMethods()));
                all.addAll(List.of(c.getDeclaredConstructors()));
                for (java.lang.reflect.Executable m : all) {
                    if (m.isSynthetic() || (m instanceof java.lang.reflect.Method method && method.isBridge())
                            || canonical(c, m) || declaredParameters(c, m) <= 5) {
                        continue;
                    }
                    String key = name + "." + (m instanceof java.lang.reflect.Constructor<?> ? "<init>" : m.getName());
                    over.add(key + ": " + declaredParameters(c, m));
                }
            }
        }
        assertTrue(scanned > 100, "the main classes were found: " + scanned);
        assertEquals(List.of(), over);
    }

    /**
     * The most public types (top-level and nested, counted where every enclosing type is public too) the exported
     * packages may hold together. Lower it when a type goes; raising it needs a reason in the API review.
     */
    private static final int PUBLIC_TYPE_CEILING = 79;

    @Test
    void theExportedPackagesHoldAtMostTheCeilingOfPublicTypes() throws Exception {
        // DESIGN 9: about 80 public types in all exported packages. Counted on the compiled classes of every package
        // module-info exports, so a new public nested record counts as much as a new file
        String module = Files.readString(Path.of("src/main/jpms/module-info.java"));
        Matcher exports = Pattern.compile("^\\s*exports ([\\w.]+);", Pattern.MULTILINE).matcher(module);
        Path classes = Path.of("target/classes");
        Set<String> types = new TreeSet<>();
        int packages = 0;
        while (exports.find()) {
            packages++;
            Path dir = classes.resolve(exports.group(1).replace('.', '/'));
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                    String name = exports.group(1) + "." + f.getFileName().toString().replaceAll("\\.class$", "");
                    if (name.endsWith("package-info")) {
                        continue;
                    }
                    Class<?> c = Class.forName(name, false, getClass().getClassLoader());
                    if (!c.isAnonymousClass() && !c.isLocalClass() && !c.isSynthetic() && visible(c)) {
                        types.add(name);
                    }
                }
            }
        }
        assertTrue(packages >= 9 && types.contains("org.devicebridge.Device"), "the exported packages were found: " + packages);
        assertTrue(types.size() <= PUBLIC_TYPE_CEILING, "expected at most " + PUBLIC_TYPE_CEILING
                + " public types in the exported packages but found " + types.size() + ": " + types);
    }

    /** Public, and reachable from outside: every enclosing type public as well. */
    private static boolean visible(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getEnclosingClass()) {
            if (!java.lang.reflect.Modifier.isPublic(k.getModifiers())) {
                return false;
            }
        }
        return true;
    }
}
