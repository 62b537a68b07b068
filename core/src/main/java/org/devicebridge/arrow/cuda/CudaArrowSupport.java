package org.devicebridge.arrow.cuda;

import java.util.List;
import org.devicebridge.DeviceBridgeException;

/** The step the Arrow-on-CUDA classes share: closing a group of handles. */
final class CudaArrowSupport {
    private CudaArrowSupport() {}

    /** Closes every handle, even if one fails; rethrows the last failure. */
    static void closeAll(List<? extends AutoCloseable> handles) {
        RuntimeException failure = null;
        for (AutoCloseable h : handles) {
            try {
                h.close();
            } catch (RuntimeException e) {
                failure = e;
            } catch (Exception e) {
                failure = new DeviceBridgeException("close failed: " + e.getMessage(), e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
