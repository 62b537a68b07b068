package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.Device;
import org.devicebridge.arrow.ArrowC;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrow;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.DeviceCopies;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;

public class QuickStartCuda {
    public static void main(String[] args) {
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
                 Arena structs = Arena.ofConfined()) {
                // One record for every call: allocator, staging transfer, stream.
                DeviceCopies copies = new DeviceCopies(allocator, transfer, stream);
                try (CudaArrowBatch onGpu = CudaArrow.upload(table, copies)) {
                    // Export as a CUDA ArrowDeviceArray (zero-copy, sync event on `stream`).
                    MemorySegment deviceArray = ArrowC.allocateDeviceArray(structs);
                    CudaArrow.exportDeviceArray(onGpu, copies, deviceArray);

                    // A consumer (cuDF...) takes it; here devicebridge does.
                    try (CudaArrowBatch imported = CudaArrow.importDeviceArray(onGpu.schema(), deviceArray,
                                 ValidationLevel.DEFAULT, copies);
                         VectorSchemaRoot back = CudaArrow.download(imported, copies)) {
                        System.out.println("rows back from the GPU: " + back.getRowCount());
                    }
                }
            }
        }
    }
}
