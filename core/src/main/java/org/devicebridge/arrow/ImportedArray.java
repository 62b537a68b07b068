package org.devicebridge.arrow;

import java.lang.foreign.MemorySegment;
import org.devicebridge.NativeHandle;
import org.devicebridge.internal.ForeignImport;

/**
 * An {@code ArrowArray} (or {@code ArrowDeviceArray}) taken from native code and validated. Owns the
 * moved struct and calls its {@code release} exactly once: on {@link #close()}, or, after the array was
 * handed to Arrow Java with {@link org.devicebridge.arrow.java.ArrowJavaImport}, when the last Arrow buffer
 * is released.
 *
 * <p>Lifetime of segments: {@link ArrayNode#buffer(int)} segments belong to a shared arena that is created
 * only when the first such segment is asked for and closed by {@link #close()}, so segments cannot be used
 * after the memory is released, while a batch read in other ways never pays for a shared-arena close.
 * Closing may fail (and is then logged) if another thread is accessing a segment at that moment.
 */
public final class ImportedArray extends NativeHandle {
    private final ArrayNode root;
    private final Owner owner;
    private final ArrowDeviceType deviceType;
    private final long deviceId;
    private final long syncEvent;
    private final ValidationLevel level;

    /** What the handle releases: the arena of the segments, then the struct. Never refers to the handle. */
    static final class Owner {
        final ForeignImport.Kind kind;
        final MemorySegment owned;
        final BufferScope scope;

        Owner(ForeignImport.Kind kind, MemorySegment owned, BufferScope scope) {
            this.kind = kind;
            this.owned = owned;
            this.scope = scope;
        }

        void release() {
            try {
                scope.close();
            } finally {
                kind.release(owned);
            }
        }
    }

    ImportedArray(Owner owner, ArrayNode root, ArrowDeviceType deviceType, long deviceId, long syncEvent,
                  ValidationLevel level) {
        super(owner.kind == ForeignImport.Kind.ARROW_DEVICE_ARRAY ? "imported ArrowDeviceArray" : "imported ArrowArray",
                owner::release);
        this.owner = owner;
        this.root = root;
        this.deviceType = deviceType;
        this.deviceId = deviceId;
        this.syncEvent = syncEvent;
        this.level = level;
    }

    /** The level this array was validated at. */
    public ValidationLevel validationLevel() {
        return level;
    }

    /**
     * The validated root node.
     *
     * @throws org.devicebridge.HandleClosedException if the array was closed or handed to Arrow Java
     */
    public ArrayNode root() {
        ensureLive();
        return root;
    }

    /** {@link ArrowDeviceType#CPU} for plain {@code ArrowArray} imports, else the producer's device type. */
    public ArrowDeviceType deviceType() {
        return deviceType;
    }

    /** The producer's device id ({@code -1} for a plain {@code ArrowArray}). */
    public long deviceId() {
        return deviceId;
    }

    /**
     * The producer's sync event pointer (for CUDA a pointer to a {@code CUevent}) as a zero-length segment,
     * {@link MemorySegment#NULL} when there is none. Borrowed: valid while this array is live.
     */
    public MemorySegment syncEvent() {
        return MemorySegment.ofAddress(syncEvent);
    }

    /** Passes ownership of the struct to a consumer (Arrow Java), which must call {@link Owner#release()} once. */
    Owner transfer() {
        markConsumed();
        return owner;
    }

    /** The root node, without a liveness check, for a consumer that has just taken ownership. */
    ArrayNode rootUnchecked() {
        return root;
    }
}
