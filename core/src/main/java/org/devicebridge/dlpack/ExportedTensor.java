package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import org.devicebridge.NativeHandle;

/**
 * A {@code DLManagedTensorVersioned} or legacy {@code DLManagedTensor} this library allocated and filled,
 * whose deleter is a Java upcall. Hand it to a consumer with {@link #transferOwnership()}: from then on
 * only the consumer's call of the deleter frees it (capsule semantics). If no consumer takes it,
 * {@link #close()} frees it as the deleter would: the struct block, and the owner given at export.
 */
public final class ExportedTensor extends NativeHandle {
    private final MemorySegment struct;
    private final boolean versioned;

    ExportedTensor(MemorySegment struct, long key, boolean versioned) {
        super(versioned ? "exported DLManagedTensorVersioned" : "exported DLManagedTensor", () -> Exports.release(key));
        this.struct = struct;
        this.versioned = versioned;
    }

    /** {@code true} for a {@code DLManagedTensorVersioned}, {@code false} for a legacy {@code DLManagedTensor}. */
    public boolean isVersioned() {
        return versioned;
    }

    /**
     * The struct's address, for inspection while this handle still owns it; ownership does not move.
     *
     * @throws org.devicebridge.HandleClosedException if the handle was closed or transferred
     */
    public MemorySegment address() {
        ensureLive();
        return MemorySegment.ofAddress(struct.address());
    }

    /**
     * Gives the struct to a consumer: the handle becomes CONSUMED first, then the pointer is returned. After
     * a return the consumer owns the tensor and must call its deleter exactly once; this handle never frees
     * it. After a throw (the handle was not live) nothing changed hands.
     *
     * @throws org.devicebridge.HandleClosedException if the handle was closed or already transferred
     */
    public MemorySegment transferOwnership() {
        markConsumed();
        return MemorySegment.ofAddress(struct.address());
    }
}
