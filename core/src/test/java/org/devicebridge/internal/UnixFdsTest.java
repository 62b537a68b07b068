package org.devicebridge.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.devicebridge.testing.PythonProcess;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A file descriptor handed to another process over a Unix socket: a python3 child listens, the descriptor (the
 * write end of a pipe made here) must work on its side, and no descriptor of this process stays open on any path.
 */
class UnixFdsTest {
    /** The child: listens in a private directory, prints the path, writes through the first fd it gets. */
    private static final String CHILD = String.join("\n",
            "import os, socket, sys, tempfile",
            "d = tempfile.mkdtemp()",
            "p = os.path.join(d, 's')",
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
            "s.bind(p); s.listen(1)",
            "print(p, flush=True)",
            "c, _ = s.accept(); c.settimeout(30)",
            "msg, fds, flags, addr = socket.recv_fds(c, 1, 1)",
            "if fds:",
            "    os.write(fds[0], b'written by the child'); os.close(fds[0]); print('received ' + msg.decode(), flush=True)",
            "else:",
            "    print('nothing', flush=True)",
            "c.close(); s.close(); os.unlink(p); os.rmdir(d)");

    private static final MethodHandle PIPE = Native.libc("pipe", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle READ = Native.libc("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS,
            JAVA_LONG));

    /**
     * What this process's descriptors refer to ({@code socket:[inode]}, {@code pipe:[inode]}, paths): a descriptor
     * left open here shows up as a target that was not there before (counting would also see other threads' closes).
     */
    private static Set<String> openDescriptors() throws IOException {
        Set<String> out = new HashSet<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    out.add(Files.readSymbolicLink(fd).toString());
                } catch (IOException closedMeanwhile) {
                    // a descriptor closed while listing (the listing's own among them) is not one left open
                }
            }
        }
        return out;
    }

    private static void assertNoneLeftOpen(Set<String> before) throws IOException {
        Set<String> added = openDescriptors();
        added.removeAll(before);
        added.removeIf(t -> !t.startsWith("socket:") && !t.startsWith("pipe:"));
        assertEquals(Set.of(), added, "sockets and pipes opened and not closed");
    }

    private static Process child() throws IOException {
        return new ProcessBuilder(PythonProcess.python(), "-c", CHILD).redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
    }

    private static void requirePython() {
        Assumptions.assumeTrue(PythonProcess.runs("import socket; socket.recv_fds"), "no python3 with socket.recv_fds");
    }

    /** Waits for the child and closes this side of its pipes, so that counting descriptors sees none of them. */
    private static void finish(Process p, BufferedReader out) throws IOException, InterruptedException {
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        out.close();
        p.getOutputStream().close();
    }

    @Test
    void theListeningProcessGetsAWorkingCopyOfTheDescriptorAndNothingStaysOpenHere() throws Throwable {
        requirePython();
        Set<String> before = openDescriptors();
        Process p = child();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String socket = out.readLine();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ends = arena.allocate(JAVA_INT, 2);
            assertEquals(0, (int) PIPE.invokeExact(ends));
            int read = ends.getAtIndex(JAVA_INT, 0);
            int write = ends.getAtIndex(JAVA_INT, 1);
            UnixFds.send(socket, p.pid(), write);
            UnixFds.close(write); // the child's copy is the last write end: EOF comes when it closes it
            MemorySegment buf = arena.allocate(64);
            StringBuilder got = new StringBuilder();
            for (long n; (n = (long) READ.invokeExact(read, buf, 64L)) > 0; ) {
                got.append(new String(buf.asSlice(0, n).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
                        StandardCharsets.US_ASCII));
            }
            UnixFds.close(read);
            assertEquals("written by the child", got.toString());
        }
        assertEquals("received F", out.readLine());
        finish(p, out);
        assertEquals(0, p.exitValue());
        assertNoneLeftOpen(before);
    }

    @Test
    void aListenerThatIsNotTheExpectedProcessGetsNothing() throws Throwable {
        requirePython();
        Set<String> before = openDescriptors();
        Process p = child();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String socket = out.readLine();
        UnixFds.WrongPeerException e = assertThrows(UnixFds.WrongPeerException.class,
                () -> UnixFds.send(socket, ProcessHandle.current().pid(), 0));
        assertTrue(e.getMessage().contains("but found process " + p.pid()), e.getMessage());
        assertEquals("nothing", out.readLine());
        finish(p, out);
        assertNoneLeftOpen(before);
    }

    @Test
    void aSocketNobodyListensOnIsAnErrnoNamingConnect() throws IOException {
        Path dir = Files.createTempDirectory("unixfds");
        try {
            Set<String> before = openDescriptors();
            UnixFds.ErrnoException e = assertThrows(UnixFds.ErrnoException.class,
                    () -> UnixFds.send(dir.resolve("absent").toString(), 1, 0));
            assertEquals("connect", e.function());
            assertEquals(2, e.errno(), e.getMessage()); // ENOENT
            assertTrue(e.getMessage().startsWith("[connect] errno 2 (ENOENT): "), e.getMessage());
            assertNoneLeftOpen(before);
        } finally {
            Files.delete(dir);
        }
    }

    @Test
    void aPathTheSocketAddressCannotHoldIsRefusedBeforeAnyCall() throws IOException {
        Set<String> before = openDescriptors();
        assertThrows(IllegalArgumentException.class, () -> UnixFds.send("/tmp/" + "x".repeat(UnixFds.MAX_PATH_BYTES), 1, 0));
        assertThrows(IllegalArgumentException.class, () -> UnixFds.send("/tmp/a\0b", 1, 0));
        assertNoneLeftOpen(before);
    }

    @Test
    void closingADescriptorThatIsNotOpenIsAnErrnoNamingClose() {
        UnixFds.ErrnoException e = assertThrows(UnixFds.ErrnoException.class, () -> UnixFds.close(Integer.MAX_VALUE));
        assertEquals("close", e.function());
        assertEquals(9, e.errno()); // EBADF
    }
}
