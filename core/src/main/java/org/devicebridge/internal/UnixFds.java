package org.devicebridge.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Hands a POSIX file descriptor to another process over a Unix domain socket ({@code SCM_RIGHTS}): the only way
 * one process can give another an fd, and the way a CUDA memory pool exported as a POSIX fd travels. The
 * receiving process listens on a socket in a directory only its user can enter; {@link #send} connects to it,
 * checks who listens there ({@code SO_PEERCRED}: the expected process id and this process's user), sends the fd
 * with one byte of payload, and closes its end. Linux on x86-64 only (the layouts below are that ABI's).
 *
 * <p>Every libc failure is an {@link ErrnoException} naming the call and the {@code errno}; every fd opened here
 * is closed on every path, the fd sent stays the caller's. Stateless and thread-safe.
 */
public final class UnixFds {
    static final int AF_UNIX = 1;
    static final int SOCK_STREAM = 1;
    static final int SOCK_CLOEXEC = 0x80000;
    static final int SOL_SOCKET = 1;
    static final int SCM_RIGHTS = 1;
    static final int SO_PEERCRED = 17;
    static final int MSG_NOSIGNAL = 0x4000;
    /** {@code sizeof(sockaddr_un.sun_path)}: a path must leave room for its NUL. */
    public static final int MAX_PATH_BYTES = 108;

    /** {@code struct sockaddr_un}: {@code sa_family_t sun_family; char sun_path[108];} */
    static final StructLayout SOCKADDR_UN = MemoryLayout.structLayout(JAVA_SHORT.withName("sun_family"),
            MemoryLayout.sequenceLayout(MAX_PATH_BYTES, JAVA_BYTE).withName("sun_path"));
    /** {@code struct ucred}: {@code pid_t pid; uid_t uid; gid_t gid;} */
    static final StructLayout UCRED = MemoryLayout.structLayout(JAVA_INT.withName("pid"), JAVA_INT.withName("uid"),
            JAVA_INT.withName("gid"));
    /** {@code struct iovec}: {@code void* iov_base; size_t iov_len;} */
    static final StructLayout IOVEC = MemoryLayout.structLayout(ADDRESS.withName("iov_base"), JAVA_LONG.withName("iov_len"));
    /**
     * {@code struct msghdr} (x86-64): {@code void* msg_name; socklen_t msg_namelen; struct iovec* msg_iov; size_t
     * msg_iovlen; void* msg_control; size_t msg_controllen; int msg_flags;}
     */
    static final StructLayout MSGHDR = MemoryLayout.structLayout(ADDRESS.withName("msg_name"),
            JAVA_INT.withName("msg_namelen"), MemoryLayout.paddingLayout(4), ADDRESS.withName("msg_iov"),
            JAVA_LONG.withName("msg_iovlen"), ADDRESS.withName("msg_control"), JAVA_LONG.withName("msg_controllen"),
            JAVA_INT.withName("msg_flags"), MemoryLayout.paddingLayout(4));
    /** {@code CMSG_LEN(sizeof(int))}: the header ({@code size_t cmsg_len; int cmsg_level; int cmsg_type;}) and one fd. */
    static final long CMSG_LEN_ONE_FD = 16 + 4;
    /** {@code CMSG_SPACE(sizeof(int))}: the same, padded to 8 bytes. */
    static final long CMSG_SPACE_ONE_FD = 16 + 8;

    /** A libc call failed: which, and its {@code errno}. */
    public static final class ErrnoException extends IOException {
        private static final long serialVersionUID = 1L;
        private final String function;
        private final int errno;

        ErrnoException(String function, int errno, String what) {
            super("[" + function + "] errno " + errno + Errno.nameSuffix(errno) + ": " + what);
            this.function = function;
            this.errno = errno;
        }

        /** {@return the libc function that failed} */
        public String function() {
            return function;
        }

        /** {@return the {@code errno} it left} */
        public int errno() {
            return errno;
        }
    }

    /** The peer is not the process (or not of the user) it must be: nothing was sent. */
    public static final class WrongPeerException extends IOException {
        private static final long serialVersionUID = 1L;

        WrongPeerException(String message) {
            super(message);
        }
    }

    private static final class Libc {
        static final StructLayout ERRNO_STATE = Linker.Option.captureStateLayout();
        static final VarHandle ERRNO = ERRNO_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
        static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");
        static final MethodHandle SOCKET = Native.libc("socket", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT), CAPTURE);
        static final MethodHandle CONNECT = Native.libc("connect", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS,
                JAVA_INT), CAPTURE);
        static final MethodHandle GETSOCKOPT = Native.libc("getsockopt", FunctionDescriptor.of(JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, ADDRESS, ADDRESS), CAPTURE);
        static final MethodHandle SENDMSG = Native.libc("sendmsg", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS,
                JAVA_INT), CAPTURE);
        static final MethodHandle CLOSE = Native.libc("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT), CAPTURE);
        static final MethodHandle GETEUID = Native.libc("geteuid", FunctionDescriptor.of(JAVA_INT));
    }

    private UnixFds() {}

    /**
     * Connects to the Unix stream socket at {@code socketPath}, checks that process {@code peerPid} of this
     * process's user listens there, and sends it {@code fd} ({@code SCM_RIGHTS}) with one byte of payload; closes
     * the connection on every path. The receiver gets its own copy of the descriptor.
     *
     * @param socketPath an absolute path of at most {@value #MAX_PATH_BYTES} - 1 bytes (UTF-8)
     * @param peerPid the process that must be listening
     * @param fd the descriptor to send; the caller keeps owning it (and closes it)
     * @throws ErrnoException if {@code socket}, {@code connect}, {@code getsockopt} or {@code sendmsg} fails
     * @throws WrongPeerException if another process, or a process of another user, listens there
     * @throws IllegalArgumentException for a path too long or holding a NUL
     */
    public static void send(String socketPath, long peerPid, int fd) throws IOException {
        Objects.requireNonNull(socketPath, "socketPath");
        byte[] path = socketPath.getBytes(StandardCharsets.UTF_8);
        if (path.length >= MAX_PATH_BYTES || socketPath.indexOf('\0') >= 0 || path.length == 0) {
            throw new IllegalArgumentException("expected a socket path of 1 to " + (MAX_PATH_BYTES - 1)
                    + " bytes without NUL but found " + path.length + " bytes");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = arena.allocate(Libc.ERRNO_STATE);
            int sock = (int) Libc.SOCKET.invokeExact(errno, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (sock < 0) {
                throw failure("socket", errno, "cannot create a Unix socket");
            }
            try {
                MemorySegment address = arena.allocate(SOCKADDR_UN);
                address.set(JAVA_SHORT, 0, (short) AF_UNIX);
                MemorySegment.copy(path, 0, address, JAVA_BYTE, 2, path.length);
                if ((int) Libc.CONNECT.invokeExact(errno, sock, address, (int) SOCKADDR_UN.byteSize()) != 0) {
                    throw failure("connect", errno, "cannot connect to " + socketPath);
                }
                checkPeer(arena, errno, sock, peerPid, socketPath);
                sendOne(arena, errno, sock, fd, socketPath);
            } finally {
                close(sock);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw Native.unchecked("UnixFds.send", t);
        }
    }

    private static void checkPeer(Arena arena, MemorySegment errno, int sock, long peerPid, String socketPath)
            throws Throwable {
        MemorySegment cred = arena.allocate(UCRED);
        MemorySegment length = arena.allocateFrom(JAVA_INT, (int) UCRED.byteSize());
        if ((int) Libc.GETSOCKOPT.invokeExact(errno, sock, SOL_SOCKET, SO_PEERCRED, cred, length) != 0) {
            throw failure("getsockopt", errno, "cannot read the credentials of the process at " + socketPath);
        }
        int pid = cred.get(JAVA_INT, 0);
        int uid = cred.get(JAVA_INT, 4);
        int ours = (int) Libc.GETEUID.invokeExact();
        if (pid != peerPid || uid != ours) {
            throw new WrongPeerException("expected process " + peerPid + " of user " + Integer.toUnsignedString(ours)
                    + " listening at " + socketPath + " but found process " + pid + " of user "
                    + Integer.toUnsignedString(uid) + ": nothing was sent");
        }
    }

    private static void sendOne(Arena arena, MemorySegment errno, int sock, int fd, String socketPath)
            throws Throwable {
        MemorySegment payload = arena.allocateFrom(JAVA_BYTE, (byte) 'F');
        MemorySegment iov = arena.allocate(IOVEC);
        iov.set(ADDRESS, 0, payload);
        iov.set(JAVA_LONG, 8, 1L);
        MemorySegment control = arena.allocate(CMSG_SPACE_ONE_FD, 8);
        control.set(JAVA_LONG, 0, CMSG_LEN_ONE_FD);
        control.set(JAVA_INT, 8, SOL_SOCKET);
        control.set(JAVA_INT, 12, SCM_RIGHTS);
        control.set(JAVA_INT, 16, fd);
        MemorySegment msg = arena.allocate(MSGHDR);
        msg.set(ADDRESS, offset("msg_iov"), iov);
        msg.set(JAVA_LONG, offset("msg_iovlen"), 1L);
        msg.set(ADDRESS, offset("msg_control"), control);
        msg.set(JAVA_LONG, offset("msg_controllen"), CMSG_SPACE_ONE_FD);
        long sent = (long) Libc.SENDMSG.invokeExact(errno, sock, msg, MSG_NOSIGNAL);
        if (sent != 1) {
            throw failure("sendmsg", errno, "cannot send the descriptor to " + socketPath);
        }
    }

    /**
     * Closes {@code fd}; a failure is reported only by the {@code errno} name in the exception.
     *
     * @throws ErrnoException if {@code close} fails (the descriptor is released all the same on Linux)
     */
    public static void close(int fd) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = arena.allocate(Libc.ERRNO_STATE);
            if ((int) Libc.CLOSE.invokeExact(errno, fd) != 0) {
                throw failure("close", errno, "cannot close descriptor " + fd);
            }
        } catch (ErrnoException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw Native.unchecked("close", t);
        }
    }

    private static long offset(String field) {
        return MSGHDR.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    private static ErrnoException failure(String function, MemorySegment errnoState, String what) {
        return new ErrnoException(function, (int) Libc.ERRNO.get(errnoState, 0L), what);
    }
}
