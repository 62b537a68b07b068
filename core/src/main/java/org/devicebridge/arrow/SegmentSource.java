package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/**
 * Hands out segments over the host buffers of a view, bounded by the lifetime of the handle that owns the
 * memory (its arena), and checks that handle is live.
 */
interface SegmentSource {
    /** A segment of {@code byteSize} bytes at {@code address} in the owner's arena. */
    MemorySegment segment(long address, long byteSize);

    /** Throws the owner's closed exception unless it is live. */
    void ensureLive();
}
