package org.devicebridge.lifetime;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import org.devicebridge.testing.CompiledC;

/**
 * The native side of the lifetime tests, {@code src/test/c/hold_segment.c}: a native call that holds a
 * segment while it calls back into Java, and producers that count their releases and poison their data
 * on release. Tests call {@link #require()} first: without gcc they are skipped with the reason.
 */
final class HoldSegment {
    private HoldSegment() {}

    private static final CompiledC LIB = CompiledC.load("hold_segment");

    /** What {@code hs_hold_and_call} saw: the sum of the bytes before its callback, and after it. */
    record Sums(long before, long after) {}

    /** Skips the calling test, with the reason, where the C file could not be built. */
    static void require() {
        assumeTrue(LIB.isAvailable(), () -> "hold_segment.c not available: " + LIB.unavailableReason());
    }

    // ---- the native call that holds a segment ----

    private static volatile Runnable inside;
    private static volatile Throwable insideFailure;
    private static final MemorySegment CALLBACK;

    static {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(HoldSegment.class, "callback",
                    MethodType.methodType(void.class));
            CALLBACK = Linker.nativeLinker().upcallStub(target, FunctionDescriptor.ofVoid(), Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The upcall: runs the test's action; never lets an exception reach native code (that would end the JVM). */
    private static void callback() {
        try {
            inside.run();
        } catch (Throwable t) {
            insideFailure = t;
        }
    }

    /**
     * Calls {@code hs_hold_and_call(data, data.byteSize(), callback, &second)}: the native code sums the
     * bytes of {@code data} (a segment passed by reference, so the FFM linker keeps its scope acquired for
     * the whole call), runs {@code whileHeld} through an upcall on this thread, and sums again. An
     * exception thrown by {@code whileHeld} is rethrown here, after the call returned.
     *
     * @throws IllegalStateException from the FFM linker if {@code data}'s scope is already closed
     */
    static synchronized Sums holdAndCall(MemorySegment data, Runnable whileHeld) {
        inside = whileHeld;
        insideFailure = null;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment second = arena.allocate(JAVA_LONG);
            long first = (long) fn("hs_hold_and_call", FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS))
                    .invokeExact(data, data.byteSize(), CALLBACK, second);
            Throwable failure = insideFailure;
            if (failure != null) {
                throw new AssertionError("the action inside the native call threw", failure);
            }
            return new Sums(first, second.get(JAVA_LONG, 0));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        } finally {
            inside = null;
        }
    }

    /** The sum of the bytes of a block made with {@code seed}: byte {@code i} is {@code seed + 7 i} (mod 256). */
    static long expectedSum(long n, int seed) {
        long s = 0;
        for (long i = 0; i < n; i++) {
            s += (seed + i * 7) & 0xff;
        }
        return s;
    }

    /** Writes the pattern of {@link #expectedSum} into {@code target} (for memory no C producer made). */
    static void fill(MemorySegment target, int seed) {
        for (long i = 0; i < target.byteSize(); i++) {
            target.set(JAVA_BYTE, i, (byte) (seed + i * 7));
        }
    }

    // ---- the counting, poisoning producers ----

    /** Releases and deleter calls of the data made with {@code seed}. */
    static long releasesOf(int seed) {
        return (long) call("hs_releases_of", FunctionDescriptor.of(JAVA_LONG, JAVA_BYTE), (byte) seed);
    }

    /** Releases of the producer's streams. */
    static long streamReleases() {
        return (long) call("hs_stream_releases", FunctionDescriptor.of(JAVA_LONG));
    }

    /** Frees the poisoned blocks of released data; call when no test segment refers to them any more. */
    static void freeReleased() {
        if (LIB.isAvailable()) {
            call("hs_free_released", FunctionDescriptor.ofVoid());
        }
    }

    static void makeSchema(MemorySegment arrowSchema) {
        call("hs_make_schema", FunctionDescriptor.ofVoid(ADDRESS), arrowSchema);
    }

    static void makeArray(MemorySegment arrowArray, long n, int seed) {
        call("hs_make_array", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_BYTE), arrowArray, n, (byte) seed);
    }

    static void makeCpuDeviceArray(MemorySegment arrowDeviceArray, long n, int seed) {
        call("hs_make_cpu_device_array", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_BYTE),
                arrowDeviceArray, n, (byte) seed);
    }

    static void makeStream(MemorySegment arrowArrayStream, int batches, long n, int seed) {
        call("hs_make_stream", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_BYTE),
                arrowArrayStream, batches, n, (byte) seed);
    }

    /** A new heap {@code DLManagedTensorVersioned*} (1.0) of {@code n} uint8 elements; its deleter frees it. */
    static MemorySegment makeVersioned(long n, int seed) {
        return (MemorySegment) call("hs_make_versioned", FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_BYTE), n, (byte) seed);
    }

    /** A new heap legacy {@code DLManagedTensor*} of {@code n} uint8 elements; its deleter frees it. */
    static MemorySegment makeLegacy(long n, int seed) {
        return (MemorySegment) call("hs_make_legacy", FunctionDescriptor.of(ADDRESS, JAVA_LONG, JAVA_BYTE), n, (byte) seed);
    }

    private static MethodHandle fn(String name, FunctionDescriptor fd) {
        return LIB.function(name, fd);
    }

    private static Object call(String name, FunctionDescriptor fd, Object... args) {
        try {
            return fn(name, fd).invokeWithArguments(args);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(name, t);
        }
    }
}
