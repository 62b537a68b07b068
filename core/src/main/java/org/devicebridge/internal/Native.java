package org.devicebridge.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * FFM plumbing shared by every package: the libc functions the library calls itself (malloc/free,
 * dlopen/dlsym/dladdr, strlen, madvise, mmap) and upcall stub creation. Kept out of the public API.
 *
 * <p>This package sits below the public ones and throws only JDK exceptions: a missing native-access grant
 * is an {@link IllegalCallerException} whose message names the exact flag; callers in the public packages
 * turn it (and any other failure of a native call) into the library's exceptions with
 * {@code org.devicebridge.foreign.NativeCalls#rethrow}.
 */
public final class Native {
    public static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();

    private Native() {}

    /**
     * The libc handles every allocation uses, made on first use and only after {@link NativeAccess#require}
     * checked native access: a holder whose initialiser threw would fail with {@link NoClassDefFoundError} for the JVM's life,
     * and {@code Native} itself (loaded by classes that never allocate) must always initialise.
     */
    private static final class Libc {
        static final MethodHandle MALLOC = libc("malloc", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
        static final MethodHandle CALLOC = libc("calloc", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG));
        static final MethodHandle FREE = libc("free", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
        static final MethodHandle STRLEN = libc("strlen", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        // glibc, musl and bionic have it; elsewhere blocks are still counted exactly, their bytes as 0
        static final MethodHandle USABLE_SIZE = LIBC.find("malloc_usable_size")
                .map(f -> downcall(f, FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS),
                        Linker.Option.critical(false)))
                .orElse(null);
    }

    /**
     * A downcall handle for a libc function, made with {@code options}.
     *
     * @throws UnsatisfiedLinkError if libc has no such symbol
     * @throws IllegalCallerException if native access is not enabled (see {@link #nativeAccessDenied})
     */
    public static MethodHandle libc(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        NativeAccess.require();
        MemorySegment address = LIBC.find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc symbol not found: " + name));
        return downcall(address, descriptor, options);
    }

    /** {@link Linker#downcallHandle}, with a missing native-access grant reported by {@link #nativeAccessDenied}. */
    public static MethodHandle downcall(MemorySegment address, FunctionDescriptor descriptor, Linker.Option... options) {
        NativeAccess.require();
        try {
            return LINKER.downcallHandle(address, descriptor, options);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    /**
     * An upcall stub for a static method of {@code owner} (found through {@code lookup}, so it may be
     * private), allocated in the global arena: one stub per callback kind, made once, alive as long as the
     * JVM (native code may call it at any time).
     */
    public static MemorySegment upcallStub(MethodHandles.Lookup lookup, Class<?> owner, String method,
                                           FunctionDescriptor descriptor) {
        NativeAccess.require();
        try {
            MethodType type = descriptor.toMethodType();
            MethodHandle target = lookup.findStatic(owner, method, type);
            return LINKER.upcallStub(target, descriptor, Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("cannot bind upcall " + owner.getName() + "." + method, e);
        } catch (IllegalCallerException e) {
            throw nativeAccessDenied(e);
        }
    }

    /**
     * The failure to report when native access is not enabled for this library: an
     * {@link IllegalCallerException} whose message names the exact {@code --enable-native-access} flag.
     */
    public static IllegalCallerException nativeAccessDenied(Throwable cause) {
        return new IllegalCallerException(NativeAccess.message(), cause);
    }

    /**
     * Whatever {@code invokeExact} of one of this package's handles threw, as an unchecked JDK exception:
     * errors are rethrown, a missing native-access grant becomes {@link #nativeAccessDenied}, other runtime
     * exceptions are returned as they are and checked ones wrapped in an {@link IllegalStateException}.
     */
    static RuntimeException unchecked(String function, Throwable t) {
        if (t instanceof Error e) {
            throw e;
        }
        if (t instanceof IllegalCallerException) {
            return nativeAccessDenied(t);
        }
        if (t instanceof RuntimeException r) {
            return r;
        }
        return new IllegalStateException("native call " + function + " failed: " + t, t);
    }

    /**
     * malloc; throws {@link OutOfMemoryError} when it returns NULL for a non-zero size. Every block of
     * {@link #malloc}, {@link #calloc} and {@link #alignedAlloc} is counted ({@link Allocations.Kind#HEAP})
     * until {@link #free} frees it.
     */
    public static MemorySegment malloc(long bytes) {
        NativeAccess.require();
        try {
            MemorySegment p = (MemorySegment) Libc.MALLOC.invokeExact(Math.max(1L, bytes));
            if (p.equals(MemorySegment.NULL)) {
                throw new OutOfMemoryError("malloc(" + bytes + ") returned NULL");
            }
            Allocations.allocated(Allocations.Kind.HEAP, usableSize(p));
            return p.reinterpret(bytes);
        } catch (Throwable t) {
            throw unchecked("malloc", t);
        }
    }

    /** calloc (zeroed); throws {@link OutOfMemoryError} when it returns NULL. */
    public static MemorySegment calloc(long bytes) {
        NativeAccess.require();
        try {
            MemorySegment p = (MemorySegment) Libc.CALLOC.invokeExact(1L, Math.max(1L, bytes));
            if (p.equals(MemorySegment.NULL)) {
                throw new OutOfMemoryError("calloc(" + bytes + ") returned NULL");
            }
            Allocations.allocated(Allocations.Kind.HEAP, usableSize(p));
            return p.reinterpret(bytes);
        } catch (Throwable t) {
            throw unchecked("calloc", t);
        }
    }

    /** free; NULL is ignored, as in C. {@code p} must come from this class's allocation methods. */
    public static void free(MemorySegment p) {
        if (p.equals(MemorySegment.NULL)) {
            return;
        }
        NativeAccess.require();
        Allocations.freed(Allocations.Kind.HEAP, usableSize(p)); // before free: the size is read from the block
        try {
            Libc.FREE.invokeExact(p);
        } catch (Throwable t) {
            throw unchecked("free", t);
        }
    }

    /**
     * {@code aligned_alloc(alignment, bytes)} (C11): {@code bytes} must be a multiple of {@code alignment},
     * a power of two. Returns an unbounded zero-length segment at the memory, or {@link MemorySegment#NULL}
     * when libc has none to give; free it with {@link #free}. The handle is made on first use, so a libc
     * without the symbol fails only here (with {@link UnsatisfiedLinkError}).
     */
    public static MemorySegment alignedAlloc(long alignment, long bytes) {
        NativeAccess.require();
        MemorySegment p;
        try {
            p = (MemorySegment) Aligned.ALLOC.invokeExact(alignment, bytes);
        } catch (Throwable t) {
            throw unchecked("aligned_alloc", t);
        }
        if (!p.equals(MemorySegment.NULL)) {
            Allocations.allocated(Allocations.Kind.HEAP, usableSize(p));
        }
        return p;
    }

    /**
     * A pool now keeps {@code block} (from this class) idle for reuse instead of freeing it: still allocated,
     * no longer in use ({@link Allocations#pooled}).
     */
    public static void kept(MemorySegment block) {
        NativeAccess.require();
        Allocations.pooled(Allocations.Kind.HEAP, usableSize(block));
    }

    /** A pool hands a block it {@link #kept} out again, or is about to {@link #free} it. */
    public static void reused(MemorySegment block) {
        NativeAccess.require();
        Allocations.unpooled(Allocations.Kind.HEAP, usableSize(block));
    }

    /** Bytes malloc reserved for the block at {@code p} (fixed from its allocation to its free), or 0 if unknown. */
    private static long usableSize(MemorySegment p) {
        if (Libc.USABLE_SIZE == null) {
            return 0;
        }
        try {
            return (long) Libc.USABLE_SIZE.invokeExact(p);
        } catch (Throwable t) {
            throw unchecked("malloc_usable_size", t);
        }
    }

    /**
     * Asks Linux to back {@code [p, p + bytes)} with transparent huge pages ({@code madvise(MADV_HUGEPAGE)}):
     * the first touch of a large buffer then faults once per 2 MiB instead of once per 4 KiB (about 3x the
     * fill rate of fresh memory, measured). A hint: {@code false} where the kernel refuses it or the system
     * is not Linux, and nothing else changes.
     */
    public static boolean adviseHugePages(MemorySegment p, long bytes) {
        NativeAccess.require();
        if (Advice.MADVISE == null) {
            return false;
        }
        try {
            return (int) Advice.MADVISE.invokeExact(p, bytes, Advice.MADV_HUGEPAGE) == 0;
        } catch (Throwable t) {
            throw unchecked("madvise", t);
        }
    }

    /**
     * One page of private memory holding {@code code}, made read-only and executable (Linux: {@code mmap},
     * then {@code mprotect}); never unmapped, for machine code the library calls for as long as the JVM runs.
     *
     * @throws IllegalArgumentException if {@code code} does not fit one page
     * @throws IllegalStateException if the kernel refuses the mapping or the protection change (a policy
     *     against writable-then-executable memory); nothing stays mapped then
     */
    public static MemorySegment executablePage(byte[] code) {
        NativeAccess.require();
        if (code.length > Pages.SIZE) {
            throw new IllegalArgumentException(code.length + " bytes of code do not fit one page");
        }
        MemorySegment page;
        try {
            page = (MemorySegment) Pages.MMAP.invokeExact(MemorySegment.NULL, Pages.SIZE,
                    Pages.PROT_READ | Pages.PROT_WRITE, Pages.MAP_PRIVATE | Pages.MAP_ANONYMOUS, -1, 0L);
        } catch (Throwable t) {
            throw unchecked("mmap", t);
        }
        if (page.address() == -1L || page.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("mmap of one page failed");
        }
        page = page.reinterpret(Pages.SIZE);
        MemorySegment.copy(code, 0, page, ValueLayout.JAVA_BYTE, 0, code.length);
        int rc;
        try {
            rc = (int) Pages.MPROTECT.invokeExact(page, Pages.SIZE, Pages.PROT_READ | Pages.PROT_EXEC);
        } catch (Throwable t) {
            throw unchecked("mprotect", t);
        }
        if (rc == 0) {
            return page;
        }
        try {
            int ignored = (int) Pages.MUNMAP.invokeExact(page, Pages.SIZE);
        } catch (Throwable t) {
            throw unchecked("munmap", t);
        }
        throw new IllegalStateException("mprotect(PROT_READ | PROT_EXEC) failed: executable memory refused");
    }

    /** {@code mmap}, {@code mprotect} and {@code munmap} (Linux's constants), made on first use. */
    private static final class Pages {
        static final long SIZE = 4096;
        static final int PROT_READ = 1;
        static final int PROT_WRITE = 2;
        static final int PROT_EXEC = 4;
        static final int MAP_PRIVATE = 2;
        static final int MAP_ANONYMOUS = 0x20;
        static final MethodHandle MMAP = libc("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_LONG));
        static final MethodHandle MPROTECT = libc("mprotect", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        static final MethodHandle MUNMAP = libc("munmap", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    }

    /** {@code madvise}'s handle (Linux only: the advice's number is Linux's), made on first use. */
    private static final class Advice {
        static final int MADV_HUGEPAGE = 14;
        static final MethodHandle MADVISE = System.getProperty("os.name", "").startsWith("Linux")
                ? libc("madvise", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT))
                : null;
    }

    /** {@code aligned_alloc}'s handle, in a holder: made on first use, never at {@code Native}'s initialisation. */
    private static final class Aligned {
        static final MethodHandle ALLOC = libc("aligned_alloc",
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    }

    /** The address of libc's {@code free}, for native code (and benchmarks) that needs a real C function. */
    public static MemorySegment freeAddress() {
        return LIBC.find("free").orElseThrow();
    }

    /** Length of the NUL-terminated string at {@code p}, which must not be NULL. */
    public static long strlen(MemorySegment p) {
        NativeAccess.require();
        try {
            return (long) Libc.STRLEN.invokeExact(p);
        } catch (Throwable t) {
            throw unchecked("strlen", t);
        }
    }

    /** Reads a NUL-terminated UTF-8 string at {@code p}, or {@code null} for NULL. */
    public static String string(MemorySegment p) {
        if (p.equals(MemorySegment.NULL)) {
            return null;
        }
        long n = strlen(p);
        return p.reinterpret(n + 1).getString(0);
    }
}
