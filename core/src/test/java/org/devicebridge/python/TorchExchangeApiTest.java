package org.devicebridge.python;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import org.devicebridge.DeviceKind;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import org.devicebridge.Device;
import org.devicebridge.cuda.PointerAttributes;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DLPack;
import org.devicebridge.dlpack.DLPackExchange;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PyTorch's DLPack C exchange table ({@code type(t).__dlpack_c_exchange_api__}, PyTorch 2.11) consumed from
 * Java on CPU and CUDA (tensor from a PyObject without {@code __dlpack__}, current work stream, allocator),
 * torch given an object that publishes this library's table, and the per-tensor cost of each path beside
 * {@code torch.from_dlpack} in one run (printed as {@code [torch exchange]} lines). Skipped without torch;
 * the CUDA tests also without a GPU.
 */
class TorchExchangeApiTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("torch");
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        TestTensors.DELETES.set(0);
        ns = python.newNamespace();
        python.exec("import torch, gc, time", ns);
        System.out.println("[torch exchange] torch " + text("torch.__version__") + " on " + python);
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

    private String text(String expression) {
        try (PyObjectRef r = python.eval(expression, ns)) {
            return r.str();
        }
    }

    private long number(String expression) {
        try (PyObjectRef r = python.eval(expression, ns)) {
            return r.toLong();
        }
    }

    private void requireTorchCuda() {
        assumeTrue("True".equals(text("torch.cuda.is_available()")), "this PyTorch has no CUDA device");
        python.exec("torch.zeros(1, device='cuda')", ns); // torch creates its primary context
    }

    private DLPackExchange torchTable() {
        python.exec("t0 = torch.zeros(1)", ns);
        try (PyObjectRef t0 = python.eval("t0", ns)) {
            System.out.println("[torch exchange] torch.Tensor.__dlpack_c_exchange_api__ = "
                    + text("torch.Tensor.__dlpack_c_exchange_api__"));
            DLPackExchange api = PythonExchange.of(t0);
            System.out.println("[torch exchange] table version " + api.majorVersion() + "." + api.minorVersion());
            return api;
        }
    }

    @Test
    void cpuTensorComesFromItsPyObjectThroughTorchsTable() {
        DLPackExchange api = torchTable();
        python.exec("t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)", ns);
        try (PyObjectRef t = python.eval("t", ns);
             ImportedTensor imported = PythonExchange.importTensor(api, t, ImportOptions.expecting(Device.CPU))) {
            assertArrayEquals(new long[] {2, 3, 4}, imported.shape());
            assertEquals(DType.FLOAT32, imported.dtype());
            assertEquals(number("t.data_ptr()"), imported.segment().address(), "zero copy");
            float[] values = imported.segment().toArray(ValueLayout.JAVA_FLOAT);
            for (int i = 0; i < 24; i++) {
                assertEquals(i, values[i]);
            }
        }
    }

    @Test
    void cpuCurrentWorkStreamAndAllocator() {
        DLPackExchange api = torchTable();
        try (Gil ignored = python.gil()) {
            MemorySegment stream = api.currentWorkStream(Device.CPU);
            System.out.println("[torch exchange] current_work_stream(kDLCPU) = 0x" + Long.toHexString(stream.address()));
            try (ImportedTensor t = api.allocate(DType.FLOAT32, new long[] {3, 4, 5}, Device.CPU)) {
                assertArrayEquals(new long[] {3, 4, 5}, t.shape());
                assertEquals(Device.CPU, t.device());
                t.segment().fill((byte) 1); // torch's memory, writable
            }
        }
    }

    @Test
    @RequiresCuda
    void cudaTensorComesFromItsPyObjectAndItsPointerIsConfirmed() {
        requireTorchCuda();
        DLPackExchange api = torchTable();
        python.exec("t = torch.arange(1024, dtype=torch.float32, device='cuda')", ns);
        try (PyObjectRef t = python.eval("t", ns);
             ImportedTensor imported = PythonExchange.importTensor(api, t,
                     ImportOptions.expecting(Device.cuda(0)).confirmingPointers())) {
            assertEquals(number("t.data_ptr()"), imported.devicePointer().address());
            assertArrayEquals(new long[] {1024}, imported.shape());
        }
    }

    @Test
    @RequiresCuda
    void cudaCurrentWorkStreamIsTorchsCurrentStreamOnThisThread() {
        requireTorchCuda();
        DLPackExchange api = torchTable();
        python.exec("s = torch.cuda.Stream()\ntorch.cuda.set_stream(s)", ns);
        try (Gil ignored = python.gil()) {
            MemorySegment stream = api.currentWorkStream(Device.cuda(0));
            System.out.println("[torch exchange] current_work_stream(kDLCUDA, 0) = 0x" + Long.toHexString(stream.address())
                    + ", torch.cuda.current_stream() = 0x" + Long.toHexString(number("s.cuda_stream")));
            assertEquals(number("s.cuda_stream"), stream.address());
        } finally {
            python.exec("torch.cuda.set_stream(torch.cuda.default_stream())", ns);
        }
    }

    @Test
    @RequiresCuda
    void cudaAllocatorMakesDeviceMemoryOfTheAskedDevice() {
        requireTorchCuda();
        DLPackExchange api = torchTable();
        try (Gil ignored = python.gil();
             ImportedTensor t = api.allocate(DType.FLOAT32, new long[] {256}, Device.cuda(0))) {
            PointerAttributes a = PointerAttributes.query(t.devicePointer().address());
            assertEquals(DeviceKind.CUDA, a.kind());
            assertEquals(0, a.deviceOrdinal());
        }
    }

    @Test
    void torchFromDlpackOnAnObjectPublishingTheLibrarysTable() {
        List<ConsumerStream> requests = new ArrayList<>();
        float[] values = {4f, 5f, 6f};
        try (PyObjectRef obj = PythonExport.builder().dlpack(Device.CPU, r -> {
            requests.add(r);
            return TestTensors.cpuTensor(true, values, new long[] {3}, false);
        }).dlpackExchangeApi().build()) {
            python.set(ns, "obj", obj);
            python.exec("x = torch.from_dlpack(obj)", ns);
            assertEquals("[4.0, 5.0, 6.0]", text("x.tolist()"));
            assertEquals(1, requests.size());
            boolean viaTable = !requests.get(0).needsSync();
            System.out.println("[torch exchange] torch.from_dlpack on an object whose type publishes devicebridge's "
                    + "table went through " + (viaTable ? "the exchange table (managed_tensor_from_py_object_no_sync)"
                    : "__dlpack__ (request " + requests.get(0) + "): torch " + text("torch.__version__")
                    + " does not consume other types' tables in from_dlpack"));
            python.exec("del x, obj\ngc.collect()", ns);
        }
        assertEquals(1, TestTensors.DELETES.get(), "torch released the tensor once");
    }

    @Test
    void perTensorCostOnTheCpu() {
        python.exec("t = torch.arange(64, dtype=torch.float32)", ns);
        costs("cpu", OptionalLong.empty(), 20_000);
    }

    @Test
    @RequiresCuda
    void perTensorCostOnCuda() {
        requireTorchCuda();
        python.exec("t = torch.arange(64, dtype=torch.float32, device='cuda')", ns);
        costs("cuda", OptionalLong.of(-1), 20_000);
    }

    /** Times each path on {@code t} in this one run and prints ns per tensor. */
    private void costs(String device, OptionalLong stream, int n) {
        DLPackExchange torch = torchTable();
        float[] values = new float[64];
        try (PyObjectRef t = python.eval("t", ns);
             PyObjectRef obj = PythonExport.builder().dlpack(Device.CPU,
                     r -> TestTensors.cpuTensor(true, values, new long[] {64}, false)).dlpackExchangeApi().build();
             Gil ignored = python.gil()) {
            DLPackExchange ours = PythonExchange.of(obj);
            python.set(ns, "obj", obj);
            List<String> lines = new ArrayList<>();
            for (int round = 0; round < 2; round++) { // the first round warms up
                boolean report = round == 1;
                int iterations = report ? n : n / 10;
                long a = System.nanoTime();
                for (int i = 0; i < iterations; i++) {
                    try (ImportedTensor x = PythonExchange.importTensor(torch, t, ImportOptions.any())) {
                        x.shape();
                    }
                }
                long viaTable = System.nanoTime() - a;
                a = System.nanoTime();
                for (int i = 0; i < iterations; i++) {
                    try (PyObjectRef capsule = PythonImport.dlpack(t, stream);
                         ImportedTensor x = Capsules.take(capsule, CapsuleKind.DLTENSOR_VERSIONED,
                                 p -> DLPack.importVersioned(p, ImportOptions.any()))) {
                        x.shape();
                    }
                }
                long viaDunder = System.nanoTime() - a;
                a = System.nanoTime();
                for (int i = 0; i < iterations; i++) {
                    try (ImportedTensor x = PythonExchange.importTensor(ours, obj, ImportOptions.any())) {
                        x.shape();
                    }
                }
                long oursViaTable = System.nanoTime() - a;
                python.exec("def _time(f, n):\n    f()\n    s = time.perf_counter_ns()\n    for _ in range(n):\n"
                        + "        f()\n    return (time.perf_counter_ns() - s) / n\n"
                        + "from_torch = _time(lambda: torch.from_dlpack(t), " + iterations + ")\n"
                        + "from_ours = _time(lambda: torch.from_dlpack(obj), " + iterations + ")", ns);
                if (report) {
                    lines.add(line(device, "Java <- torch table (from_py_object_no_sync + import + delete)", viaTable, n));
                    lines.add(line(device, "Java <- torch __dlpack__ (capsule + import + delete)", viaDunder, n));
                    lines.add(String.format(Locale.ROOT, "[torch exchange] %-4s %-66s %8.0f ns/tensor", device,
                            "Python: torch.from_dlpack(torch tensor)", Double.parseDouble(text("from_torch"))));
                    lines.add(line(device, "Java <- devicebridge table on a Java exporter object (CPU tensor)",
                            oursViaTable, n));
                    lines.add(String.format(Locale.ROOT, "[torch exchange] %-4s %-66s %8.0f ns/tensor", device,
                            "Python: torch.from_dlpack(devicebridge exporter object, CPU tensor)",
                            Double.parseDouble(text("from_ours"))));
                }
            }
            lines.forEach(System.out::println);
            python.exec("obj = None", ns);
        }
        assertTrue(TestTensors.DELETES.get() > 0);
    }

    private static String line(String device, String what, long nanos, int n) {
        return String.format(Locale.ROOT, "[torch exchange] %-4s %-66s %8.0f ns/tensor", device, what, (double) nanos / n);
    }
}
