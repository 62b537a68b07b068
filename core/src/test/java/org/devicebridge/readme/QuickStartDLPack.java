package org.devicebridge.readme;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;

public class QuickStartDLPack {
    public static void main(String[] args) {
        try (Arena memory = Arena.ofShared()) {
            MemorySegment data = memory.allocate(ValueLayout.JAVA_FLOAT, 6);
            for (int i = 0; i < 6; i++) {
                data.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
            }
            // Export a 2x3 tensor, no copy, to a consumer.
            MemorySegment managed = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 2, 3))
                    .transferOwnership();
            // Here the consumer is this library: close() runs the deleter, once.
            try (ImportedTensor t = DLPack.importVersioned(managed, ImportOptions.any())) {
                System.out.println("t[1][2] = " + t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 1 * 3 + 2));
            }
            // Many tensors in your arena: one close runs every deleter.
            try (Arena batch = Arena.ofConfined()) {
                for (int i = 0; i < 3; i++) {
                    ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 6));
                    System.out.println("t[1] = " + DLPack.importTensor(e, ImportOptions.any(), batch)
                            .segment().getAtIndex(ValueLayout.JAVA_FLOAT, 1));
                }
            }
        }
    }
}
