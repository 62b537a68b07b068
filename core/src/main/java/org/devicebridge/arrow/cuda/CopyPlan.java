package org.devicebridge.arrow.cuda;

import java.util.Arrays;
import java.util.Locale;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.internal.CopyRuns;

/**
 * One batch of device-to-host copies, planned without the driver: which allocation holds each requested
 * range, the requested ranges joined by the one joining rule ({@link CopyRuns}: inside one allocation, where they
 * overlap or lie less than {@value CopyRuns#GAP} bytes apart, so the buffers of an uploaded batch come back in one
 * copy), and where each joined range lands in one host block. A joined range keeps its device address's position
 * modulo {@value #ALIGNMENT} in the block, so a buffer is as aligned on the host as on the device.
 */
final class CopyPlan {
    /** The alignment whose residue a host copy keeps (the Arrow buffer alignment). */
    static final int ALIGNMENT = CopyRuns.GAP;

    private final long[] addresses; // joined ranges, sorted by device address
    private final long[] sizes;
    private final int[] allocations; // the allocation holding each joined range
    private final long[] hostOffsets; // where each joined range starts in the host block
    private final int count;
    private final long hostBytes;

    private CopyPlan(CopyRuns runs, long[] hostOffsets, long hostBytes) {
        this.count = runs.count();
        this.addresses = new long[count];
        this.sizes = new long[count];
        this.allocations = new int[count];
        for (int k = 0; k < count; k++) {
            addresses[k] = runs.start(k);
            sizes[k] = runs.length(k);
            allocations[k] = (int) runs.group(k);
        }
        this.hostOffsets = hostOffsets;
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
        long[] holders = new long[n];
        for (int i = 0; i < n; i++) {
            if (byteSizes[i] > 0) {
                holders[i] = holder(allocationStarts, allocationSizes, addresses[i], byteSizes[i]);
                if (holders[i] < 0) {
                    throw new ValidationException(Category.DEVICE, "buffers", String.format(Locale.ROOT,
                            "expected %d bytes at 0x%x within one device allocation of the array but found none",
                            byteSizes[i], addresses[i]));
                }
            }
        }
        CopyRuns runs = CopyRuns.of(addresses, byteSizes, holders);
        long[] hostOffsets = new long[runs.count()];
        long end = 0;
        for (int k = 0; k < runs.count(); k++) {
            hostOffsets[k] = CopyRuns.alignUp(end) + (runs.start(k) & (ALIGNMENT - 1));
            end = Math.addExact(hostOffsets[k], runs.length(k));
        }
        return new CopyPlan(runs, hostOffsets, end);
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

    /** The bytes below which late bytes are copied with the others: a copy call costs more than it overlaps. */
    static final long MIN_LATE_BYTES = 256 << 10;

    /**
     * Pieces of host copies in the order to queue them: {@code [0, leading)} first, then the others.
     *
     * @param addresses where each piece starts on the device
     * @param sizes the bytes of each piece
     * @param allocations the allocation each piece reads from
     * @param hostOffsets where each piece lands in the host block
     * @param leading how many pieces come first
     */
    record Pieces(long[] addresses, long[] sizes, int[] allocations, long[] hostOffsets, int leading) {
        /** Number of pieces. */
        int count() {
            return addresses.length;
        }
    }

    /** This plan's copies as they are, all leading. */
    Pieces whole() {
        return new Pieces(Arrays.copyOf(addresses, count), Arrays.copyOf(sizes, count), Arrays.copyOf(allocations, count),
                Arrays.copyOf(hostOffsets, count), count);
    }

    /**
     * This plan's copies cut so that the bytes only {@code late} ranges cover come last: the ranges given are
     * those the plan was made of ({@code late[i]} for range {@code i}), and a byte is late if a late range holds
     * it and no other range does. Late stretches under {@code minLateBytes} bytes stay with the others. Every
     * byte of the plan is in exactly one piece, at the same host offset as in the plan.
     */
    Pieces pieces(long[] rangeAddresses, long[] rangeSizes, boolean[] late, long minLateBytes) {
        long[][] lateOnly = subtract(union(rangeAddresses, rangeSizes, late, true),
                union(rangeAddresses, rangeSizes, late, false));
        PieceList first = new PieceList();
        PieceList last = new PieceList();
        int j = 0; // the first late stretch that may meet copy k (both sorted by address)
        for (int k = 0; k < count; k++) {
            long start = addresses[k];
            long end = start + sizes[k];
            while (j < lateOnly[0].length && lateOnly[1][j] <= start) {
                j++;
            }
            long at = start;
            for (int m = j; m < lateOnly[0].length && lateOnly[0][m] < end; m++) {
                long from = Math.max(lateOnly[0][m], start);
                long to = Math.min(lateOnly[1][m], end);
                if (to - from < minLateBytes) {
                    continue;
                }
                first.add(at, from - at, k);
                last.add(from, to - from, k);
                at = to;
            }
            first.add(at, end - at, k);
        }
        int n = first.count + last.count;
        long[] a = new long[n];
        long[] z = new long[n];
        int[] h = new int[n];
        long[] o = new long[n];
        for (int i = 0; i < n; i++) {
            PieceList from = i < first.count ? first : last;
            int p = i < first.count ? i : i - first.count;
            a[i] = from.addresses[p];
            z[i] = from.sizes[p];
            h[i] = from.copies[p];
            o[i] = hostOffsets[h[i]] + (a[i] - addresses[h[i]]);
            h[i] = allocations[h[i]];
        }
        return new Pieces(a, z, h, o, first.count);
    }

    /** The union of the ranges whose {@code late} flag is {@code which}: sorted, disjoint {starts, ends}. */
    private static long[][] union(long[] rangeAddresses, long[] rangeSizes, boolean[] late, boolean which) {
        int n = 0;
        long[][] ranges = new long[rangeAddresses.length][];
        for (int i = 0; i < rangeAddresses.length; i++) {
            if (late[i] == which && rangeSizes[i] > 0) {
                ranges[n++] = new long[] {rangeAddresses[i], rangeAddresses[i] + rangeSizes[i]};
            }
        }
        Arrays.sort(ranges, 0, n, (x, y) -> Long.compare(x[0], y[0]));
        long[] starts = new long[n];
        long[] ends = new long[n];
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (m > 0 && ranges[i][0] <= ends[m - 1]) {
                ends[m - 1] = Math.max(ends[m - 1], ranges[i][1]);
            } else {
                starts[m] = ranges[i][0];
                ends[m] = ranges[i][1];
                m++;
            }
        }
        return new long[][] {Arrays.copyOf(starts, m), Arrays.copyOf(ends, m)};
    }

