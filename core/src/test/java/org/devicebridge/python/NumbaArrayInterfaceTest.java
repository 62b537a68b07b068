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
 * {@code __cuda_array_interface__} v3 with Numba alone (no CuPy), in one process: Numba's
 * {@code numba.cuda.as_cuda_array} views device memory Java wrote on its own stream (Numba synchronises the
 * exported stream), reads it and writes into it, which Java then sees (zero copy); and Java imports Numba device
 * arrays, one made on a Numba stream (the import makes Java's stream wait on it) and a strided view. Skipped,
 * with the reason, without a GPU, without Numba, or where Numba sees no CUDA device.
 */
@RequiresCuda
class NumbaArrayInterfaceTest {
    private PythonRuntime python;
    private PyObjectRef ns;
    private long liveBefore;
    private int exportsBefore;

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtimeWith("numba");
        liveBefore = HandleTracker.liveHandles(); // before the namespace, which tearDown closes first
        ns = python.newNamespace();
        python.exec("import gc\nimport numpy as np\nfrom numba import cuda as nc\nusable = nc.is_available()", ns);
        try (PyObjectRef usable = python.eval("usable", ns)) {
            if (!"True".equals(usable.str())) {
                ns.close();
                ns = null;
                assumeTrue(false, "Numba is installed for " + python + " but numba.cuda.is_available() is False");
            }
        }
        exportsBefore = PythonExport.liveObjects();
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
    void numbaAsCudaArrayReadsAndWritesJavaDeviceMemoryZeroCopy() {
        try (CudaStream stream = CudaStream.create(Device.cuda(0));
             DeviceBuffer buffer = DeviceBuffer.allocate(Device.cuda(0), 4 * 8);
             Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(JAVA_FLOAT, 8);
            for (int i = 0; i < 8; i++) {
                host.setAtIndex(JAVA_FLOAT, i, i + 1);
            }
            CudaCopies.hostToDeviceAsync(host, buffer, 0, stream); // not synchronised: Numba syncs the exported stream
            TensorSpec spec = TensorSpec.of(MemorySegment.ofAddress(buffer.address()).reinterpret(32), DType.FLOAT32, 2, 4)
                    .withDevice(Device.cuda(0));
            try (PyObjectRef obj = PythonExport.builder()
                    .cudaArrayInterface(spec, MemorySegment.ofAddress(stream.address())).build()) {
                python.set(ns, "obj", obj);
                python.exec("""
                        b = nc.as_cuda_array(obj)
                        same = b.__cuda_array_interface__['data'][0] == obj.__cuda_array_interface__['data'][0]
                        shape = list(b.shape)
                        seen = b.copy_to_host().tolist()
                        b.copy_to_device(np.asarray(seen, dtype=np.float32) * 3)
                        nc.synchronize()
                        del b
                        """, ns);
                try (PyObjectRef seen = python.eval("seen", ns);
                     PyObjectRef same = python.eval("same", ns);
                     PyObjectRef shape = python.eval("shape", ns)) {
                    assertEquals("[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]", seen.str());
                    assertEquals("True", same.str(), "Numba's view is Java's memory");
                    assertEquals("[2, 4]", shape.str());
                }
                python.exec("del obj, seen, same, shape; gc.collect()", ns);
            }
            MemorySegment back = arena.allocate(JAVA_FLOAT, 8);
            CudaCopies.deviceToHost(buffer, 0, back);
            for (int i = 0; i < 8; i++) {
                assertEquals(3f * (i + 1), back.getAtIndex(JAVA_FLOAT, i), "tripled by Numba in place");
            }
        }
    }

    @Test
    void javaImportsNumbaDeviceArraysWaitingOnNumbasStream() {
        python.exec("""
                s = nc.stream()
                d = nc.to_device(np.arange(12, dtype=np.float32) * 2, stream=s)  # queued on s, not synchronised
                v = d.reshape(3, 4)[:, 1:]
                cai_stream = d.__cuda_array_interface__.get('stream')
                s_handle = int(s.handle.value) if hasattr(s.handle, 'value') else int(s.handle)
                """, ns);
        try (CudaStream stream = CudaStream.create(Device.cuda(0));
             Arena arena = Arena.ofConfined();
             PyObjectRef d = python.eval("d", ns);
             PyObjectRef v = python.eval("v", ns);
             PyObjectRef caiStream = python.eval("cai_stream", ns);
             PyObjectRef sHandle = python.eval("s_handle", ns);
             InterfaceArray arr = ArrayInterfaces.importCudaArrayInterface(d,
                     ConsumerStream.of(Device.cuda(0), stream.address()), ImportOptions.any().confirmingPointers());
             InterfaceArray view = ArrayInterfaces.importCudaArrayInterface(v,
                     ConsumerStream.of(Device.cuda(0), stream.address()), ImportOptions.any())) {
            ImportedTensor t = arr.tensor();
            assertEquals(Device.cuda(0), t.device());
            assertEquals(DType.FLOAT32, t.dtype());
            assertArrayEquals(new long[] {12}, t.shape());
            if (!caiStream.isNone()) {
                assertEquals(sHandle.toLong(), caiStream.toLong(), "Numba reports the array's stream");
                assertEquals(sHandle.toLong(), arr.producerStream().orElseThrow().address());
            }
            assertArrayEquals(new long[] {3, 3}, view.tensor().shape());
            assertArrayEquals(new long[] {4, 1}, view.tensor().strides());
            MemorySegment host = arena.allocate(JAVA_FLOAT, 12);
            try (DeviceBuffer wrapped = DeviceBuffer.wrap(t.devicePointer().address(), t.byteExtent(), Device.cuda(0), null)) {
                CudaCopies.deviceToHostAsync(wrapped, 0, host, stream); // ordered after Numba's copy by the import
                stream.synchronize();
            }
            for (int i = 0; i < 12; i++) {
                assertEquals(2f * i, host.getAtIndex(JAVA_FLOAT, i));
            }
        }
        python.exec("del d, v, s, cai_stream, s_handle", ns);
    }
}
