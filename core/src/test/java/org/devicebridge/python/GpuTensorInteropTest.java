package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicReference;
import org.devicebridge.Device;
import org.devicebridge.dlpack.ConsumerStream;
import org.devicebridge.generated.cuda.cuda_driver_h;
import org.devicebridge.generated.dlpack.DLDevice;
import org.devicebridge.generated.dlpack.DLTensor;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * CUDA tensors between Java and the real PyTorch and CuPy (skipped without a GPU or without the library):
 * each consumes a device tensor exported from Java on a non-default stream, runs a kernel on it that Java
 * then sees (the proof of zero copy), and Java imports their tensors on a stream of its own.
 */
@RequiresCuda
class GpuTensorInteropTest {
    private static final int N = 8;
    private PythonRuntime python;
    private PyObjectRef ns;
    private Arena arena;
    private long liveBefore;
    private int exportsBefore;
    private int deletesBefore;

    private static void ok(String fn, int result) {
        assertEquals(0, result, fn + " returned CUresult " + result);
    }

    @BeforeEach
    void setUp() {
        python = PythonTesting.runtime();
        liveBefore = HandleTracker.liveHandles();
        exportsBefore = PythonExport.liveObjects();
        deletesBefore = TestTensors.DELETES.get();
        arena = Arena.ofConfined();
        ns = python.newNamespace();
        python.exec("import gc", ns);
    }