    /** The parts of the sorted, disjoint ranges {@code from} outside the sorted, disjoint ranges {@code minus}. */
    private static long[][] subtract(long[][] from, long[][] minus) {
        PieceList out = new PieceList();
        int j = 0;
        for (int i = 0; i < from[0].length; i++) {
            long at = from[0][i];
            long end = from[1][i];
            while (j < minus[0].length && minus[1][j] <= at) {
                j++;
            }
            for (int m = j; m < minus[0].length && minus[0][m] < end; m++) {
                out.add(at, minus[0][m] - at, 0);
                at = Math.max(at, minus[1][m]);
            }
            out.add(at, end - at, 0);
        }
        long[] starts = Arrays.copyOf(out.addresses, out.count);
        long[] ends = new long[out.count];
        for (int i = 0; i < out.count; i++) {
            ends[i] = starts[i] + out.sizes[i];
        }
        return new long[][] {starts, ends};
    }

    /** A growing list of pieces; ones of no bytes are not added. */
    private static final class PieceList {
        long[] addresses = new long[8];
        long[] sizes = new long[8];
        int[] copies = new int[8];
        int count;

        void add(long address, long size, int copy) {
            if (size <= 0) {
                return;
            }
            if (count == addresses.length) {
                addresses = Arrays.copyOf(addresses, count * 2);
                sizes = Arrays.copyOf(sizes, count * 2);
                copies = Arrays.copyOf(copies, count * 2);
            }
            addresses[count] = address;
            sizes[count] = size;
            copies[count] = copy;
            count++;
        }
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
