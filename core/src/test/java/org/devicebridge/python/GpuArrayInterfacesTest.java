package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.Device;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code __cuda_array_interface__} v3 with the real CuPy (and Numba where installed), in one process: Java
 * imports CuPy arrays made on CuPy's own non-blocking stream (the import makes Java's stream wait on it), and
 * CuPy and Numba consume device memory Java wrote on its stream (they wait on the exported stream) and write
 * to it, which Java then sees: zero copy both ways. Skipped without a GPU or without CuPy.
 */
@RequiresCuda
class GpuArrayInterfacesTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("cupy");
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        ns = python.newNamespace();
        python.exec("import cupy, gc", ns);
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

    @Test
    void javaImportsCupyArrayWaitingOnCupysStream() {
        // CuPy reports as `stream` the stream current when the attribute is read (1, the legacy default stream,
        // outside `with s:`), and the import reads the attribute itself: `onS` makes s current around that read.
        python.exec("""
                s = cupy.cuda.Stream(non_blocking=True)
                with s:
                    a = cupy.arange(12, dtype=cupy.float32) * 2
                    v = a.reshape(3, 4)[:, 1:]
                class OnStream:
                    def __init__(self, array, stream):
                        self.array, self.stream = array, stream
                    @property
                    def __cuda_array_interface__(self):
                        with self.stream:
                            return self.array.__cuda_array_interface__
                onS = OnStream(a, s)
                cai = onS.__cuda_array_interface__
                """, ns);
        try (CudaStream stream = CudaStream.create(Device.cuda(0));
             Arena arena = Arena.ofConfined();
             PyObjectRef a = python.eval("onS", ns);
             PyObjectRef v = python.eval("v", ns);
             PyObjectRef sPtr = python.eval("s.ptr", ns);
             PyObjectRef streamPtr = python.eval("cai.get('stream')", ns);
             InterfaceArray arr = ArrayInterfaces.importCudaArrayInterface(a,
                     ConsumerStream.of(Device.cuda(0), stream.address()), ImportOptions.any().confirmingPointers());
             InterfaceArray view = ArrayInterfaces.importCudaArrayInterface(v,
                     ConsumerStream.of(Device.cuda(0), stream.address()), ImportOptions.any())) {
            ImportedTensor t = arr.tensor();
            assertEquals(Device.cuda(0), t.device());
            assertEquals(DType.FLOAT32, t.dtype());
            if (!streamPtr.isNone()) { // None only where CUPY_CUDA_ARRAY_INTERFACE_SYNC=0
                assertEquals(sPtr.toLong(), streamPtr.toLong(), "CuPy reports its current stream");
                assertEquals(sPtr.toLong(), arr.producerStream().orElseThrow().address());
            }
            assertArrayEquals(new long[] {3, 3}, view.tensor().shape());
            assertArrayEquals(new long[] {4, 1}, view.tensor().strides());
            MemorySegment host = arena.allocate(JAVA_FLOAT, 12);
            try (DeviceBuffer wrapped = DeviceBuffer.wrap(t.devicePointer().address(), t.byteExtent(), Device.cuda(0), null)) {
                CudaCopies.deviceToHostAsync(wrapped, 0, host, stream); // ordered after CuPy's work by the import
                stream.synchronize();
            }
            for (int i = 0; i < 12; i++) {
                assertEquals(2f * i, host.getAtIndex(JAVA_FLOAT, i));
            }
        }
        python.exec("del a, v, cai, onS, OnStream, s", ns);
    }

    private void consumesJavaMemory(String consume) {
        try (CudaStream stream = CudaStream.create(Device.cuda(0));
             DeviceBuffer buffer = DeviceBuffer.allocate(Device.cuda(0), 4 * 8);
             Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(JAVA_FLOAT, 8);
            for (int i = 0; i < 8; i++) {
                host.setAtIndex(JAVA_FLOAT, i, i + 1);
            }
            CudaCopies.hostToDeviceAsync(host, buffer, 0, stream); // not synchronised: the consumer waits on the stream
            TensorSpec spec = TensorSpec.of(MemorySegment.ofAddress(buffer.address()).reinterpret(32), DType.FLOAT32, 2, 4)
                    .withDevice(Device.cuda(0));
            try (PyObjectRef obj = PythonExport.builder()
                    .cudaArrayInterface(spec, MemorySegment.ofAddress(stream.address())).build()) {
                python.set(ns, "obj", obj);
                python.exec(consume, ns);
                try (PyObjectRef seen = python.eval("seen", ns)) {
                    assertEquals("[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]", seen.str());
                }
                python.exec("del obj, seen; gc.collect()", ns);
            }
            MemorySegment back = arena.allocate(JAVA_FLOAT, 8);
            CudaCopies.deviceToHost(buffer, 0, back);
            for (int i = 0; i < 8; i++) {
                assertEquals(3f * (i + 1), back.getAtIndex(JAVA_FLOAT, i), "tripled by Python in place");
            }
        }
    }

    @Test
    void cupyConsumesJavaDeviceMemoryZeroCopyAfterJavasStream() {
        consumesJavaMemory("""
                b = cupy.asarray(obj)
                seen = b.tolist()
                b *= 3
                cupy.cuda.get_current_stream().synchronize()
                assert b.data.ptr == obj.__cuda_array_interface__['data'][0]
                del b
                """);
    }

    @Test
    void numbaConsumesJavaDeviceMemoryWhereInstalled() {
        assumeTrue(python.canImport("numba"), "Numba is not installed for " + python);
        consumesJavaMemory("""
                from numba import cuda as nc
                b = nc.as_cuda_array(obj)
                seen = b.copy_to_host().tolist()
                c = cupy.asarray(b)
                c *= 3
                cupy.cuda.get_current_stream().synchronize()
                del b, c
                """);
    }
}
