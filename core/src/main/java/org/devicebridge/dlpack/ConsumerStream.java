package org.devicebridge.dlpack;

import static org.devicebridge.foreign.NativeCalls.requireNativeAccess;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * The {@code stream} argument of the Python DLPack protocol ({@code __dlpack__(stream=...)}), validated for
 * the device the data lives on: the stream on which the consumer will use the data.
 *
 * <ul>
 * <li>CUDA (also CUDA_HOST, CUDA_MANAGED): {@code null} or 1 = the legacy default stream, 2 = the per-thread
 *     default stream, {@code > 2} = a {@code CUstream} handle, -1 = no synchronisation; 0 is refused
 *     (ambiguous).</li>
 * <li>ROCm (also ROCM_HOST): {@code null} or 0 = the default stream, {@code > 2} = a stream handle, -1 = no
 *     synchronisation; 1 and 2 are refused.</li>
 * <li>every other device (CPU included): only {@code null} or -1 (no stream concept).</li>
 * </ul>
 *
 * <p>Immutable and thread-safe; it borrows the stream handle (the consumer owns the stream).
 */
public final class ConsumerStream {

    /** What a stream value means. */
    enum Kind {
        /** -1 (or no stream concept): the producer must not synchronise. */
        NO_SYNC,
        /** The device's default stream (CUDA: legacy default, 0x1; ROCm: 0). */
        DEFAULT,
        /** CUDA's per-thread default stream (0x2). */
        PER_THREAD_DEFAULT,
        /** An explicit stream handle. */
        STREAM
    }

    private final Device device;
    private final Kind kind;
    private final MemorySegment handle;

    ConsumerStream(Device device, Kind kind, MemorySegment handle) {
        this.device = Objects.requireNonNull(device, "device");
        this.kind = Objects.requireNonNull(kind, "kind");
        this.handle = Objects.requireNonNull(handle, "handle");
    }

    /** {@return the device the data lives on} */
    public Device device() {
        return device;
    }

    /**
     * {@return the stream handle to wait on ({@code CUstream}: 0x1 legacy default, 0x2 per-thread default);
     * NULL for ROCm's default stream and where no synchronisation is asked for}
     */
    public MemorySegment handle() {
        return handle;
    }

    Kind kind() {
        return kind;
    }

    /**
     * Makes this stream wait for the work submitted so far on a CUDA producer's stream, without blocking the
     * host: records an event on {@code producerStream} (timing disabled) and makes this stream wait on it with
     * {@code cuStreamWaitEvent}, in this device's primary context; the caller's current context is restored.
     * Nothing happens when no synchronisation was asked for or this is the producer's own stream. Pass
     * {@code c -> c.waitForCuda(producerStream)} to {@link TensorSpec#withConsumerStream}. Both streams stay
     * their owners'.
     *
     * @param producerStream the producer's {@code CUstream} (borrowed), NULL for the default stream
     * @throws UnsupportedFeatureException if this is not a CUDA stream
     * @throws org.devicebridge.cuda.CudaUnavailableException without a CUDA driver
     * @throws org.devicebridge.cuda.CudaException if the driver refuses
     */
    public void waitForCuda(MemorySegment producerStream) {
        requireNativeAccess();
        Objects.requireNonNull(producerStream, "producerStream");
        long producer = producerStream.address();
        if (!needsSync() || handle.address() == producer) {
            return;
        }
        DeviceKind t = device.kind();
        if (t != DeviceKind.CUDA && t != DeviceKind.CUDA_HOST && t != DeviceKind.CUDA_MANAGED) {
            throw new UnsupportedFeatureException("stream", "a CUDA producer cannot synchronise with " + t + " streams");
        }
        DLPackCuda.makeReady(device.ordinal(), MemorySegment.ofAddress(producer), handle);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConsumerStream other && device.equals(other.device) && kind == other.kind
                && handle.equals(other.handle);
    }

    @Override
    public int hashCode() {
        return Objects.hash(device, kind, handle);
    }

    @Override
    public String toString() {
        return "ConsumerStream[device=" + device + ", kind=" + kind + ", handle=" + handle + "]";
    }

    /** {@return {@code true} if the producer must order the data before this stream} */
    public boolean needsSync() {
        return kind != Kind.NO_SYNC;
    }

    /**
     * Interprets a Python-protocol stream value for data on {@code device}.
     *
     * @param stream the value as the consumer passed it ({@code null} for Python's {@code None})
     * @param device the device the data is on
     * @return the parsed stream request
     * @throws ValidationException {@code STREAM} for a value the protocol forbids on that device
     */
    public static ConsumerStream of(Device device, Long stream) {
        Objects.requireNonNull(device, "device");
        switch (device.kind()) {
            case CUDA, CUDA_HOST, CUDA_MANAGED -> {
                if (stream == null || stream == 1) {
                    return new ConsumerStream(device, Kind.DEFAULT, MemorySegment.ofAddress(1));
                }
                if (stream == 2) {
                    return new ConsumerStream(device, Kind.PER_THREAD_DEFAULT, MemorySegment.ofAddress(2));
                }
                if (stream == -1) {
                    return new ConsumerStream(device, Kind.NO_SYNC, MemorySegment.NULL);
                }
                if (stream == 0) {
                    throw invalid(device, stream, "0 is disallowed on CUDA (ambiguous): use 1 for the legacy "
                            + "default stream or 2 for the per-thread default stream");
                }
                if (stream > 2) {
                    return new ConsumerStream(device, Kind.STREAM, MemorySegment.ofAddress(stream));
                }
                throw invalid(device, stream, "expected None, -1, 1, 2 or a stream handle > 2");
            }
            case ROCM, ROCM_HOST -> {
                if (stream == null || stream == 0) {
                    return new ConsumerStream(device, Kind.DEFAULT, MemorySegment.NULL);
                }
                if (stream == -1) {
                    return new ConsumerStream(device, Kind.NO_SYNC, MemorySegment.NULL);
                }
                if (stream > 2) {
                    return new ConsumerStream(device, Kind.STREAM, MemorySegment.ofAddress(stream));
                }
                throw invalid(device, stream, "expected None, -1, 0 or a stream handle > 2 (1 and 2 are disallowed on ROCm)");
            }
            default -> {
                if (stream == null || stream == -1) {
                    return new ConsumerStream(device, Kind.NO_SYNC, MemorySegment.NULL);
                }
                throw invalid(device, stream, "expected None (or -1): " + device.kind() + " has no streams");
            }
        }
    }

    private static ValidationException invalid(Device device, long stream, String why) {
        return new ValidationException(Category.STREAM, "stream", "invalid stream " + stream + " for "
                + DLPack.describe(device) + ": " + why);
    }
}
