package org.devicebridge.arrow.cuda;

import java.util.Arrays;
import java.util.Locale;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * One batch of device-to-host copies, planned without the driver: which allocation holds each requested
 * range, the requested ranges sorted and merged where they overlap or lie less than {@value #ALIGNMENT}
 * bytes apart inside one allocation (so the buffers of an uploaded batch, packed at aligned offsets, come
 * back in one copy), and
 * where each merged range lands in one host block. A merged range keeps its device address's position
 * modulo {@value #ALIGNMENT} in the block, so a buffer is as aligned on the host as on the device.
 */
final class CopyPlan {
    /** The alignment whose residue a host copy keeps (the Arrow buffer alignment). */
    static final int ALIGNMENT = 64;

    private final long[] addresses; // merged ranges, sorted by device address
    private final long[] sizes;
    private final int[] allocations; // the allocation holding each merged range
    private final long[] hostOffsets; // where each merged range starts in the host block
    private final int count;
    private final long hostBytes;

    private CopyPlan(long[] addresses, long[] sizes, int[] allocations, long[] hostOffsets, int count, long hostBytes) {
        this.addresses = addresses;
        this.sizes = sizes;
        this.allocations = allocations;
        this.hostOffsets = hostOffsets;
        this.count = count;
        this.hostBytes = hostBytes;
    }

    /**
     * Plans copies of {@code byteSizes[i]} bytes at {@code addresses[i]} (ranges of no bytes are skipped)
     * out of the allocations {@code [allocationStarts[k], + allocationSizes[k])}, sorted by start.
     *
     * @throws ValidationException {@link Category#DEVICE} if a range does not lie inside one allocation
     */
    static CopyPlan of(long[] allocationStarts, long[] allocationSizes, long[] addresses, long[] byteSizes) {
        int n = addresses.length;
        if (byteSizes.length != n || allocationSizes.length != allocationStarts.length) {
            throw new IllegalArgumentException("expected matching array lengths");
        }
        Integer[] order = new Integer[n];
        int requested = 0;
        for (int i = 0; i < n; i++) {
            if (byteSizes[i] > 0) {
                order[requested++] = i;
            }
        }
        Integer[] sorted = Arrays.copyOf(order, requested);
        Arrays.sort(sorted, (a, b) -> Long.compare(addresses[a], addresses[b]));
        long[] starts = new long[requested];
        long[] lengths = new long[requested];
        int[] holders = new int[requested];
        int count = 0;
        for (Integer boxed : sorted) {
            int i = boxed;
            long address = addresses[i];
            long size = byteSizes[i];
            int holder = holder(allocationStarts, allocationSizes, address, size);
            if (holder < 0) {
                throw new ValidationException(Category.DEVICE, "buffers", String.format(Locale.ROOT,
                        "expected %d bytes at 0x%x within one device allocation of the array but found none", size,
                        address));
            }
            if (count > 0 && holders[count - 1] == holder && address - starts[count - 1] < lengths[count - 1] + ALIGNMENT) {
                // overlaps the previous range of the same allocation or follows it within ALIGNMENT bytes: one
                // copy for both (the bytes between them lie in that allocation); a packed batch is one copy
                lengths[count - 1] = Math.max(lengths[count - 1], address - starts[count - 1] + size);
                continue;
            }
            starts[count] = address;
            lengths[count] = size;
            holders[count] = holder;
            count++;
        }
        long[] hostOffsets = new long[count];
        long end = 0;
        for (int k = 0; k < count; k++) {
            long aligned = Math.addExact(end, ALIGNMENT - 1) & -ALIGNMENT;
            hostOffsets[k] = aligned + (starts[k] & (ALIGNMENT - 1));
            end = Math.addExact(hostOffsets[k], lengths[k]);
        }
        return new CopyPlan(starts, lengths, holders, hostOffsets, count, end);
    }

    /**
     * The index of an allocation {@code [starts[k], + sizes[k])} (sorted by start) that holds
     * {@code [address, address + size)}, or {@code -1} if none does: the one containment rule of a device
     * array's buffers.
     */
    static int holder(long[] starts, long[] sizes, long address, long size) {
        int k = Arrays.binarySearch(starts, address);
        k = k >= 0 ? k : -k - 2; // the last allocation starting at or before the address
        for (; k >= 0; k--) { // allocations may overlap (buffers the driver knows no range for)
            long into = address - starts[k];
            if (into >= 0 && into <= sizes[k] && size <= sizes[k] - into) {
                return k;
            }
        }
        return -1;
    }

    /** Number of copies (merged ranges). */
    int count() {
        return count;
    }

    /** The device address where copy {@code k} starts. */
    long address(int k) {
        return addresses[k];
    }

    /** The bytes copy {@code k} moves. */
    long size(int k) {
        return sizes[k];
    }

    /** The index of the allocation copy {@code k} reads from. */
    int allocation(int k) {
        return allocations[k];
    }

    /** Where copy {@code k} lands in the host block. */
    long hostOffset(int k) {
        return hostOffsets[k];
    }

    /** The size of the host block every copy lands in (to be allocated {@value #ALIGNMENT}-byte aligned). */
    long hostBytes() {
        return hostBytes;
    }

    /**
     * Where the host copy of {@code [address, address + size)} starts in the host block, or {@code -1} if
     * no copy covers the range.
     */
    long find(long address, long size) {
        if (size < 0) {
            return -1;
        }
        int k = Arrays.binarySearch(addresses, 0, count, address);
        if (k >= 0) {
            while (k + 1 < count && addresses[k + 1] == address) {
                k++;
            }
        } else {
            k = -k - 2;
        }
        for (; k >= 0; k--) { // from the last copy starting at or before the address: copies may overlap
            long into = address - addresses[k];
            if (into <= sizes[k] && size <= sizes[k] - into) {
                return hostOffsets[k] + into;
            }
        }
        return -1;
    }
}