    @AfterEach
    void tearDown() {
        if (ns == null) {
            return; // skipped in setUp: nothing to check
        }
        {
            python.exec("gc.collect()", ns);
            ns.close();
        }
        if (arena != null) {
            arena.close();
        }
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBefore, PythonExport.liveObjects(), "exporter objects still alive");
    }

    /** Imports the library, lets it create the primary context, and makes that context current here. */
    private void useLibraryContext(String library) {
        assumeTrue(python.canImport(library), "Python module '" + library + "' is not installed for " + python);
        if (library.equals("torch")) {
            python.exec("import torch", ns);
            try (PyObjectRef cuda = python.eval("torch.cuda.is_available()", ns)) {
                assumeTrue("True".equals(cuda.str()), "this PyTorch has no CUDA support");
            }
            python.exec("torch.zeros(1, device='cuda')", ns);
        } else {
            python.exec("import cupy\ncupy.zeros(1)", ns);
        }
        MemorySegment dev = arena.allocate(JAVA_INT);
        ok("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, 0));
        MemorySegment ctx = arena.allocate(ADDRESS);
        ok("cuDevicePrimaryCtxRetain", cuda_driver_h.cuDevicePrimaryCtxRetain(ctx, dev.get(JAVA_INT, 0)));
        ok("cuCtxSetCurrent", cuda_driver_h.cuCtxSetCurrent(ctx.get(ADDRESS, 0)));
    }

    private void releaseContext() {
        MemorySegment dev = arena.allocate(JAVA_INT);
        ok("cuDeviceGet", cuda_driver_h.cuDeviceGet(dev, 0));
        ok("cuDevicePrimaryCtxRelease", cuda_driver_h.cuDevicePrimaryCtxRelease_v2(dev.get(JAVA_INT, 0)));
    }

    private float[] download(long dptr) {
        MemorySegment host = arena.allocate(JAVA_FLOAT, N);
        ok("cuMemcpyDtoH", cuda_driver_h.cuMemcpyDtoH_v2(host, dptr, 4L * N));
        return host.toArray(JAVA_FLOAT);
    }

    @ParameterizedTest
    @ValueSource(strings = {"torch", "cupy"})
    void libraryConsumesJavaCudaTensorOnItsStreamAndItsKernelWritesJavaMemory(String library) {
        useLibraryContext(library);
        MemorySegment out = arena.allocate(JAVA_LONG);
        ok("cuMemAlloc", cuda_driver_h.cuMemAlloc_v2(out, 4L * N));
        long dptr = out.get(JAVA_LONG, 0);
        try {
            float[] init = new float[N];
            for (int i = 0; i < N; i++) {
                init[i] = i;
            }
            ok("cuMemcpyHtoD", cuda_driver_h.cuMemcpyHtoD_v2(dptr, arena.allocateFrom(JAVA_FLOAT, init), 4L * N));
            AtomicReference<ConsumerStream> seen = new AtomicReference<>();
            try (PyObjectRef obj = PythonExport.builder()
                    .dlpack(Device.cuda(0), r -> {
                        seen.set(r);
                        // the data was written synchronously above: ready on any stream the consumer names
                        return TestTensors.tensor(true, MemorySegment.ofAddress(dptr), false,
                                new long[] {N}, 2, 0, false);
                    })
                    .build()) {
                python.set(ns, "obj", obj);
                if (library.equals("torch")) {
                    python.exec("""
                            s = torch.cuda.Stream()
                            with torch.cuda.stream(s):
                                t = torch.from_dlpack(obj)
                                t.mul_(2).add_(1)
                            s.synchronize()
                            ptr, stream_ptr, dev = t.data_ptr(), s.cuda_stream, str(t.device)
                            """, ns);
                } else {
                    python.exec("""
                            s = cupy.cuda.Stream(non_blocking=True)
                            with s:
                                t = cupy.from_dlpack(obj)
                                t *= 2
                                t += 1
                            s.synchronize()
                            ptr, stream_ptr, dev = t.data.ptr, s.ptr, 'cuda:%d' % t.device.id
                            """, ns);
                }
                try (PyObjectRef ptr = python.eval("ptr", ns); PyObjectRef streamPtr = python.eval("stream_ptr", ns);
                     PyObjectRef dev = python.eval("dev", ns)) {
                    assertEquals(dptr, ptr.toLong(), library + " uses Java's device memory in place");
                    assertEquals("cuda:0", dev.str());
                    assertTrue(seen.get().needsSync(), "a CUDA consumer passes its stream");
                    assertEquals(streamPtr.toLong(), seen.get().handle().address(),
                            "the consumer's non-default stream reaches the Java exporter");
                }
                float[] expected = new float[N];
                for (int i = 0; i < N; i++) {
                    expected[i] = 2 * i + 1;
                }
                assertArrayEquals(expected, download(dptr), "Java sees the change " + library + "'s kernels made");
                assertEquals(deletesBefore, TestTensors.DELETES.get());
                python.exec("del t, obj\ngc.collect()", ns);
            }
            assertEquals(deletesBefore + 1, TestTensors.DELETES.get(), "one delete when the library let go");
        } finally {
            ok("cuMemFree", cuda_driver_h.cuMemFree_v2(dptr));
            releaseContext();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"torch", "cupy"})
    void javaImportsLibraryCudaTensorOnItsOwnStream(String library) {
        useLibraryContext(library);
        python.exec(library.equals("torch")
                ? "x = torch.arange(8, dtype=torch.float32, device='cuda') * 3\nxptr = x.data_ptr()"
                : "x = cupy.arange(8, dtype=cupy.float32) * 3\nxptr = x.data.ptr", ns);
        MemorySegment streamOut = arena.allocate(ADDRESS);
        ok("cuStreamCreate", cuda_driver_h.cuStreamCreate(streamOut, 1)); // CU_STREAM_NON_BLOCKING
        MemorySegment stream = streamOut.get(ADDRESS, 0);
        try (PyObjectRef x = python.eval("x", ns);
             PyObjectRef capsule = PythonImport.dlpack(x, OptionalLong.of(stream.address()))) {
            CapsuleKind kind = Capsules.kindOf(capsule);
            boolean versioned = kind == CapsuleKind.DLTENSOR_VERSIONED;
            MemorySegment managed = Capsules.take(capsule, kind, p -> p);
            try {
                MemorySegment t = TestTensors.dlTensor(managed, versioned);
                assertEquals(2, DLDevice.device_type(DLTensor.device(t)), "kDLCUDA");
                long data = DLTensor.data(t).address() + DLTensor.byte_offset(t);
                try (PyObjectRef xptr = python.eval("xptr", ns)) {
                    assertEquals(xptr.toLong(), data, "Java reads " + library + "'s memory in place");
                }
                // ordered after the producer's work by the event it made our stream wait on
                MemorySegment host = arena.allocate(JAVA_FLOAT, N);
                ok("cuMemcpyDtoHAsync", cuda_driver_h.cuMemcpyDtoHAsync_v2(host, data, 4L * N, stream));
                ok("cuStreamSynchronize", cuda_driver_h.cuStreamSynchronize(stream));
                assertArrayEquals(new float[] {0, 3, 6, 9, 12, 15, 18, 21}, host.toArray(JAVA_FLOAT));
            } finally {
                TestTensors.callDeleter(managed, versioned);
            }
            assertEquals("used_" + kind.capsuleName(), Capsules.nameOf(capsule));
        } finally {
            ok("cuStreamDestroy", cuda_driver_h.cuStreamDestroy_v2(stream));
            releaseContext();
        }
        try (PyObjectRef still = python.eval("float(x.sum())", ns)) {
            assertEquals(84.0, still.toDouble(), "the producer's tensor outlives the deleted export");
        }
    }
}
