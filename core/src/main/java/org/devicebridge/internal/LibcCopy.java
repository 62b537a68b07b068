package org.devicebridge.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Large host copies between native segments, made with libc's {@code memcpy} where glibc has been told to
 * use non-temporal stores for them, and with {@link MemorySegment#copy} everywhere else.
 *
 * <p>Why: a staging chunk that 16 threads have just packed sits dirty in 16 cores' private caches, and the
 * copy engine's DMA reads of it then run at about half the link's rate (measured on the H100 machine: 18 MiB
 * after a 16-thread pack at 28-34 GB/s, with no pack before it at 51 GB/s). Non-temporal stores write around
 * the caches, and the DMA afterwards ran at 49-50 GB/s. Java has no non-temporal store; glibc's x86-64
 * {@code memcpy} uses them for copies from {@code glibc.cpu.x86_non_temporal_threshold} bytes, a tunable
 * that is read once at process start from the {@code GLIBC_TUNABLES} environment variable (its default
 * is derived from the cache size: 151 MiB on the H100 machine, far above a staging slice). So this class
 * reads the same variable, and uses {@code memcpy} for copies of at least that many bytes only when the
 * user set it; without it {@link MemorySegment#copy} is as fast and stays in Java. Only the upload's packing
 * uses it: an unpacked download is read by the caller next (the Arrow bridge's offset checks at once), and
 * wants its lines cached (measured: the self-check batch's pageable download took 1.6 ms with non-temporal
 * unpacking, 1.1 ms without).
 *
 * <p>Stateless and thread-safe.
 */
public final class LibcCopy {
    /** glibc's name of the tunable. */
    static final String TUNABLE = "glibc.cpu.x86_non_temporal_threshold";
    /** glibc ignores a value below this (its minimum for the tunable). */
    static final long GLIBC_MINIMUM = 0x4040;
    /** Copies from this many bytes go to {@code memcpy}; {@code Long.MAX_VALUE}: none. */
    private static final long FROM = threshold(System.getenv("GLIBC_TUNABLES"),
            System.getProperty("os.name", ""), System.getProperty("os.arch", ""));

    private LibcCopy() {}

    /**
     * The bytes from which copies use glibc's non-temporal {@code memcpy}, or {@code Long.MAX_VALUE} when
     * they do not: the value of {@value #TUNABLE} in {@code tunables} (the {@code GLIBC_TUNABLES} syntax,
     * {@code name=value} pairs joined by {@code ':'}; decimal or {@code 0x} hexadecimal) on x86-64 Linux,
     * if glibc would accept it (at least {@value #GLIBC_MINIMUM}).
     *
     * @param tunables the environment variable's value, or {@code null} when unset
     * @param osName the {@code os.name} property
     * @param osArch the {@code os.arch} property
     * @return the threshold in bytes, or {@code Long.MAX_VALUE}
     */
    static long threshold(String tunables, String osName, String osArch) {
        boolean x86Linux = osName.toLowerCase(Locale.ROOT).startsWith("linux")
                && (osArch.equals("amd64") || osArch.equals("x86_64"));
        if (tunables == null || !x86Linux) {
            return Long.MAX_VALUE;
        }
        long found = Long.MAX_VALUE;
        for (String pair : tunables.split(":")) {
            int eq = pair.indexOf('=');
            if (eq > 0 && pair.substring(0, eq).trim().equals(TUNABLE)) {
                found = parse(pair.substring(eq + 1).trim()); // the last one wins, as in glibc
            }
        }
        return found;
    }

    private static long parse(String value) {
        try {
            boolean hex = value.startsWith("0x") || value.startsWith("0X");
            long v = hex ? Long.parseUnsignedLong(value.substring(2), 16) : Long.parseLong(value);
            return v >= GLIBC_MINIMUM ? v : Long.MAX_VALUE;
        } catch (NumberFormatException e) {
            return Long.MAX_VALUE;
        }
    }

    /**
     * Copies {@code bytes} bytes from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset}, as
     * {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)} does (same bounds, liveness and
     * read-only checks, same exceptions; overlapping ranges are copied by {@link MemorySegment#copy}).
     *
     * @param src the source
     * @param srcOffset where the bytes start in {@code src}
     * @param dst the destination
     * @param dstOffset where they go in {@code dst}
     * @param bytes how many bytes
     */
    public static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
        copy(src, srcOffset, dst, dstOffset, bytes, FROM);
    }

    /** {@link #copy(MemorySegment, long, MemorySegment, long, long)} with {@code memcpy} from {@code from} bytes. */
    static void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes, long from) {
        if (bytes < from || !src.isNative() || !dst.isNative() || dst.isReadOnly()) {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
            return;
        }
        MemorySegment in = src.asSlice(srcOffset, bytes); // the bounds checks; the downcall keeps both alive
        MemorySegment out = dst.asSlice(dstOffset, bytes);
        if (in.address() < out.address() + bytes && out.address() < in.address() + bytes) {
            MemorySegment.copy(in, 0, out, 0, bytes); // overlapping: memcpy's result would be undefined
            return;
        }
        try {
            MemorySegment ignored = (MemorySegment) Memcpy.HANDLE.invokeExact(out, in, bytes);
        } catch (Throwable t) {
            throw Native.unchecked("memcpy", t);
        }
    }

    /** The downcall, made on first use (never where the tunable is unset). */
    private static final class Memcpy {
        static final MethodHandle HANDLE = Native.libc("memcpy",
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG),
                Linker.Option.critical(false));
    }
}
