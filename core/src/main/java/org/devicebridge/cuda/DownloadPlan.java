package org.devicebridge.cuda;

import java.util.Arrays;

/**
 * Where the staged part of a download goes, planned before any copy: the device ranges are cut into
 * parts that fit a staging chunk, each part placed in a chunk at a {@value #ALIGNMENT}-byte aligned offset;
 * parts whose device ranges follow each other with gaps under {@value #ALIGNMENT} bytes and lie in one group
 * (one allocation: the bytes between two allocations may not be mapped) keep their device distance in the
 * chunk, so that one copy moves them all (a packed batch comes back in one copy per chunk). Per chunk: its
 * device-to-chunk copies, and the parts to unpack from it into the destinations.
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
    private int leadingChunks; // the chunks that hold the entries before the plan's first late one
    private long chunkBytes;

    private DownloadPlan() {}

    /**
     * Plans copies of {@code sizes[i]} bytes at device address {@code addresses[i]} for each entry, through
     * chunks of {@code chunkBytes} bytes.
     *
     * @param groups the group of each entry (e.g. the allocation holding it), or {@code null}: one group
     */
    static DownloadPlan of(long[] addresses, long[] sizes, long[] groups, long chunkBytes) {
        return of(addresses, sizes, groups, chunkBytes, addresses.length);
    }

    /**
     * As {@link #of(long[], long[], long[], long)}, with entry {@code firstLate} starting a new chunk (if it is
     * not the first), so that the entries before it fill whole chunks of their own:
     * {@link #leadingChunks()}.
     */
    static DownloadPlan of(long[] addresses, long[] sizes, long[] groups, long chunkBytes, int firstLate) {
        DownloadPlan p = new DownloadPlan();
        p.chunkBytes = chunkBytes;
        p.leadingChunks = -1;
        boolean open = false;
        long used = 0;
        long cDev = 0; // the copy being assembled: device address, chunk offset, length (0: none), group
        long cStage = 0;
        long cLen = 0;
        long cGroup = 0;
        for (int i = 0; i < addresses.length; i++) {
            if (i == firstLate) {
                if (open) {
                    p.addCopy(cDev, cStage, cLen);
                    cLen = 0;
                    open = false;
                }
                p.leadingChunks = p.chunks;
            }
            long group = groups == null ? 0 : groups[i];
            long done = 0;
            while (done < sizes[i]) {
                if (!open) {
                    p.openChunk();
                    open = true;
                    used = 0;
                }
                long dev = addresses[i] + done;
                long place = alignUp(used);
                boolean joinable = cLen > 0 && group == cGroup;
                if (joinable && dev >= cDev + cLen && dev - (cDev + cLen) < ALIGNMENT) {
                    place = cStage + (dev - cDev); // keep the device distance: one copy for both
                }
                if (place >= chunkBytes) { // this chunk is full
                    p.addCopy(cDev, cStage, cLen);
                    cLen = 0;
                    open = false;
                    continue;
                }
                long len = Math.min(sizes[i] - done, chunkBytes - place);
                if (joinable && place >= cStage + cLen && dev - cDev == place - cStage) {
                    cLen = place + len - cStage; // extends the copy over the gap (inside one group)
                } else {
                    p.addCopy(cDev, cStage, cLen);
                    cDev = dev;
                    cStage = place;
                    cLen = len;
                    cGroup = group;
                }
                p.addPart(i, done, len, place);
                used = place + len;
                done += len;
            }
        }
        if (open) {
            p.addCopy(cDev, cStage, cLen);
        }
        p.copyStart[p.chunks] = p.copies;
        p.partStart[p.chunks] = p.parts;
        if (p.leadingChunks < 0) {
            p.leadingChunks = p.chunks;
        }
        return p;
    }

    private static long alignUp(long v) {
        return Math.addExact(v, ALIGNMENT - 1) & -ALIGNMENT;
    }

    private void openChunk() {
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

    /** The bytes of a chunk the plan uses at most: {@code [0, chunkBytes())}. */
    long chunkBytes() {
        return chunkBytes;
    }

    /** Number of chunks the download fills. */
    int chunks() {
        return chunks;
    }

    /**
     * Number of leading chunks: those holding the entries before the first late one (every chunk if there is
     * none), and nothing else.
     */
    int leadingChunks() {
        return leadingChunks;
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
