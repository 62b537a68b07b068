package org.devicebridge.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.arrow.ValidationLevel;
import org.devicebridge.dlpack.ImportOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The public entries {@link IpcImport#importBatch} and {@link IpcImport#importTensor} read the descriptor line with
 * the strict reader before anything else (no driver, no stream, no handle): a descriptor of the other kind or one
 * that breaks the format is refused by key path. What the entries do with a readable descriptor is tested on a GPU
 * ({@code CudaIpcPythonTest}, {@code IpcBatchPythonTest}).
 */
class IpcEntriesTest {
    private static final String TENSOR = "{\"devicebridge_ipc\": 1, \"kind\": \"tensor\", \"id\": \"x\", \"device\": 0,"
            + " \"mem_handle\": \"" + "ab".repeat(64) + "\", \"offset\": 0, \"nbytes\": 4, \"dtype\": [0, 32, 1],"
            + " \"typestr\": \"<i4\", \"shape\": [1], \"strides\": [1], \"event_handle\": null}";

    private static ValidationException refused(Executable call, Category category, String path) {
        ValidationException e = assertThrows(ValidationException.class, call);
        assertEquals(category, e.category(), e.getMessage());
        assertEquals(path, e.path(), e.getMessage());
        return e;
    }

    /** A batch descriptor line; its schema bytes are never read, as the kind is refused first. */
    private static String batch() {
        return IpcParsing.batchJson("y", 0, new byte[] {1}, List.of(new byte[64]),
                new IpcParsing.NodeSpec(0, 0, 0, Arrays.asList((long[]) null), List.of()), null);
    }

    @Test
    void aBatchDescriptorIsRefusedByTheTensorEntryAtItsKind() {
        refused(() -> IpcImport.importTensor(batch(), null, ImportOptions.any()), Category.FORMAT, "kind");
    }

    @Test
    void aTensorDescriptorIsRefusedByTheBatchEntryAtItsKind() {
        refused(() -> IpcImport.importBatch(TENSOR, ValidationLevel.MINIMAL, null, null), Category.FORMAT, "kind");
    }

    @Test
    void aDuplicateKeyIsRefusedByBothEntriesBeforeAnyHandleIsOpened() {
        String twice = TENSOR.replace("\"device\": 0,", "\"device\": 0, \"device\": 0,");
        for (Executable call : List.<Executable>of(() -> IpcImport.importTensor(twice, null, ImportOptions.any()),
                () -> IpcImport.importBatch(twice, ValidationLevel.MINIMAL, null, null))) {
            ValidationException e = assertThrows(ValidationException.class, call);
            assertEquals(Category.FORMAT, e.category(), e.getMessage());
            assertTrue(e.getMessage().contains("\"device\" again"), e.getMessage());
        }
    }
}
