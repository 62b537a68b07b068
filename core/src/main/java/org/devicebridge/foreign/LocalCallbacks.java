package org.devicebridge.foreign;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The release and deleter upcall stubs this library creates, each with the Java method behind it, so that
 * a struct exported here and imported here is released by a plain Java call instead of a downcall into
 * the stub and an upcall back (the same code runs either way; the native round trip is the cost saved).
 * A handful of entries, registered once by the classes that make the stubs; read without locking.
 */
public final class LocalCallbacks {
    private static volatile Entry[] entries = new Entry[0];

    private record Entry(long stub, Consumer<MemorySegment> handler) {}

    private LocalCallbacks() {}

    /** Declares that calling {@code stub} with a struct pointer runs {@code handler} with it. */
    public static synchronized void register(MemorySegment stub, Consumer<MemorySegment> handler) {
        Objects.requireNonNull(stub, "stub");
        Objects.requireNonNull(handler, "handler");
        Entry[] grown = Arrays.copyOf(entries, entries.length + 1);
        grown[grown.length - 1] = new Entry(stub.address(), handler);
        entries = grown;
    }

    /** The Java method behind {@code callback}, or {@code null} if it is not one of this library's stubs. */
    static Consumer<MemorySegment> find(long callback) {
        for (Entry e : entries) {
            if (e.stub == callback) {
                return e.handler;
            }
        }
        return null;
    }
}
