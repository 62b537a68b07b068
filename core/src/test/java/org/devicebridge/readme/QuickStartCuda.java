package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.devicebridge.arrow.ArrowImport;
import org.devicebridge.arrow.ArrowStructs;
import org.devicebridge.arrow.ExportedSchema;
import org.devicebridge.arrow.ImportedSchema;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.arrow.cuda.CudaArrowBatch;
import org.devicebridge.arrow.cuda.CudaArrowDownload;
import org.devicebridge.arrow.cuda.CudaArrowExport;
import org.devicebridge.arrow.cuda.CudaArrowImport;
import org.devicebridge.arrow.cuda.CudaArrowUpload;
import org.devicebridge.arrow.java.ArrowExport;
import org.devicebridge.arrow.java.ArrowMemory;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.HostDeviceTransfer;
import org.devicebridge.cuda.StreamKind;

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

            try (CudaStream stream = CudaStream.create(0, StreamKind.NON_BLOCKING);
                 HostDeviceTransfer transfer = HostDeviceTransfer.create(0, 64L << 20);
                 CudaArrowBatch onGpu = CudaArrowUpload.upload(table, transfer, stream);
                 ExportedSchema exportedSchema = ArrowExport.exportSchema(table.getSchema());
                 ImportedSchema schema = ArrowImport.importSchema(exportedSchema.segment());
                 Arena structs = Arena.ofConfined()) {
                // Export as a CUDA ArrowDeviceArray: zero-copy, with a sync event recorded on `stream`.
                MemorySegment deviceArray = ArrowStructs.allocateDeviceArray(structs);
                CudaArrowExport.exportDeviceArray(onGpu, stream, deviceArray);

                // A CUDA consumer (cuDF, a kernel of yours...) takes it here; this one is devicebridge:
                // `stream` waits on the event, DEFAULT copies the offsets it checks to the host, and the
                // download copies the buffers into a new VectorSchemaRoot.
                try (CudaArrowBatch imported = CudaArrowImport.importDeviceArray(schema.root(), deviceArray,
                             ValidationLevel.DEFAULT, stream, transfer);
                     VectorSchemaRoot back = CudaArrowDownload.download(imported, allocator, transfer, stream)) {
                    System.out.println("rows back from the GPU: " + back.getRowCount());
                }
            }
        }
    }
}
