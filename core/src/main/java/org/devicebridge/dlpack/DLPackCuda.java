package org.devicebridge.dlpack;

import java.lang.foreign.MemorySegment;
import java.util.Locale;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaException;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.CudaUnavailableException;
import org.devicebridge.cuda.PointerAttributes;

/**
 * The CUDA driver calls DLPack's stream protocol needs: make a consumer stream wait for the work submitted
 * so far to a producer stream (record an event on the producer stream, {@code cuStreamWaitEvent} on the
 * consumer's), in the device's primary context, restoring the caller's current context afterwards.
 * The host never blocks.
 */
final class DLPackCuda {
    private DLPackCuda() {}

    /**
     * Orders {@code consumerStream} after everything submitted so far to {@code producerStream} on device
     * {@code deviceId}. Stream handles are {@code CUstream} values (0x1 and 0x2 are the legacy and per-thread
     * default streams). The event comes from the device's pool (timing disabled) and goes back at once: a
     * wait already enqueued is not affected by the event's later reuse, so no event is created or destroyed
     * on this per-tensor path.
     *
     * @throws org.devicebridge.cuda.CudaUnavailableException without a CUDA driver
     */
    static void makeReady(int deviceId, MemorySegment producerStream, MemorySegment consumerStream) {
        Cuda.require();
        Device device = Device.cuda(deviceId);
        try (CudaStream producer = CudaStream.borrow(device, producerStream.address());
             CudaStream consumer = CudaStream.borrow(device, consumerStream.address());
             CudaEvent event = CudaEvent.acquire(device)) {
            event.record(producer);
            consumer.waitEvent(event);
        }
    }

    /**
     * Confirms with the driver's pointer attributes that the {@code extent} bytes from {@code first} are the
     * memory {@code device} says (see {@link ImportOptions#confirmingPointers()}); the rule is the one CUDA
     * Arrow imports apply to their buffers. Devices other than CPU and the CUDA family are not checked.
     *
     * @throws ValidationException {@code DEVICE} on a mismatch, or where the driver rejects the pointer
     * @throws CudaUnavailableException for a CUDA-labelled tensor where no driver is loaded
     */
    static void confirmPointer(Device device, long first, long extent) {
        DeviceKind type = device.kind();
        boolean cudaFamily = type == DeviceKind.CUDA || type == DeviceKind.CUDA_HOST || type == DeviceKind.CUDA_MANAGED;
        if (!cudaFamily && (type != DeviceKind.CPU || !Cuda.isAvailable())) {
            return; // no driver to ask about this memory (a CPU pointer cannot be device memory without one)
        }
        if (cudaFamily) {
            Cuda.require();
        }
        String path = "dl_tensor.data";
        PointerAttributes a;
        try {
            a = PointerAttributes.of(first);
        } catch (CudaUnavailableException e) {
            throw e;
        } catch (CudaException e) {
            throw new ValidationException(Category.DEVICE, path,
                    "expected a pointer the CUDA driver knows but it rejected it: " + e.getMessage());
        }
        boolean ok = switch (type) {
            case CUDA -> (a.kind() == DeviceKind.CUDA || a.kind() == DeviceKind.CUDA_MANAGED)
                    && a.deviceOrdinal() == device.ordinal();
            case CUDA_HOST -> a.kind() == DeviceKind.CUDA_HOST;
            case CUDA_MANAGED -> a.managed();
            default -> a.kind() == DeviceKind.CPU || a.kind() == DeviceKind.CUDA_HOST
                    || a.managed(); // kDLCPU: anything the CPU can read
        };
        if (!ok) {
            throw new ValidationException(Category.DEVICE, path, "expected " + expected(device) + " but found "
                    + found(a));
        }
        if (a.rangeSize() > 0 && (first - a.rangeStart() < 0 || extent > a.rangeStart() + a.rangeSize() - first)) {
            throw new ValidationException(Category.DEVICE, path, String.format(Locale.ROOT,
                    "expected the %d bytes the tensor spans within its allocation [0x%x, +%d) but found only %d",
                    extent, a.rangeStart(), a.rangeSize(), Math.max(0, a.rangeStart() + a.rangeSize() - first)));
        }
    }

    private static String expected(Device device) {
        return switch (device.kind()) {
            case CUDA -> "device memory of CUDA device " + device.ordinal() + " (kDLCUDA)";
            case CUDA_HOST -> "pinned or registered host memory (kDLCUDAHost)";
            case CUDA_MANAGED -> "managed memory (kDLCUDAManaged)";
            default -> "memory the CPU can read (kDLCPU)";
        };
    }

    private static String found(PointerAttributes a) {
        return switch (a.kind()) {
            case CPU -> "unregistered host memory";
            case CUDA_HOST -> "pinned host memory" + (a.managed() ? " (managed)" : "");
            default -> (a.kind() == DeviceKind.CUDA ? "device" : "managed") + " memory of CUDA device " + a.deviceOrdinal()
                    + (a.managed() ? " (managed)" : "");
        };
    }
}
