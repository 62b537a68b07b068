package org.devicebridge.concurrency;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Runs a C callback on a thread the JVM did not create: {@code pthread_create} with the callback as start
 * routine, then {@code pthread_join}. A release callback {@code void (*)(T*)} is call-compatible with a start
 * routine {@code void* (*)(void*)} on x86-64 and aarch64 (argument in the first register, the return register
 * ignored by a joiner that passes NULL for the result).
 */
final class NativeThreads {
    private NativeThreads() {}

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle CREATE = LINKER.downcallHandle(LINKER.defaultLookup().find("pthread_create").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    private static final MethodHandle JOIN = LINKER.downcallHandle(LINKER.defaultLookup().find("pthread_join").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));

    /** Calls {@code fn(arg)} on a new native thread and waits for it to end. */
    static void runOnNativeThread(MemorySegment fn, MemorySegment arg) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment tid = arena.allocate(ValueLayout.JAVA_LONG);
            int rc = (int) CREATE.invokeExact(tid, MemorySegment.NULL, fn, arg);
            if (rc != 0) {
                throw new IllegalStateException("pthread_create failed: " + rc);
            }
            rc = (int) JOIN.invokeExact(tid.get(ValueLayout.JAVA_LONG, 0), MemorySegment.NULL);
            if (rc != 0) {
                throw new IllegalStateException("pthread_join failed: " + rc);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Calls {@code fn(arg)} on the current thread (a consumer releasing from Java). */
    static void call(MemorySegment fn, MemorySegment arg) {
        try {
            VOID_PTR.invokeExact(fn, arg);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static final MethodHandle VOID_PTR = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
}
