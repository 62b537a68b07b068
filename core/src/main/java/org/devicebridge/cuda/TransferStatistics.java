package org.devicebridge.cuda;

/**
 * What a transfer object did, counted as it goes: batches, direct copies and their bytes, staged bytes, host
 * waits. Thread-safe: a {@link DeviceUpload} counts its wait on its caller's thread, outside the transfer's lock.
 */
final class TransferStatistics {
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

    synchronized HostDeviceTransfer.Statistics snapshot() {
        return new HostDeviceTransfer.Statistics(batches, directCopies, directBytes, stagedBytes, hostWaits);
    }
}
