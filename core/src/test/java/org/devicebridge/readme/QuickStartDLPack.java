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
            // Export a 2x3 float32 tensor (row-major); no copy.
            ExportedTensor exported = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 2, 3));
            // Hand the DLManagedTensorVersioned* to a consumer: from now on only its deleter frees it.
            MemorySegment managed = exported.transferOwnership();

            // Here the consumer is this library. The handle owns a scope confined to this thread (no
            // arena argument): close() runs the deleter.
            try (ImportedTensor t = DLPack.importVersioned(managed, ImportOptions.any())) {
                float f = t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 1 * 3 + 2);
                System.out.println("t[1][2] = " + f);                             // 5.0
            }                                                                    // the deleter runs once

            // Many tensors, one scope: one close runs every deleter (a confined arena costs no handshake).
            try (Arena batch = Arena.ofConfined()) {
                for (int i = 0; i < 3; i++) {
                    ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 6));
                    ImportedTensor t = DLPack.importTensor(e, ImportOptions.any(), batch);
                    System.out.println("sum of first two = " + (t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 0)
                            + t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 1)));
                }
            }
        }
    }
}
