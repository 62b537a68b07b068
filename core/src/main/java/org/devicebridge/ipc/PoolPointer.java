package org.devicebridge.ipc;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * An allocation of an IPC-shareable pool, as an {@link IpcBatchDescriptor} of format version 2 names it: the
 * pool's index among those the reader imported, and the allocation's {@code CUmemPoolPtrExportData}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param pool the pool's index, in {@code [0, IpcBatchDescriptor.MAX_POOLS)}
 * @param pointer the 64 bytes of {@code cuMemPoolExportPointer}
 */
record PoolPointer(int pool, byte[] pointer) {
    /**
     * Copies the bytes and checks them.
     *
     * @throws ValidationException {@code SIZE} for a pool index out of range, {@code STRUCTURE} for a pointer
     *         that is not 64 bytes
     */
    public PoolPointer {
        Objects.requireNonNull(pointer, "pointer");
        if (pool < 0 || pool >= IpcBatchDescriptor.MAX_POOLS) {
            throw new ValidationException(Category.SIZE, "pool", "expected a pool index in [0, "
                    + IpcBatchDescriptor.MAX_POOLS + ") but found " + pool);
        }
        if (pointer.length != IpcBatchDescriptor.HANDLE_SIZE) {
            throw new ValidationException(Category.STRUCTURE, "pointer", "expected " + IpcBatchDescriptor.HANDLE_SIZE
                    + " bytes but found " + pointer.length);
        }
        pointer = pointer.clone();
    }

    /** {@return the 64 bytes (a copy)} */
    @Override
    public byte[] pointer() {
        return pointer.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PoolPointer p && p.pool == pool && Arrays.equals(p.pointer, pointer);
    }

    @Override
    public int hashCode() {
        return 31 * pool + Arrays.hashCode(pointer);
    }

    @Override
    public String toString() {
        return "PoolPointer[" + pool + ", " + HexFormat.of().formatHex(pointer) + "]";
    }
}

