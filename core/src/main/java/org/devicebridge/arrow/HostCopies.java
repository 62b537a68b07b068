package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;

/**
 * Host copies of some device memory, through which validation reads the contents of a device array's
 * buffers (offsets, type ids, run ends, views, dictionary indices, UTF-8 data).
 *
 * <p>Read on the importing thread during that import only; the {@link DeviceCopier} that made it owns the
 * copies and must keep them valid until the import returns.
 */
@FunctionalInterface
public interface HostCopies {
    /**
     * A host segment holding the {@code byteSize} bytes that lie at {@code deviceAddress} on the device,
     * or {@code null} if no copy covers that range.
     *
     * @param deviceAddress where the range starts on the device
     * @param byteSize the range's size in bytes
     * @return the host copy of the range (borrowed), or {@code null}
     */
    MemorySegment find(long deviceAddress, long byteSize);
}
