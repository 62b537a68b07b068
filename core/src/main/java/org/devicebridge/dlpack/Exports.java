package org.devicebridge.dlpack;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.foreign.LocalCallbacks;
import org.devicebridge.internal.ExportRegistry;
import org.devicebridge.internal.Native;

/**
 * State of every tensor this library exported and the two deleter upcalls (one per struct kind, created
 * once). {@code manager_ctx} holds the registry key; the deleter removes the entry, frees the one malloc
 * block (struct + shape + strides) and closes the owner the exporter passed. It never throws.
 */
final class Exports {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.dlpack");

    /** What one export holds. */
    record State(MemorySegment block, AutoCloseable owner, String what) {
        void free() throws Exception {
            try {
                Native.free(block);
            } finally {
                if (owner != null) {
                    owner.close();
                }
            }
        }
    }

    static final ExportRegistry<State> REGISTRY = new ExportRegistry<>();
    /** Deleter calls that found no state (called twice, or a forged manager_ctx); tests read this. */
    static final AtomicLong STRAY_DELETES = new AtomicLong();

    static final MemorySegment DELETE_VERSIONED = Native.upcallStub(MethodHandles.lookup(), Exports.class,
            "deleteVersioned", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    static final MemorySegment DELETE_LEGACY = Native.upcallStub(MethodHandles.lookup(), Exports.class,
            "deleteLegacy", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

    static {
        // A tensor exported here and imported here is deleted by a Java call, not a native round trip.
        LocalCallbacks.register(DELETE_VERSIONED, Exports::deleteVersioned);
        LocalCallbacks.register(DELETE_LEGACY, Exports::deleteLegacy);
    }

    private Exports() {}

    private static void deleteVersioned(MemorySegment self) {
        try {
            if (self.equals(MemorySegment.NULL)) {
                LOG.log(System.Logger.Level.WARNING, "DLManagedTensorVersioned deleter called with NULL");
                return;
            }
            release(TensorStruct.pointer(self.reinterpret(TensorStruct.VERSIONED_SIZE), TensorStruct.V_MANAGER_CTX));
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "DLManagedTensorVersioned deleter failed", t);
        }
    }

    private static void deleteLegacy(MemorySegment self) {
        try {
            if (self.equals(MemorySegment.NULL)) {
                LOG.log(System.Logger.Level.WARNING, "DLManagedTensor deleter called with NULL");
                return;
            }
            release(TensorStruct.pointer(self.reinterpret(TensorStruct.LEGACY_SIZE), TensorStruct.L_MANAGER_CTX));
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "DLManagedTensor deleter failed", t);
        }
    }

    /** Frees what export {@code key} holds, once; later calls only log. Never throws. */
    static void release(long key) {
        State st = REGISTRY.remove(key);
        if (st == null) {
            STRAY_DELETES.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "DLPack deleter called for an unknown or already deleted export (manager_ctx "
                    + key + "); ignored");
            return;
        }
        try {
            st.free();
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "releasing the owner of an exported " + st.what() + " failed", t);
        }
    }
}
