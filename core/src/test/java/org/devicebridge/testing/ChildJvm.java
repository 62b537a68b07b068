package org.devicebridge.testing;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.devicebridge.cuda.Cuda;

/** Runs a test class's {@code main} in a second JVM (the other process of a CUDA IPC test). */
public final class ChildJvm {
    private ChildJvm() {}

    /** What a child printed and how it exited. */
    public record Result(int exitValue, String output) {}

    /**
     * Runs {@code main} with {@code args} and native access (and Arrow's one add-opens), waits up to
     * {@code seconds} for it, and returns its exit value and output (stdout and stderr together).
     *
     * @throws IllegalStateException if the child did not finish in time (it is destroyed)
     */
    public static Result run(Class<?> main, long seconds, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("--add-opens=java.base/java.nio=ALL-UNNAMED");
        command.add("-cp");
        command.add(classPath(main));
        command.add(main.getName());
        command.addAll(List.of(args));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        // the child prints little; reading to EOF also waits for it to close its output
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!child.waitFor(seconds, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            throw new IllegalStateException("child did not finish: " + output);
        }
        return new Result(child.exitValue(), output);
    }

    /**
     * The child's class path: where {@code main}, the library and its generated bindings were loaded from,
     * then java.class.path. Under Surefire java.class.path alone would do, but a launcher that loads tests
     * through its own class loader (the JUnit console launcher on the GPU machine) puts only itself there.
     */
    public static String classPath(Class<?> main) {
        Set<String> entries = new LinkedHashSet<>();
        for (Class<?> c : new Class<?>[] {main, Cuda.class, org.devicebridge.generated.cuda.cuda_driver_h.class}) {
            try {
                entries.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        entries.addAll(List.of(System.getProperty("java.class.path").split(File.pathSeparator)));
        return String.join(File.pathSeparator, entries);
    }
}
