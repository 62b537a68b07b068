package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import org.devicebridge.NativeHandle;

/**
 * A {@code DLManagedTensorVersioned} or legacy {@code DLManagedTensor} this library allocated and filled,
 * whose deleter is a Java upcall. Hand it to a consumer with {@link #transferOwnership()}: from then on
 * only the consumer's call of the deleter frees it (capsule semantics). If no consumer takes it,
 * {@link #close()} frees it as the deleter would: the struct block, and the owner given at export.
 *
 * <p>Thread safety: {@link #transferOwnership()} and {@code close()} may race from any threads; exactly
 * one of them wins (the state moves once).
 */
public final class ExportedTensor extends NativeHandle {
    private final Exports.State state; // the struct is state.block()
    private final boolean versioned;

    ExportedTensor(Exports.State state, boolean versioned) {
        super(versioned ? "exported DLManagedTensorVersioned" : "exported DLManagedTensor", state);
        this.state = state;
        this.versioned = versioned;
    }

    /** {@return {@code true} for a {@code DLManagedTensorVersioned}, {@code false} for a legacy {@code DLManagedTensor}} */
    public boolean isVersioned() {
        return versioned;
    }

    /**
     * {@return the struct's address, for inspection while this handle still owns it; ownership does not move}
     *
     * @throws org.devicebridge.HandleClosedException if the handle was closed or transferred
     */
    public MemorySegment address() {
        ensureLive();
        return MemorySegment.ofAddress(state.block().address());
    }

    /**
     * Gives the struct to a consumer: the handle becomes CONSUMED first, then the pointer is returned. After
     * a return the consumer owns the tensor and must call its deleter exactly once; this handle never frees
     * it. After a throw (the handle was not live) nothing changed hands.
     *
     * @return the {@code DLManagedTensorVersioned*} or {@code DLManagedTensor*}, now the consumer's
     * @throws org.devicebridge.HandleClosedException if the handle was closed or already transferred
     */
    public MemorySegment transferOwnership() {
        long key = Exports.REGISTRY.register(state); // first: after markConsumed() nothing may fail
        try {
            markConsumed();
        } catch (RuntimeException | Error e) {
            Exports.REGISTRY.remove(key); // nobody saw the key: manager_ctx is written below
            throw e;
        }
        handOver(key);
        return MemorySegment.ofAddress(state.block().address());
    }

    /**
     * Gives the struct to this library's own import ({@link DLPack#importTensor}): the handle becomes
     * CONSUMED first, and nothing is registered (see {@link Exports}). After a return the caller owns the
     * returned state; after a throw (the handle was not live) nothing changed hands.
     */
    Exports.State transferToImport() {
        markConsumed();
        handOver(state.block().address());
        return state;
    }

    /** Writes {@code manager_ctx}: what the deleter finds the export's state by. */
    private void handOver(long ctx) {
        TensorStruct.pointer(state.block(), versioned ? TensorStruct.V_MANAGER_CTX : TensorStruct.L_MANAGER_CTX, ctx);
    }
}
