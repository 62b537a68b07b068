package org.devicebridge;

import java.util.Objects;
import org.devicebridge.ValidationException.Category;

/**
 * One device: a {@link DeviceKind} and an ordinal, the identity Arrow ({@code device_type},
 * {@code device_id}), DLPack ({@code DLDevice}), Python's {@code __dlpack_device__} and CUDA (its device
 * ordinal) all name. The CPU is ordinal 0 (Arrow's {@code device_id} of -1 for the CPU reads as 0).
 *
 * <p>Immutable and thread-safe; it owns nothing native. {@code org.devicebridge.cuda.Cuda#properties}
 * reads what a CUDA device is (name, memory, compute capability).
 *
 * @param kind    where the memory lives
 * @param ordinal the device ordinal, {@code >= 0} (0 for the CPU)
 */
public record Device(DeviceKind kind, int ordinal) {
    /** The host CPU: {@link DeviceKind#CPU}, ordinal 0. */
    public static final Device CPU = new Device(DeviceKind.CPU, 0);

    /**
     * Checks the ordinal.
     *
     * @throws ValidationException {@code DEVICE} for a negative ordinal or a CPU ordinal other than 0
     */
    public Device {
        Objects.requireNonNull(kind, "kind");
        if (ordinal < 0) {
            throw new ValidationException(Category.DEVICE, "device_id", "expected a device ordinal >= 0 but found " + ordinal);
        }
        if (kind == DeviceKind.CPU && ordinal != 0) {
            throw new ValidationException(Category.DEVICE, "device_id", "expected device ordinal 0 for the CPU but found " + ordinal);
        }
    }

    /**
     * {@return CUDA device {@code ordinal}}
     *
     * @param ordinal the CUDA device ordinal
     */
    public static Device cuda(int ordinal) {
        return new Device(DeviceKind.CUDA, ordinal);
    }

    /**
     * {@return pinned host memory of CUDA device {@code ordinal} (usually 0)}
     *
     * @param ordinal the CUDA device ordinal
     */
    public static Device cudaHost(int ordinal) {
        return new Device(DeviceKind.CUDA_HOST, ordinal);
    }

    /** {@return e.g. {@code CUDA:1} or {@code CPU:0}} */
    @Override
    public String toString() {
        return kind + ":" + ordinal;
    }
}
