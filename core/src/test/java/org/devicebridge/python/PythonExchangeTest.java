package org.devicebridge.python;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DLPackExchange;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * This library's DLPack exchange table as a Python framework's would be seen (CPython only, no framework):
 * exporter objects built with {@link PythonExport#dlpackExchangeApi()} publish it on their type, and
 * {@link PythonExchange} consumes it like any framework's table.
 */
class PythonExchangeTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;
    private final List<ConsumerStream> requests = new ArrayList<>();

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtime();
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        TestTensors.DELETES.set(0);
        ns = python.newNamespace();
        python.exec("import gc", ns);
    }

    @AfterEach
    void tearDown() {
        if (ns == null) {
            return;
        }
        python.exec("gc.collect()", ns);
        ns.close();
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBefore, PythonExport.liveObjects(), "exporter objects still alive");
    }

    private PyObjectRef exporter(float[] values) {
        return PythonExport.builder().dlpack(Device.CPU, r -> {
            requests.add(r);
            return TestTensors.cpuTensor(true, values, new long[] {values.length}, false);
        }).dlpackExchangeApi().build();
    }

    @Test
    void anExporterObjectsTypePublishesTheTableAsADlpackExchangeApiCapsule() {
        try (PyObjectRef obj = exporter(new float[] {1, 2})) {
            python.set(ns, "obj", obj);
            try (PyObjectRef r = python.eval("str(type(obj).__dlpack_c_exchange_api__)", ns)) {
                assertTrue(r.str().contains("capsule object \"dlpack_exchange_api\""), r.str());
            }
            DLPackExchange api = PythonExchange.of(obj);
            assertEquals(PythonExchange.publishedTable().address(), api.address(), "the one published table");
            assertEquals(DLPack.MAJOR_VERSION, api.majorVersion());
            assertEquals(DLPack.MINOR_VERSION, api.minorVersion());
        }
    }

    @Test
    void theTableHandsOutTheExportersTensorWithoutCallingDlpackAndWithoutSync() {
        float[] values = {1.5f, -2f, 3.25f};
        try (PyObjectRef obj = exporter(values)) {
            DLPackExchange api = PythonExchange.of(obj);
            try (ImportedTensor t = PythonExchange.importTensor(api, obj, ImportOptions.expecting(Device.CPU))) {
                assertEquals(DType.FLOAT32, t.dtype());
                assertArrayEquals(new long[] {3}, t.shape());
                assertArrayEquals(values, t.segment().toArray(ValueLayout.JAVA_FLOAT));
                assertEquals(0, TestTensors.DELETES.get());
            }
            assertEquals(1, TestTensors.DELETES.get(), "deleted once when the import closed");
            assertEquals(1, requests.size());
            assertFalse(requests.get(0).needsSync(), "no synchronisation: stream -1");
        }
    }

    @Test
    void theTablesStreamAndAllocatorAreTheLibrarys() {
        try (PyObjectRef obj = exporter(new float[] {1}); Gil ignored = python.gil()) {
            DLPackExchange api = PythonExchange.of(obj);
            assertEquals(MemorySegment.NULL, api.currentWorkStream(Device.CPU));
            try (ImportedTensor t = api.allocate(DType.INT32, new long[] {2, 3}, Device.CPU)) {
                assertArrayEquals(new long[] {2, 3}, t.shape());
            }
        }
    }

    @Test
    void anObjectThatIsNoExporterIsRefusedWithAPythonBufferError() {
        try (PyObjectRef obj = exporter(new float[] {1}); PyObjectRef other = python.eval("object()", ns)) {
            DLPackExchange api = PythonExchange.of(obj);
            PythonException e = assertThrows(PythonException.class,
                    () -> PythonExchange.importTensor(api, other, ImportOptions.any()).close());
            assertEquals("BufferError", e.pythonType());
            assertEquals(0, TestTensors.DELETES.get());
        }
    }

    @Test
    void aTypeWithoutATableIsRefusedTyped() {
        try (PyObjectRef plain = PythonExport.builder().dlpack(Device.CPU,
                r -> TestTensors.cpuTensor(true, new float[] {1}, new long[] {1}, false)).build()) {
            assertThrows(UnsupportedFeatureException.class, () -> PythonExchange.of(plain));
        }
        assertThrows(DeviceBridgeException.class, () -> PythonExport.builder().arrowSchema(s -> { })
                .dlpackExchangeApi().build());
    }
}
