package org.devicebridge.readme;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.ipc.WorkerChannel;

public class WorkerHandOff {
    public static void main(String[] args) throws Exception {
        // The Python side ships in the jar: write it out and start it (stdin/stdout are the channel).
        Path module = WorkerChannel.writeWorkerModule(Files.createTempDirectory("worker"));
        String python = args.length > 0 ? args[0] : "python3";
        Process worker = new ProcessBuilder(python, module.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (BufferAllocator allocator = ArrowMemory.newRootAllocator();
             BigIntVector ids = new BigIntVector("id", allocator)) {
            ids.allocateNew(1000);
            for (int i = 0; i < 1000; i++) {
                ids.set(i, i);
            }
            ids.setValueCount(1000);
            VectorSchemaRoot table = VectorSchemaRoot.of(ids);

            Device gpu = Device.cuda(0);
            try (CudaStream stream = CudaStream.create(gpu);
                 HostDeviceTransfer transfer = HostDeviceTransfer.create(gpu, 64L << 20);
                 WorkerChannel channel = WorkerChannel.open(worker.getInputStream(), worker.getOutputStream(),
                         Duration.ofSeconds(60));
                 CudaArrowBatch onGpu = CudaArrow.upload(table, DeviceCopies.of(transfer, stream));
                 // JVM -> worker -> JVM: CUDA IPC both ways, one line of JSON each way
                 CudaArrowBatch result = channel.call(onGpu, stream);
                 VectorSchemaRoot back = CudaArrow.download(result, new DeviceCopies(allocator, transfer, stream))) {
                System.out.println("rows back from the worker: " + back.getRowCount());
            }
        } finally {
            worker.destroyForcibly();
        }
    }
}
