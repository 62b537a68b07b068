package org.devicebridge.cuda;

/**
 * What a transfer object did, counted as it goes: batches, direct copies and their bytes, staged bytes, host
 * waits. Thread-safe: a {@link DeviceUpload} counts its wait on its caller's thread, outside the transfer's lock.
 */
final class TransferStatistics {
    /**
     * A copy of the counts at one moment.
     *
     * @param batches uploads and downloads
     * @param directCopies buffers copied directly between page-locked host memory and the device
     * @param directBytes the bytes of those copies
     * @param stagedBytes bytes that went through the staging ring (with the padding between packed buffers)
     * @param hostWaits times the host waited for the device ({@code cuEventSynchronize})
     */
    record Snapshot(long batches, long directCopies, long directBytes, long stagedBytes, long hostWaits) {}

    private long batches;
    private long directCopies;
    private long directBytes;
    private long stagedBytes;
    private long hostWaits;

    synchronized void batch() {
        batches++;
    }

    synchronized void direct(long bytes) {
        directCopies++;
        directBytes += bytes;
    }

    synchronized void staged(long bytes) {
        stagedBytes += bytes;
    }

    synchronized void hostWait() {
        hostWaits++;
    }

    synchronized Snapshot snapshot() {
        return new Snapshot(batches, directCopies, directBytes, stagedBytes, hostWaits);
    }

    synchronized long stagedBytes() {
        return stagedBytes;
    }
}
