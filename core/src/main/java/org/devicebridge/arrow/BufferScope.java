package org.devicebridge.arrow;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.HandleClosedException;

/**
 * The lifetime of the buffer segments of one imported array. The shared arena is created lazily, on the
 * first {@link ArrayNode#buffer} call: closing a shared arena costs a thread handshake, so a batch whose
 * buffers are never viewed as segments (read through Arrow Java, or only passed on by address) never
 * pays for one. Never refers to the handle that owns it (it is captured by the handle's release action).
 */
final class BufferScope {
    private final String description;
    private Arena arena;
    private boolean closed;

    BufferScope(String description) {
        this.description = description;
    }

    /** A read-only segment of {@code length} bytes at {@code address}, unusable once this scope closes. */
    synchronized MemorySegment segment(long address, long length) {
        if (closed) {
            throw new HandleClosedException(description + " is closed");
        }
        if (arena == null) {
            arena = Arena.ofShared();
        }
        return MemorySegment.ofAddress(address).reinterpret(length, arena, null).asReadOnly();
    }

    synchronized void close() {
        closed = true;
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }
}
