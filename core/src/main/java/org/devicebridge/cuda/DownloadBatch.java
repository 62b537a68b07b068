package org.devicebridge.cuda;

import java.lang.foreign.MemorySegment;

/**
 * The ranges of one download, checked: range {@code i} is {@code sizes[i]} bytes at device address
 * {@code addresses[i]}, in the allocation {@code groups[i]} ({@code groups} may be {@code null}: one
 * allocation), and fills {@code dst[i]}, which is page-locked where {@code direct[i]}. Ranges
 * {@code [0, leading)} are copied first. Borrows the arrays.
 */
record DownloadBatch(long[] addresses, long[] groups, MemorySegment[] dst, long[] sizes, boolean[] direct,
                     int leading) {
    /** {@return the number of ranges} */
    int count() {
        return dst.length;
    }

    /** {@return this batch with {@code leading} leading ranges} */
    DownloadBatch withLeading(int leading) {
        return new DownloadBatch(addresses, groups, dst, sizes, direct, leading);
    }

    /** {@return {@code true} if no range of bytes goes through the staging ring} */
    boolean allDirect() {
        for (int i = 0; i < dst.length; i++) {
            if (!direct[i] && sizes[i] > 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * The staged ranges of bytes, in order, as a batch of their own ({@code direct} all {@code false}), with
     * those among the leading ones leading.
     */
    DownloadBatch staged() {
        int count = 0;
        int lead = 0;
        for (int i = 0; i < dst.length; i++) {
            if (!direct[i] && sizes[i] > 0) {
                count++;
                lead += i < leading ? 1 : 0;
            }
        }
        long[] a = new long[count];
        long[] s = new long[count];
        long[] g = groups == null ? null : new long[count];
        MemorySegment[] d = new MemorySegment[count];
        int k = 0;
        for (int i = 0; i < dst.length; i++) {
            if (!direct[i] && sizes[i] > 0) {
                a[k] = addresses[i];
                s[k] = sizes[i];
                d[k] = dst[i];
                if (g != null) {
                    g[k] = groups[i];
                }
                k++;
            }
        }
        return new DownloadBatch(a, g, d, s, new boolean[count], lead);
    }

}
