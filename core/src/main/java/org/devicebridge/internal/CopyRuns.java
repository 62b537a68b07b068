package org.devicebridge.internal;

import java.util.Arrays;

/**
 * The one range-joining rule of the device-to-host copies: ranges of device memory, sorted by address, are joined
 * into runs where they overlap or lie less than {@value #GAP} bytes apart inside one group (one allocation: the
 * bytes between two allocations may not be mapped), so that one copy moves a run (an uploaded batch, packed at
 * {@value #GAP}-byte aligned offsets, comes back in one copy). Ranges of no bytes belong to no run.
 *
 * <p>Used by the transfer engine's staging plan and by the Arrow download's host-block plan; each lays the runs
 * out its own way. Immutable once made.
 */
public final class CopyRuns {
    /** Ranges closer than this are copied together: Arrow's buffer alignment, below which a copy call costs more. */
    public static final int GAP = 64;

    private final long[] starts; // by run, in address order
    private final long[] lengths;
    private final long[] groups;
    private final int[] runOf; // by range: its run, or -1 for a range of no bytes
    private final int count;

    private CopyRuns(long[] starts, long[] lengths, long[] groups, int[] runOf, int count) {
        this.starts = starts;
        this.lengths = lengths;
        this.groups = groups;
        this.runOf = runOf;
        this.count = count;
    }

    /**
     * Joins ranges {@code [addresses[i], + sizes[i])} of group {@code groups[i]}.
     *
     * @param groups the group of each range, or {@code null}: one group
     * @return the runs, in address order
     * @throws IllegalArgumentException if the arrays differ in length
     */
    public static CopyRuns of(long[] addresses, long[] sizes, long[] groups) {
        int n = addresses.length;
        if (sizes.length != n || (groups != null && groups.length != n)) {
            throw new IllegalArgumentException("expected matching array lengths");
        }
        int[] runOf = new int[n];
        Arrays.fill(runOf, -1);
        Integer[] order = new Integer[n];
        int ranges = 0;
        for (int i = 0; i < n; i++) {
            if (sizes[i] > 0) {
                order[ranges++] = i;
            }
        }
        Arrays.sort(order, 0, ranges, (a, b) -> Long.compare(addresses[a], addresses[b]));
        long[] starts = new long[ranges];
        long[] lengths = new long[ranges];
        long[] runGroups = new long[ranges];
        int count = 0;
        for (int k = 0; k < ranges; k++) {
            int i = order[k];
            long group = groups == null ? 0 : groups[i];
            int last = count - 1;
            if (count > 0 && runGroups[last] == group && addresses[i] - starts[last] < lengths[last] + GAP) {
                lengths[last] = Math.max(lengths[last], addresses[i] - starts[last] + sizes[i]);
            } else {
                starts[count] = addresses[i];
                lengths[count] = sizes[i];
                runGroups[count] = group;
                count++;
            }
            runOf[i] = count - 1;
        }
        return new CopyRuns(starts, lengths, runGroups, runOf, count);
    }

    /** {@return the number of runs} */
    public int count() {
        return count;
    }

    /** {@return the device address where run {@code k} starts} */
    public long start(int k) {
        return starts[k];
    }

    /** {@return the bytes of run {@code k}} */
    public long length(int k) {
        return lengths[k];
    }

    /** {@return the group of run {@code k}} */
    public long group(int k) {
        return groups[k];
    }

    /** {@return the run that holds range {@code i}, or -1 if the range has no bytes} */
    public int runOf(int i) {
        return runOf[i];
    }

    /** {@return {@code v} rounded up to a multiple of {@value #GAP}} */
    public static long alignUp(long v) {
        return Math.addExact(v, GAP - 1) & -GAP;
    }
}
