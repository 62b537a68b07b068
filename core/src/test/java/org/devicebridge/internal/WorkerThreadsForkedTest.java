package org.devicebridge.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The size of the worker threads (API and system property), turning them off, a caller's executor in their
 * place, and what the library's threads inherit: each in a fresh JVM ({@link WorkerThreadsProbe}), since the
 * workers are configured once per process.
 */
class WorkerThreadsForkedTest {
    @Test
    void theSizeGivenByTheApiIsHonouredAndALaterChangeIsRefusedTyped() throws Exception {
        String out = probe(List.of(), "size");
        assertEquals("3", result(out, "workers"), out);
        assertEquals("3", result(out, "helpers"), out);
        assertEquals("typed", result(out, "lateConfigure"), out);
    }

    @Test
    void theSizeGivenByTheSystemPropertyIsHonoured() throws Exception {
        String out = probe(List.of("-D" + LibraryThreads.PROPERTY + "=2"), "property");
        assertEquals("2", result(out, "workers"), out);
    }

    @Test
    void zeroThreadsRunEveryPartOnTheCallersThread() throws Exception {
        String out = probe(List.of("-D" + LibraryThreads.PROPERTY + "=0"), "property");
        assertEquals("0", result(out, "workers"), out);
        assertEquals("0", result(out, "helpers"), out);
        assertEquals("true", result(out, "onlyCaller"), out);
    }

    @Test
    void aCallersExecutorReplacesTheThreadsAndHoldsNoFinishedJob() throws Exception {
        String out = probe(List.of(), "executor");
        assertEquals("0", result(out, "workers"), out);
        assertTrue(Integer.parseInt(result(out, "executed")) > 0, out);
        assertEquals("true", result(out, "onlyCaller"), "the executor ran nothing, so the caller did it all: " + out);
        assertTrue(result(out, "payloadCollected").startsWith("true held "), out);
    }

    @Test
    void workerThreadsStartWithNoContextLoaderAndNoInheritedThreadLocals() throws Exception {
        String out = probe(List.of(), "size");
        assertEquals("[null/null]", result(out, "workerContexts"), out);
    }

    @Test
    void aLibraryThreadInheritsNeitherTheLoaderNorThreadLocals() throws Exception {
        InheritableThreadLocal<String> local = new InheritableThreadLocal<>();
        Thread caller = Thread.currentThread();
        ClassLoader saved = caller.getContextClassLoader();
        ClassLoader custom = new java.net.URLClassLoader(new java.net.URL[0], saved);
        caller.setContextClassLoader(custom);
        local.set("caller's");
        Object[] seen = new Object[2];
        try {
            Thread t = LibraryThreads.newThread(() -> {
                seen[0] = Thread.currentThread().getContextClassLoader();
                seen[1] = local.get();
            }, "probe");
            assertTrue(t.isDaemon());
            t.start();
            t.join();
        } finally {
            caller.setContextClassLoader(saved);
            local.remove();
        }
        assertNull(seen[0], "context class loader");
        assertNull(seen[1], "inherited thread-local");
    }

    private static String result(String out, String key) {
        for (String line : out.split("\n")) {
            if (line.startsWith("RESULT " + key + " ")) {
                return line.substring(("RESULT " + key + " ").length()).trim();
            }
        }
        throw new AssertionError("no RESULT " + key + " in:\n" + out);
    }

    private static String probe(List<String> jvmArgs, String mode) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.addAll(jvmArgs);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(WorkerThreadsProbe.class.getName());
        command.add(mode);
        Path log = Files.createTempFile("worker-threads-probe", ".log");
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
}
