package org.devicebridge.dlpack;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.DeviceKind;

/**
 * The producer's half of the Python DLPack stream protocol: before a tensor is handed over, the data must
 * be ready on the consumer's stream. Implementations order the consumer's stream after the producer's work
 * without blocking the host.
 *
 * <p>Called on the exporting thread, once per export; an instance shared by exports on several threads
 * must be thread-safe ({@link #cuda} returns one that is). It borrows the streams: their owners keep
 * them.
 */
@FunctionalInterface
public interface StreamSynchronizer {

    /**
     * Makes everything submitted so far on the producer's stream visible to work the consumer submits to
     * {@code consumer} afterwards. Does nothing for {@link ConsumerStream.Kind#NO_SYNC}.
     *
     * @param consumer the stream the consumer will use (the consumer owns it)
     * @throws org.devicebridge.DeviceBridgeException if the device refuses (e.g. a CUDA error)
     */
    void makeReady(ConsumerStream consumer);

    /**
     * A CUDA producer whose work runs on {@code producerStream} (a {@code CUstream}; NULL is the default
     * stream). {@link #makeReady} records an event on it (timing disabled) and makes the consumer's stream
     * wait on it with {@code cuStreamWaitEvent}, in the consumer device's primary context; the caller's
     * current context is restored. Nothing happens when the consumer asked for no synchronisation or passed
     * the producer's own stream. The caller keeps owning {@code producerStream}.
     *
     * @param producerStream the producer's {@code CUstream} (borrowed), NULL for the default stream
     * @return a synchronizer that owns nothing
     * @throws org.devicebridge.cuda.CudaUnavailableException (from {@code makeReady}) without a CUDA driver
     */
    static StreamSynchronizer cuda(MemorySegment producerStream) {
        requireNativeAccess();
        Objects.requireNonNull(producerStream, "producerStream");
        long producer = producerStream.address();
        return consumer -> {
            if (!consumer.needsSync() || consumer.handle().address() == producer) {
                return;
            }
            DeviceKind t = consumer.device().kind();
            if (t != DeviceKind.CUDA && t != DeviceKind.CUDA_HOST && t != DeviceKind.CUDA_MANAGED) {
                throw new org.devicebridge.UnsupportedFeatureException("stream", "a CUDA producer cannot synchronise with "
                        + t + " streams");
            }
            DLPackCuda.makeReady(consumer.device().ordinal(), MemorySegment.ofAddress(producer), consumer.handle());
        };
    }
}
