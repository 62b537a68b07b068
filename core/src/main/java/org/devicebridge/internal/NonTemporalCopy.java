package org.devicebridge.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Host copies into memory that a device's copy engine reads next, written with non-temporal stores (around
 * the CPU caches) where the platform allows it, and with {@link MemorySegment#copy} everywhere else.
 *
 * <p>Why: a staging chunk that 16 threads have just packed sits dirty in 16 cores' private caches, and the
 * copy engine's DMA reads of it then run well below the link's rate; after a pack with non-temporal stores
 * they run at it (bench/RESULTS.md, B6). Java has no non-temporal store, and glibc's {@code memcpy} uses
 * them only from a threshold derived from the cache size unless {@code GLIBC_TUNABLES} lowers it
 * at process start. So on x86-64 Linux this class maps one page of its own machine code: an SSE2 loop of
 * {@code movdqu} loads and {@code movntdq} stores, 64 bytes a turn, ended by an {@code sfence} so that the
 * stores are visible before the copying thread reports its slice done (SSE2 is part of x86-64, so no CPU
 * check is needed). It calls that code through an FFM downcall, as it would call {@code memcpy}. Java checks
 * the bounds and liveness first, copies the unaligned head and the tail of less than 64 bytes itself, and
 * gives the loop only a destination aligned to 64 bytes and a multiple of 64 bytes, so the loop cannot fault.
 *
 * <p>Off unless the user opts in with {@code -Ddevicebridge.nonTemporalCopy=true}: mapping executable memory
 * is a security policy decision (SELinux {@code execmem}, PaX {@code MPROTECT}, hardened JVMs), not a library's.
 * Without the opt-in, where the page cannot be mapped executable, or on other platforms, copies use
 * {@link MemorySegment#copy} and the DMA from freshly packed staging runs at the slower rate; with the opt-in
 * and a failure, a single log line says why. Pinned host memory (read by the copy engine directly, with no
 * staging) is the recommended path for data bound for the GPU. Only the last
 * chunks of an upload's packing use it (the earlier ones reach the copy engine faster from the shared cache:
 * see {@code StagingRing}); an unpacked download is read by the caller next (the Arrow bridge's offset
 * checks at once), and wants its lines cached (measured: the self-check batch's pageable download took
 * 1.6 ms with non-temporal unpacking, 1.1 ms without).
 *
 * <p>Stateless and thread-safe.
 */
public final class NonTemporalCopy {
    /** The system property that turns the non-temporal loop on ({@code true}); off by default. */
    public static final String PROPERTY = "devicebridge.nonTemporalCopy";
    /** Copies shorter than this stay in Java: the downcall would cost more than the caches it spares. */
    static final long MIN_BYTES = 512;

    /**
     * The loop, x86-64 System V: {@code void copy(void *dst (rdi), const void *src (rsi), size_t n (rdx))},
     * {@code dst} 16-byte aligned, {@code n} a positive multiple of 64.
     */
    static final byte[] X86_64_LOOP = {
            (byte) 0xF3, 0x0F, 0x1E, (byte) 0xFA,       //       endbr64 (a valid call target under CET; a no-op before it)
            (byte) 0xF3, 0x0F, 0x6F, 0x06,              // loop: movdqu xmm0, [rsi]
            (byte) 0xF3, 0x0F, 0x6F, 0x4E, 0x10,        //       movdqu xmm1, [rsi+16]
            (byte) 0xF3, 0x0F, 0x6F, 0x56, 0x20,        //       movdqu xmm2, [rsi+32]
            (byte) 0xF3, 0x0F, 0x6F, 0x5E, 0x30,        //       movdqu xmm3, [rsi+48]
            0x66, 0x0F, (byte) 0xE7, 0x07,              //       movntdq [rdi], xmm0
            0x66, 0x0F, (byte) 0xE7, 0x4F, 0x10,        //       movntdq [rdi+16], xmm1
            0x66, 0x0F, (byte) 0xE7, 0x57, 0x20,        //       movntdq [rdi+32], xmm2
            0x66, 0x0F, (byte) 0xE7, 0x5F, 0x30,        //       movntdq [rdi+48], xmm3
            0x48, (byte) 0x83, (byte) 0xC6, 0x40,       //       add rsi, 64
            0x48, (byte) 0x83, (byte) 0xC7, 0x40,       //       add rdi, 64
            0x48, (byte) 0x83, (byte) 0xEA, 0x40,       //       sub rdx, 64
            0x75, (byte) 0xCC,                          //       jnz loop (-52)
            0x0F, (byte) 0xAE, (byte) 0xF8,             //       sfence
            (byte) 0xC3                                 //       ret
    };

    private NonTemporalCopy() {}

    /** Whether copies of at least {@link #MIN_BYTES} write around the caches in this JVM. */
    public static boolean available() {
        return Default.COPIER.loop() != null;
    }

    /**
     * Copies {@code bytes} bytes from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset}, as
     * {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)} does (same bounds, liveness and
     * read-only checks, same exceptions; overlapping ranges and heap segments are copied by it).
     *
     * @param src the source
     * @param srcOffset where the bytes start in {@code src}
     * @param dst the destination
     * @param dstOffset where they go in {@code dst}
     * @param bytes how many bytes
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        Default.COPIER.copy(src, srcOffset, dst, dstOffset, bytes);
    }

    /**
     * {@link NonTemporalCopy#copy(MemorySegment, long, MemorySegment, long, long)} through one loop: this JVM's
     * (the default), or one a test maps.
     *
     * @param loop the {@code (dst, src, n) -> void} loop ({@link #map}), or {@code null}: every copy in Java
     */
    record Copier(MethodHandle loop) {
        /** As {@link NonTemporalCopy#copy(MemorySegment, long, MemorySegment, long, long)}, through {@link #loop}. */
        void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
            if (loop == null || bytes < MIN_BYTES || !src.isNative() || !dst.isNative() || dst.isReadOnly()) {
                MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
                return;
            }
            MemorySegment in = src.asSlice(srcOffset, bytes); // the bounds checks; the downcall keeps both alive
            MemorySegment out = dst.asSlice(dstOffset, bytes);
            if (in.address() < out.address() + bytes && out.address() < in.address() + bytes) {
                MemorySegment.copy(in, 0, out, 0, bytes); // overlapping: the loop copies forwards only
                return;
            }
            long head = -out.address() & 63;
            long body = (bytes - head) & -64L;
            MemorySegment.copy(in, 0, out, 0, head);
            if (body > 0) { // at least MIN_BYTES - 126 bytes; the loop must never see 0
                try {
                    loop.invokeExact(out.asSlice(head, body), in.asSlice(head, body), body);
                } catch (Throwable t) {
                    throw Native.unchecked("non-temporal copy", t);
                }
            }
            MemorySegment.copy(in, head + body, out, head + body, bytes - head - body);
        }
    }

    /** Whether this platform gets the loop: x86-64 Linux, unless the property says {@code false}. */
    static boolean wanted(String osName, String osArch, String property) {
        return osName.toLowerCase(Locale.ROOT).startsWith("linux")
                && (osArch.equals("amd64") || osArch.equals("x86_64"))
                && "true".equalsIgnoreCase(property);
    }

    /**
     * The handle of the {@code (dst, src, n) -> void} function {@code code} ({@link Native#executablePage}),
     * made with {@code critical(false)} (a slice takes tens of microseconds and touches no Java heap).
     *
     * @throws IllegalStateException if the kernel refuses the mapping or the protection change
     */
    static MethodHandle map(byte[] code) {
        return Native.downcall(Native.executablePage(code), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG), Linker.Option.critical(false));
    }

    /** This JVM's copier, made on first use; its loop is {@code null} where this platform or JVM has none. */
    private static final class Default {
        static final Copier COPIER = new Copier(make());

        private static MethodHandle make() {
            if (!wanted(System.getProperty("os.name", ""), System.getProperty("os.arch", ""),
                    System.getProperty(PROPERTY))) {
                return null;
            }
            try {
                return map(X86_64_LOOP);
            } catch (RuntimeException | LinkageError e) {
                System.getLogger("org.devicebridge").log(System.Logger.Level.INFO,
                        "staging copies stay in Java (no non-temporal stores, DMA from staging is slower): " + e);
                return null;
            }
        }
    }
}
