package org.devicebridge.ipc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.AsyncPoison;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;

/**
 * The importer of {@link IpcExportAsyncGpuTest}: opens the batch a descriptor (in a file) describes, which
 * makes its stream wait on the exporter's event, downloads it and compares its strings with
 * {@link AsyncPoison#values(int, int)}. Prints the close message on its last line and exits 0 only if every
 * value matched. Arguments: descriptor file, rows.
 */
public final class IpcBatchChild {
    private IpcBatchChild() {}

    public static void main(String[] args) {
        try {
            IpcBatchDescriptor d = IpcBatchDescriptor.parse(Files.readString(Path.of(args[0])));
            List<String> expected = AsyncPoison.values(Integer.parseInt(args[1]), 0);
            List<String> got;
            String close;
            try (BufferAllocator memory = ArrowMemory.newRootAllocator();
                 CudaStream stream = CudaStream.create(Device.cuda(d.device()));
                 HostDeviceTransfer transfer = HostDeviceTransfer.create(Device.cuda(d.device()), 1 << 20)) {
                try (IpcBatchImport imported = IpcBatchImport.open(d, ValidationLevel.DEFAULT, stream, transfer);
                     VectorSchemaRoot down = CudaArrow.download(imported.batch(), new DeviceCopies(memory, transfer, stream))) {
                    got = AsyncPoison.strings(down);
                    stream.synchronize();
                }
                close = d.closeMessage(); // the mappings are closed
            }
            if (!expected.equals(got)) {
                int i = 0;
                while (i < got.size() && i < expected.size() && expected.get(i).equals(got.get(i))) {
                    i++;
                }
                System.out.println("IPC batch child FAILED: row " + i + " of " + got.size() + " differs: "
                        + (i < got.size() ? got.get(i) : "(missing)"));
                System.exit(2);
            }
            System.out.println(close);
            System.exit(0);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.exit(3);
        }
    }
}
