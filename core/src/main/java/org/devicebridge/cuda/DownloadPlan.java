package org.devicebridge.cuda;

import java.util.Arrays;
import org.devicebridge.internal.CopyRuns;

/**
 * Where the staged part of a download goes, planned before any copy: the device ranges are joined into runs by
 * the one joining rule ({@link CopyRuns}: ranges of one group, e.g. one allocation, that overlap or lie less than
 * {@value CopyRuns#GAP} bytes apart), and each run is cut into parts that fit a staging chunk, placed at a
 * {@value #ALIGNMENT}-byte aligned offset and copied with one call (a packed batch comes back in one copy per
 * chunk). Per chunk: its device-to-chunk copies, and the parts of the entries to unpack from it into the
 * destinations.
 */
final class DownloadPlan {
    static final int ALIGNMENT = HostDeviceTransfer.ALIGNMENT;

    private int chunks;
    private int[] copyStart = new int[4]; // copies of chunk c: [copyStart[c], copyStart[c + 1])
    private long[] copyDevice = new long[4];
    private long[] copyStage = new long[4];
    private long[] copyLength = new long[4];
    private int copies;
    private int[] partStart = new int[4]; // parts of chunk c: [partStart[c], partStart[c + 1])
    private int[] partEntry = new int[4];
    private long[] partOffset = new long[4];
    private long[] partLength = new long[4];
    private long[] partStage = new long[4];
    private int parts;
    private long chunkBytes;
    private boolean open; // the last chunk takes more parts
    private long used; // the bytes of the last chunk used so far

    private DownloadPlan() {}

    /**
     * Plans copies of {@code sizes[i]} bytes at device address {@code addresses[i]} for each entry, through
     * chunks of {@code chunkBytes} bytes.
     *
     * @param groups the group of each entry (e.g. the allocation holding it), or {@code null}: one group
     */
    static DownloadPlan of(long[] addresses, long[] sizes, long[] groups, long chunkBytes) {
        DownloadPlan p = new DownloadPlan();
        p.chunkBytes = chunkBytes;
        p.plan(addresses, sizes, groups, 0, addresses.length);
        p.copyStart[p.chunks] = p.copies;
        p.partStart[p.chunks] = p.parts;
        return p;
    }

    /** Plans entries {@code [from, to)}: their runs in address order, each cut at the chunks' ends. */
    private void plan(long[] addresses, long[] sizes, long[] groups, int from, int to) {
        long[] a = Arrays.copyOfRange(addresses, from, to);
        long[] s = Arrays.copyOfRange(sizes, from, to);
        CopyRuns runs = CopyRuns.of(a, s, groups == null ? null : Arrays.copyOfRange(groups, from, to));
        int[][] members = members(runs, a.length);
        for (int k = 0; k < runs.count(); k++) {
            long length = runs.length(k);
            long done = 0;
            while (done < length) {
                long place = CopyRuns.alignUp(used);
                if (!open || place >= chunkBytes) {
                    openChunk();
                    place = 0;
                }
                long len = Math.min(length - done, chunkBytes - place);
                addCopy(runs.start(k) + done, place, len);
                for (int e : members[k]) { // the part of each entry of the run in [done, done + len)
                    long into = a[e] - runs.start(k);
                    long lo = Math.max(into, done);
                    long hi = Math.min(into + s[e], done + len);
                    if (hi > lo) {
                        addPart(from + e, lo - into, hi - lo, place + (lo - done));
                    }
                }
                used = place + len;
                done += len;
            }
        }
    }

    /** The entries of each run. */
    private static int[][] members(CopyRuns runs, int n) {
        int[] counts = new int[runs.count()];
        for (int i = 0; i < n; i++) {
            if (runs.runOf(i) >= 0) {
                counts[runs.runOf(i)]++;
            }
        }
        int[][] members = new int[runs.count()][];
        for (int k = 0; k < members.length; k++) {
            members[k] = new int[counts[k]];
            counts[k] = 0;
        }
        for (int i = 0; i < n; i++) {
            int k = runs.runOf(i);
            if (k >= 0) {
                members[k][counts[k]++] = i;
            }
        }
        return members;
    }

    private void openChunk() {
        open = true;
        used = 0;
        if (chunks + 1 >= copyStart.length) {
            copyStart = Arrays.copyOf(copyStart, copyStart.length * 2);
            partStart = Arrays.copyOf(partStart, partStart.length * 2);
        }
        copyStart[chunks] = copies;
        partStart[chunks] = parts;
        chunks++;
    }

    private void addCopy(long dev, long stage, long len) {
        if (len == 0) {
            return;
        }
        if (copies == copyDevice.length) {
            int n = copies * 2;
            copyDevice = Arrays.copyOf(copyDevice, n);
            copyStage = Arrays.copyOf(copyStage, n);
            copyLength = Arrays.copyOf(copyLength, n);
        }
        copyDevice[copies] = dev;
        copyStage[copies] = stage;
        copyLength[copies] = len;
        copies++;
    }

    private void addPart(int entry, long offset, long len, long stage) {
        if (parts == partEntry.length) {
            int n = parts * 2;
            partEntry = Arrays.copyOf(partEntry, n);
            partOffset = Arrays.copyOf(partOffset, n);
            partLength = Arrays.copyOf(partLength, n);
            partStage = Arrays.copyOf(partStage, n);
        }
        partEntry[parts] = entry;
        partOffset[parts] = offset;
        partLength[parts] = len;
        partStage[parts] = stage;
        parts++;
    }

    /** Number of chunks the download fills. */
    int chunks() {
        return chunks;
    }

    /** The first copy of chunk {@code c}; its copies end where chunk {@code c + 1}'s begin. */
    int firstCopy(int c) {
        return copyStart[c];
    }

    /** The first part of chunk {@code c}; its parts end where chunk {@code c + 1}'s begin. */
    int firstPart(int c) {
        return partStart[c];
    }

    /** The device address copy {@code k} reads. */
    long copyDevice(int k) {
        return copyDevice[k];
    }

    /** Where copy {@code k} lands in its chunk. */
    long copyStage(int k) {
        return copyStage[k];
    }

    /** The bytes copy {@code k} moves. */
    long copyLength(int k) {
        return copyLength[k];
    }

    /** The entry part {@code k} belongs to. */
    int partEntry(int k) {
        return partEntry[k];
    }

    /** Where part {@code k} starts in its entry. */
    long partOffset(int k) {
        return partOffset[k];
    }

    /** The bytes of part {@code k}. */
    long partLength(int k) {
        return partLength[k];
    }

    /** Where part {@code k} lies in its chunk. */
    long partStage(int k) {
        return partStage[k];
    }
}
