package org.devicebridge.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Calls C function pointers found in foreign structs. Hand-linked because the pointer is only known at
 * run time; the one shape every release/deleter callback has is {@code void (*)(T*)}.
 */
public final class Callbacks {
    private Callbacks() {}

    /** Made on first use, after the access check: a failed class initialisation would last the JVM's life. */
    private static final class Handle {
        static final MethodHandle VOID_POINTER = Native.LINKER.downcallHandle(FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    }

    /**
     * Calls {@code fn(arg)} where {@code fn} is {@code void (*)(void*)}. A failure is a JDK exception (see
     * {@link Native}); callers in the public packages translate it.
     */
    public static void invokeVoidPointer(MemorySegment fn, MemorySegment arg) {
        NativeAccess.require();
        try {
            Handle.VOID_POINTER.invokeExact(fn, arg);
        } catch (Throwable t) {
            throw Native.unchecked("release callback", t);
        }
    }
}
