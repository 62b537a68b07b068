package org.devicebridge.dlpack;

import java.util.Objects;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;

/**
 * A DLPack device, {@code DLDevice}: a device type and an ordinal (0 for CPU).
 *
 * <p>Immutable and thread-safe; it owns nothing native.
 *
 * @param type the device type
 * @param id   the device ordinal, {@code >= 0}
 */
public record Device(DeviceType type, int id) {
    /** The host CPU: {@code kDLCPU}, device 0. */
    public static final Device CPU = new Device(DeviceType.CPU, 0);

    /**
     * Checks the device id.
     *
     * @throws ValidationException {@code DEVICE} for a negative id or a CPU id other than 0
     */
    public Device {
        Objects.requireNonNull(type, "type");
        if (id < 0) {
            throw new ValidationException(Category.DEVICE, "device.device_id", "expected a device id >= 0 but found " + id);
        }
        if (type == DeviceType.CPU && id != 0) {
            throw new ValidationException(Category.DEVICE, "device.device_id", "expected device id 0 for kDLCPU but found " + id);
        }
    }

    /**
     * {@return CUDA device {@code id}}
     *
     * @param id the CUDA device ordinal
     */
    public static Device cuda(int id) {
        return new Device(DeviceType.CUDA, id);
    }

    /**
     * {@return pinned host memory of CUDA device {@code id} (usually 0)}
     *
     * @param id the CUDA device ordinal
     */
    public static Device cudaHost(int id) {
        return new Device(DeviceType.CUDA_HOST, id);
    }
}
