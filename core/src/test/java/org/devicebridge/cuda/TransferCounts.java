package org.devicebridge.cuda;

/**
 * What a transfer object did so far, for tests outside this package that observe direct against staged copies
 * (the counts are package-private: the public API says only {@link HostDeviceTransfer#stagedBytes()}).
 *
 * @param directCopies buffers copied directly between page-locked host memory and the device
 * @param stagedBytes bytes that went through the staging ring
 * @param hostWaits times the host waited for the device
 */
public record TransferCounts(long directCopies, long stagedBytes, long hostWaits) {

    /**
     * The counts of {@code transfer} now.
     *
     * @param transfer the transfer object (borrowed)
     * @return a snapshot
     */
    public static TransferCounts of(HostDeviceTransfer transfer) {
        TransferStatistics.Snapshot s = transfer.statistics();
        return new TransferCounts(s.directCopies(), s.stagedBytes(), s.hostWaits());
    }
}
