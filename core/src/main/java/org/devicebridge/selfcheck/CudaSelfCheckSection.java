package org.devicebridge.selfcheck;

import java.lang.foreign.Arena;
import org.devicebridge.DeviceKind;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.devicebridge.Device;
import org.devicebridge.cuda.Cuda;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaEvent;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.DeviceUpload;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.PinnedHostBuffer;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.internal.HandleTracker;

/**
 * Self-check of the CUDA layer on device 0: copies both ways through pageable and pinned memory, a stream
 * and a pooled event, pointer attributes, and a transfer-engine round trip. Reports only a line where no
 * driver is present (that is not a failure: CUDA is optional).
 */
final class CudaSelfCheckSection implements SelfCheckSection {

    @Override
    public String name() {
        return "CUDA memory and copies";
    }

    @Override
    public void run(Report report) {
        if (!Cuda.isAvailable()) {
            report.line("skipped", "no CUDA driver: " + Cuda.unavailableReason());
            return;
        }
        Device device = Device.cuda(0);
        int size = (1 << 20) + 3;
        byte[] data = new byte[size];
        for (int i = 0; i < size; i++) {
            data[i] = (byte) (i * 31 + 7);
        }
        long liveBefore = HandleTracker.liveHandles();
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(device);
             DeviceBuffer buffer = DeviceBuffer.allocate(device, size);
             PinnedHostBuffer pinned = PinnedHostBuffer.allocate(size)) {
            MemorySegment host = arena.allocate(size);
            MemorySegment.copy(data, 0, host, ValueLayout.JAVA_BYTE, 0, size);
            CudaCopies.hostToDevice(host, buffer, 0);
            CudaCopies.deviceToHostAsync(buffer, 0, pinned.segment(), stream);
            try (CudaEvent done = CudaEvent.acquire(device)) {
                done.record(stream);
                done.synchronize();
            }
            report.check("copies", Arrays.equals(data, pinned.segment().toArray(ValueLayout.JAVA_BYTE)),
                    size + " bytes host -> device -> pinned host");

            PointerAttributes a = PointerAttributes.query(buffer.address());
            report.check("pointer attributes", a.kind() == DeviceKind.CUDA
                    && a.deviceOrdinal() == device.ordinal(), a.toString());

            try (HostDeviceTransfer transfer = HostDeviceTransfer.create(device, 4 << 20);
                 DeviceUpload up = transfer.upload(List.of(host, host.asSlice(1, 100)), stream)) {
                List<MemorySegment> back = transfer.download(up.ranges(), arena, stream);
                boolean same = back.get(0).mismatch(host) == -1 && back.get(1).mismatch(host.asSlice(1, 100)) == -1;
                report.check("transfer engine", same, String.format(Locale.ROOT,
                        "2 buffers packed at offsets %s", Arrays.toString(up.offsets())));
            }
            stream.synchronize();
        }
        report.check("handles released", HandleTracker.liveHandles() == liveBefore,
                "live handles " + HandleTracker.liveHandles() + ", before " + liveBefore);
    }
}
