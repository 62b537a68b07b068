package org.devicebridge.selfcheck;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.ValidationException;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ExportedTensor;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorFlag;
import org.devicebridge.dlpack.TensorSpec;

/** Self-check section for DLPack: a CPU export -> import round trip through the native deleter upcall. */
final class DLPackSelfCheck implements SelfCheckSection {

    @Override
    public String name() {
        return "DLPack " + DLPack.MAJOR_VERSION + "." + DLPack.MINOR_VERSION;
    }

    @Override
    public void run(Report report) {
        AtomicInteger ownerCloses = new AtomicInteger();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(ValueLayout.JAVA_FLOAT, 12);
            for (int i = 0; i < 12; i++) {
                data.setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.5f);
            }
            ExportedTensor e = DLPack.exportVersioned(TensorSpec.of(data, DType.FLOAT32, 3, 4)
                    .withFlags(TensorFlag.READ_ONLY), ownerCloses::incrementAndGet);
            float x;
            boolean readOnly;
            try (ImportedTensor t = DLPack.importTensor(e, ImportOptions.expecting(Device.CPU))) {
                x = t.segment().getAtIndex(ValueLayout.JAVA_FLOAT, 7);
                readOnly = t.isReadOnly();
            }
            report.check("versioned CPU round trip (zero-copy, read-only flag, deleter once)",
                    x == 3.5f && readOnly && ownerCloses.get() == 1,
                    "element[1][3] = " + x + ", read-only " + readOnly + ", owner closes " + ownerCloses.get());
            ExportedTensor legacy = DLPack.exportLegacy(TensorSpec.of(data, DType.INT32, 12));
            boolean refused = false;
            try {
                DLPack.importTensor(legacy, ImportOptions.expecting(Device.cuda(0))).close();
            } catch (ValidationException expected) {
                refused = expected.category() == ValidationException.Category.DEVICE;
            }
            report.check("legacy tensor refused for a device mismatch (deleter still ran)", refused, "");
        }
    }
}
