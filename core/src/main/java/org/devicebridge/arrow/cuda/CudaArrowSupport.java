package org.devicebridge.arrow.cuda;

import java.util.List;
import java.util.Locale;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;

/** The steps the Arrow-on-CUDA classes share: a device check and closing a group of handles. */
final class CudaArrowSupport {
    private CudaArrowSupport() {}

    /** Throws {@link IllegalArgumentException} unless {@code transfer} and {@code stream} serve one device. */
    static void sameDevice(HostDeviceTransfer transfer, CudaStream stream) {
        if (transfer.device() != stream.device()) {
            throw new IllegalArgumentException(String.format(Locale.ROOT,
                    "transfer of device %d cannot be used with a stream of device %d", transfer.device(), stream.device()));
        }
    }

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
