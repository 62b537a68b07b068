package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import org.devicebridge.Device;
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
 *
 * @param device where the data lives
 * @param kind   what the value means
 * @param handle the stream handle to wait on ({@code CUstream}: 0x1 legacy default, 0x2 per-thread default;
 *               NULL for ROCm's default stream and for {@link Kind#NO_SYNC})
 */
public record ConsumerStream(Device device, Kind kind, MemorySegment handle) {

    /** What a stream value means. */
    public enum Kind {
        /** -1 (or no stream concept): the producer must not synchronise. */
        NO_SYNC,
        /** The device's default stream (CUDA: legacy default, 0x1; ROCm: 0). */
        DEFAULT,
        /** CUDA's per-thread default stream (0x2). */
        PER_THREAD_DEFAULT,
        /** An explicit stream handle. */
        STREAM
    }

    /**
     * Checks the components.
     *
     * @throws NullPointerException if a component is {@code null}
     */
    public ConsumerStream {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(handle, "handle");
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
