package org.devicebridge.cuda;

/**
 * What a transfer object did, counted as it goes (under the transfer's lock): batches, direct copies and
 * their bytes, staged bytes, host waits. Not thread-safe by itself.
 */
final class TransferStatistics {
    private long batches;
    private long directCopies;
    private long directBytes;
    private long stagedBytes;
    private long hostWaits;

    void batch() {
        batches++;
    }

    void direct(long bytes) {
        directCopies++;
        directBytes += bytes;
    }

    void staged(long bytes) {
        stagedBytes += bytes;
    }

    void hostWait() {
        hostWaits++;
    }

    HostDeviceTransfer.Statistics snapshot() {
        return new HostDeviceTransfer.Statistics(batches, directCopies, directBytes, stagedBytes, hostWaits);
    }
}
