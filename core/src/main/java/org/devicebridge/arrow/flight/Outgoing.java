package org.devicebridge.arrow.flight;

import java.util.Iterator;
import java.util.Objects;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;

/**
 * What a served stream or a put sends: the items, the allocator its stream root is made in, and how each item
 * becomes a host root. A root {@code toHost} makes (a device batch's download) is the sender's to close once it
 * was sent; one it passes through (the caller's own root) stays the caller's. Names no Flight type.
 *
 * @param items the items, sent in order (borrowed)
 * @param allocator the allocator of the stream root, whose root allocator the host roots' memory must share
 * @param toHost makes an item host-resident
 */
record Outgoing<T>(Iterator<? extends T> items, BufferAllocator allocator,
                   Function<? super T, VectorSchemaRoot> toHost) {

    /**
     * Device batches, each downloaded on {@code copies}' stream into its allocator (one DMA, direct where the
     * allocator is pinned).
     *
     * @throws NullPointerException if {@code copies} is null
     * @throws org.devicebridge.InvalidArgumentException if {@code copies} is incomplete
     */
    static Outgoing<CudaArrowBatch> devices(Iterator<? extends CudaArrowBatch> batches, DeviceCopies copies) {
        Objects.requireNonNull(copies, "copies").requireComplete();
        return new Outgoing<>(batches, copies.allocator(), FlightCalls.download(copies));
    }

    /** Host roots, sent as they are (their buffers become the stream root's without a copy). */
    static Outgoing<VectorSchemaRoot> roots(Iterator<? extends VectorSchemaRoot> roots, BufferAllocator allocator) {
        return new Outgoing<>(roots, allocator, Function.identity());
    }
}
