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
                .filter(i -> !i.startsWith("IpcBatch") && !i.startsWith("IpcExportPlanner.java: ")
                        && !i.startsWith("IpcSchemas.java: ") && !i.startsWith("SchemaMessageVerifier.java: "))
                .filter(i -> i.contains(" org.apache.arrow.") || i.contains(" org.devicebridge.arrow."))
                .toList();
        assertEquals(List.of(), tensorSide);
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

    /** Files over the limit for now, by path under org/devicebridge, each with why. */
    private static final Set<String> OVER_LIMIT_FOR_NOW = Set.of(
            // a later rewrite (issue 29: one transfer engine) cuts it to about 250 lines; not split before that
            "cuda/HostDeviceTransfer.java",
            // not split yet (issue 29 item 3): the public export facade, almost all Javadoc of public methods; it
            // shrinks when the 1.0 surface (issue 29 item 1) moves its jobs, not by moving private helpers out
            "arrow/java/ArrowExport.java");

    @Test
    void noMainFileIsOver400Lines() throws IOException {
        // STYLE 19: a file is one job; one past ~400 lines holds more than one (issue 29 item 3)
        List<String> over = new ArrayList<>();
        Path sources = Path.of("src/main/java");
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                String name = MAIN.relativize(f).toString().replace('\\', '/');
                long lines = Files.readAllLines(f).size();
                if (lines > 400 && !OVER_LIMIT_FOR_NOW.contains(name)) {
                    over.add(name + ": " + lines);
                }
            }
        }
        assertEquals(List.of(), over);
    }
}
