package org.devicebridge.ipc;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.cuda.Cuda;

/**
 * The memory pools a {@link WorkerChannel} has sent its worker: each device's IPC-shareable pool goes, as a file
 * descriptor, over the Unix socket the worker offered in its {@code hello} ({@link Cuda#sendIpcPool}, which checks
 * that the worker's process listens there), the first time a call names memory of it; the worker numbers the
 * pools in the order they come, and the descriptor's {@code pool_pointers} name them by that number. The next
 * {@code call} header says how many were sent since the one before ({@code pools_sent}), so that the worker takes
 * them before it reads the descriptor. A worker that offered no socket (or named no {@code pid}) takes no pool:
 * such memory is copied, as the default pool's is.
 *
 * <p>Thread-safe: one monitor orders the sends, the numbering and the count, so that the worker takes the pools in
 * the order they were numbered.
 */
final class WorkerPools implements IpcExportPlanner.Pools {
    private Path socket;
    private long pid;
    private final List<Device> sent = new ArrayList<>();
    private final Set<Device> unsupported = new HashSet<>();
    private int unannounced;

    /** Takes the socket and process id the worker's {@code hello} named, if it named both. */
    synchronized void offered(WorkerProtocol.Message hello) {
        if (hello.poolSocket() != null && hello.pid() > 0) {
            socket = Path.of(hello.poolSocket());
            pid = hello.pid();
        }
    }

    @Override
    public synchronized int indexOf(Device device) {
        int k = sent.indexOf(device);
        if (k >= 0 || socket == null || unsupported.contains(device)
                || sent.size() >= IpcBatchDescriptor.MAX_POOLS) {
            return socket == null ? -1 : k;
        }
        try {
            Cuda.sendIpcPool(device, socket, pid);
        } catch (UnsupportedFeatureException e) {
            unsupported.add(device); // the driver cannot share it: the device's memory is copied
            return -1;
        }
        sent.add(device);
        unannounced++;
        return sent.size() - 1;
    }

    /** {@return how many pools were sent since the last call header, for the next one; resets the count} */
    synchronized int announce() {
        int n = unannounced;
        unannounced = 0;
        return n;
    }

    @Override
    public synchronized String toString() {
        return sent.size() + " pools sent";
    }
}
