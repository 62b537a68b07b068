package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The one entry to take a tensor from Python picks the protocol the producer speaks. */
class PythonImportTest {
    private static final ConsumerStream HOST = ConsumerStream.of(Device.CPU, null);
    private PythonRuntime python;
    private PyObjectRef ns;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("numpy");
        ns = python.newNamespace();
        python.exec("import numpy as np\n"
                + "a = np.array([1.5, -2, 3.25], dtype=np.float32)\n"
                + "class OnlyInterface:\n"
                + "    def __init__(self, a):\n"
                + "        self.a = a\n"
                + "        self.__array_interface__ = a.__array_interface__\n", ns);
    }

    @AfterEach
    void tearDown() {
        ns.close();
    }

    private static void assertValues(ImportedTensor t) {
        assertEquals(Device.CPU, t.device());
        assertArrayEquals(new long[] {3}, t.shape());
        assertArrayEquals(new float[] {1.5f, -2f, 3.25f}, t.segment().toArray(JAVA_FLOAT));
    }

    @Test
    void aNumpyArrayIsTakenThroughDlpackAndItsDeviceRead() {
        try (PyObjectRef a = python.eval("a", ns)) {
            assertEquals(Device.CPU, PythonImport.device(a));
            try (ImportedTensor t = PythonImport.tensor(a, HOST, ImportOptions.any())) {
                assertValues(t);
            }
        }
    }

    @Test
    void anObjectWithOnlyTheArrayInterfaceIsTakenThroughIt() {
        try (PyObjectRef o = python.eval("OnlyInterface(a)", ns);
             ImportedTensor t = PythonImport.tensor(o, HOST, ImportOptions.any())) {
            assertValues(t);
        }
    }

    @Test
    void aJavaExporterWithTheExchangeTableIsTakenThroughTheTable() {
        int[] calls = new int[1];
        try (PyObjectRef obj = PythonExport.builder()
                .dlpack(Device.CPU, r -> {
                    calls[0]++;
                    return TestTensors.cpuTensor(true, new float[] {1.5f, -2f, 3.25f}, new long[] {3}, false);
                })
                .dlpackExchangeApi()
                .build();
             ImportedTensor t = PythonImport.tensor(obj, HOST, ImportOptions.any())) {
            assertValues(t);
            assertEquals(1, calls[0]);
        }
    }

    @Test
    void anObjectWithNoProtocolIsRefusedTyped() {
        try (PyObjectRef o = python.eval("object()", ns)) {
            assertThrows(UnsupportedFeatureException.class, () -> PythonImport.tensor(o, HOST, ImportOptions.any()));
            assertThrows(UnsupportedFeatureException.class,
                    () -> PythonImport.array(o, org.devicebridge.arrow.ValidationLevel.FULL));
            assertThrows(UnsupportedFeatureException.class, () -> PythonImport.stream(o));
        }
    }
}
