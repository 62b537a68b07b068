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
 * once). An export's {@link State} belongs to its {@link ExportedTensor} until a consumer takes it:
 * <ul>
 *   <li>a native consumer ({@link ExportedTensor#transferOwnership()}): the state is registered and
 *       {@code manager_ctx} holds its registry key; the deleter removes the entry, frees the one malloc
 *       block (struct + shape + strides) and closes the owner the exporter passed. A stale or forged key
 *       finds nothing and is only counted and logged.</li>
 *   <li>this library's own import ({@link DLPack#importTensor}): no native code ever holds the pointer, so
 *       nothing is registered. {@code manager_ctx} holds the struct's own address; the import frees the
 *       block as soon as it has read it (a failed import through the deleter, which then frees only the
 *       block), and the imported tensor's release closes the owner ({@link LocalRelease}).</li>
 * </ul>
 * Until one of these hand-overs {@code manager_ctx} is NULL: a deleter call then finds nothing (a pointer
 * from {@link ExportedTensor#address()} gives no ownership). The deleter never throws.
 */
final class Exports {
    private static final System.Logger LOG = System.getLogger("org.devicebridge.dlpack");

    /** What one export holds; also its handle's release step while no consumer took it. */
    record State(MemorySegment block, AutoCloseable owner, String what) implements AutoCloseable {
        /**
         * Frees the block (kept for this thread's next export: the handle is closed on a Java thread), then
         * closes the owner; never throws (see {@link Exports#release(State, boolean)}).
         */
        @Override
        public void close() {
            Exports.release(this, true);
        }

        /** {@code keep}: the block may be kept for this thread's next export ({@link StructBlocks}). */
        void free(boolean keep) throws Exception {
            try {
                if (keep) {
                    StructBlocks.free(block);
                } else {
                    Native.free(block);
                }
            } finally {
                if (owner != null) {
                    owner.close();
                }
            }
        }
    }

    /**
     * What is left to release of a tensor this library exported and imported itself once the import freed
     * its struct block: the exporter's owner, if any. Never throws: a failing owner is logged, as the
     * deleter does.
     */
    static final class LocalRelease implements AutoCloseable, Runnable {
        /** For an export without an owner: nothing. */
        static final LocalRelease NOTHING = new LocalRelease(null, "");

        private final AutoCloseable owner;
        private final String what;

        private LocalRelease(AutoCloseable owner, String what) {
            this.owner = owner;
            this.what = what;
        }

        /** What releases {@code st} once its block is freed. */
        static LocalRelease of(State st) {
            return st.owner() == null ? NOTHING : new LocalRelease(st.owner(), st.what());
        }

        @Override
        public void close() {
            run();
        }

        @Override
        public void run() {
            if (owner != null) {
                try {
                    owner.close();
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, "releasing the owner of an exported " + what + " failed", t);
                }
            }
        }
    }

    static final ExportRegistry<State> REGISTRY = new ExportRegistry<>();
    /** Deleter calls that found no state (called twice, or a forged manager_ctx); tests read this. */
    static final AtomicLong STRAY_DELETES = new AtomicLong();

    /**
     * The deleter stubs, made on first use (an export, after the native-access check): a class whose
     * initialiser threw would fail with {@code NoClassDefFoundError} for the JVM's life.
     */
    static final class Deleters {
        static final MemorySegment VERSIONED = Native.upcallStub(MethodHandles.lookup(), Exports.class,
                "deleteVersioned", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
        static final MemorySegment LEGACY = Native.upcallStub(MethodHandles.lookup(), Exports.class,
                "deleteLegacy", FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));

        static {
            // A tensor exported here and imported here is deleted by a Java call, not a native round trip.
            LocalCallbacks.register(VERSIONED, Exports::deleteVersioned);
            LocalCallbacks.register(LEGACY, Exports::deleteLegacy);
        }

        private Deleters() {}
    }

    private Exports() {}

    private static void deleteVersioned(MemorySegment self) {
        delete(self, TensorStruct.VERSIONED_SIZE, TensorStruct.V_MANAGER_CTX, "DLManagedTensorVersioned");
    }

    private static void deleteLegacy(MemorySegment self) {
        delete(self, TensorStruct.LEGACY_SIZE, TensorStruct.L_MANAGER_CTX, "DLManagedTensor");
    }

    /** The deleter of either struct kind. Never throws. */
    private static void delete(MemorySegment self, long size, long ctxOffset, String what) {
        try {
            if (self.equals(MemorySegment.NULL)) {
                LOG.log(System.Logger.Level.WARNING, what + " deleter called with NULL");
                return;
            }
            MemorySegment s = self.reinterpret(size);
            long ctx = TensorStruct.pointer(s, ctxOffset);
            if (ctx == s.address()) {
                // handed to this library's own import, which failed: the block is freed here and the owner
                // by DLPack.importTensor. A registry key never equals it (keys count up from 1; a struct
                // lives far above)
                Native.free(s);
                return;
            }
            release(ctx);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, what + " deleter failed", t);
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
        release(st, false); // a deleter may run on a native thread, briefly attached: keep nothing for it
    }

    /**
     * Frees what {@code st} holds: its block, then its owner. Never throws (a failing owner is logged).
     * {@code keep}: as in {@link State#free(boolean)}.
     */
    static void release(State st, boolean keep) {
        try {
            st.free(keep);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "releasing the owner of an exported " + st.what() + " failed", t);
        }
    }
}
