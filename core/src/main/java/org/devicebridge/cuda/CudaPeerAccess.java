package org.devicebridge.cuda;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.generated.cuda.cuda_driver_h;

/**
 * The driver calls behind {@link Cuda#canAccessPeer} and {@link Cuda#enablePeerAccess}: peer access between two devices of one machine: whether work in one device's primary context can read
 * and write another device's memory directly (NVLink or PCIe peer-to-peer), and switching that on.
 * {@link CudaCopies#copyPeer} works without it (the driver then stages through host memory); kernels that
 * dereference another device's pointers need it.
 *
 * <p>Enabling is one-way and lasts for the life of the process (the primary contexts are never released);
 * it costs a little on every later allocation, which the driver maps for the peer too, so enable only the
 * pairs that need it. Stateless and thread-safe; it owns nothing the caller must close.
 */
final class CudaPeerAccess {
    private CudaPeerAccess() {}

    /**
     * Whether {@code device} can access {@code peer}'s memory directly ({@code cuDeviceCanAccessPeer}).
     *
     * @param device the ordinal of the device that would read or write
     * @param peer the ordinal of the device whose memory it would reach
     * @return {@code true} if peer access between the two is possible; {@code false} for {@code device == peer}
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if either ordinal names no device
     * @throws CudaUnavailableException without a CUDA driver
     */
    static boolean canAccess(int device, int peer) {
        requireNativeAccess();
        int d = CudaContext.cuDevice(device);
        int p = CudaContext.cuDevice(peer);
        if (device == peer) {
            return false;
        }
        long saved = CudaContext.enter(device);
        try {
            MemorySegment out = CudaContext.outSlot();
            out.set(JAVA_INT, 0, 0);
            CudaDriver.check("cuDeviceCanAccessPeer", cuda_driver_h.cuDeviceCanAccessPeer(out, d, p));
            return out.get(JAVA_INT, 0) != 0;
        } finally {
            CudaContext.exit(saved);
        }
    }

    /**
     * Lets work in {@code device}'s primary context access {@code peer}'s memory directly
     * ({@code cuCtxEnablePeerAccess}). Idempotent: enabling a pair already enabled (here or by another
     * library sharing the primary contexts) returns {@code false}. For access both ways, call it for both
     * orders.
     *
     * @param device the ordinal of the device that will read or write
     * @param peer the ordinal of the device whose memory it will reach
     * @return {@code true} if this call enabled the access, {@code false} if it was enabled already
     * @throws InvalidArgumentException if {@code device == peer}
     * @throws UnsupportedFeatureException if the two devices cannot access each other
     *     ({@link #canAccess} is {@code false})
     * @throws CudaException ({@code CUDA_ERROR_INVALID_DEVICE}) if either ordinal names no device, or if the
     *     driver fails otherwise (e.g. {@code CUDA_ERROR_TOO_MANY_PEERS})
     * @throws CudaUnavailableException without a CUDA driver
     */
    static boolean enable(int device, int peer) {
        requireNativeAccess();
        if (device == peer) {
            CudaContext.checkDevice(device);
            throw new InvalidArgumentException("peer", String.format(Locale.ROOT,
                    "expected a device other than %d (a device always reaches its own memory) but found %d", device, peer));
        }
        if (!canAccess(device, peer)) {
            throw new UnsupportedFeatureException("peer", String.format(Locale.ROOT,
                    "device %d cannot access the memory of device %d directly (cuDeviceCanAccessPeer)", device, peer));
        }
        MemorySegment peerContext = CudaContext.primary(peer);
        long saved = CudaContext.enter(device);
        try {
            int r = cuda_driver_h.cuCtxEnablePeerAccess(peerContext, 0);
            if (r == cuda_driver_h.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED()) {
                return false;
            }
            CudaDriver.check("cuCtxEnablePeerAccess", r);
            return true;
        } finally {
            CudaContext.exit(saved);
        }
    }
}
