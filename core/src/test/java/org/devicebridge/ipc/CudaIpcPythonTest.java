package org.devicebridge.ipc;

import org.devicebridge.testing.PythonProcess;
import static org.devicebridge.testing.PythonProcess.python;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.devicebridge.Device;
import org.devicebridge.HandleBusyException;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.dlpack.DType;
import org.devicebridge.dlpack.ImportOptions;
import org.devicebridge.dlpack.ImportedTensor;
import org.devicebridge.dlpack.TensorSpec;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CUDA IPC between this JVM and a real CPython child process with CuPy, both ways, through the
 * language-neutral descriptor: the child maps Java's tensor, reads it after waiting on Java's event, doubles
 * it in place (Java sees the doubled values: zero copy) and acknowledges closing; then it shares a CuPy array
 * (a view into its allocation) that Java maps, reads and acknowledges. Skipped without a GPU, or where the
 * interpreter ({@code DEVICEBRIDGE_PYTHON}, else {@code python3}) cannot import CuPy.
 */
@RequiresCuda
class CudaIpcPythonTest {
    private static final int ROWS = 4;
    private static final int COLS = 8;
    private static final long OFFSET = 256;

    private static boolean hasCupy() {
        return PythonProcess.runs(PythonProcess.CUPY_WITH_GPU);
    }

    @Test
    void cupyChildReadsJavaTensorAndSharesItsOwnWithCloseAcknowledgements(@TempDir Path dir) throws Exception {
        assumeTrue(hasCupy(), python() + " cannot import CuPy with a GPU");
        long liveBefore = HandleTracker.liveHandles();
        Path script = dir.resolve("ipc_child.py");
        try (InputStream in = CudaIpcPythonTest.class.getResourceAsStream("ipc_child.py")) {
            Files.write(script, in.readAllBytes());
        }
        Process child = new ProcessBuilder(python(), script.toString())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (CudaStream stream = CudaStream.create(Device.cuda(0));
             DeviceBuffer buffer = DeviceBuffer.allocate(Device.cuda(0), 4096);
             Arena arena = Arena.ofConfined();
             Writer toChild = child.outputWriter(StandardCharsets.UTF_8);
             BufferedReader fromChild = new BufferedReader(new InputStreamReader(child.getInputStream(),
                     StandardCharsets.UTF_8))) {
            MemorySegment host = arena.allocate(JAVA_FLOAT, ROWS * COLS);
            StringBuilder expected = new StringBuilder("[");
            for (int r = 0; r < ROWS; r++) {
                expected.append(r == 0 ? "[" : ", [");
                for (int c = 0; c < COLS; c++) {
                    host.setAtIndex(JAVA_FLOAT, r * COLS + c, r * COLS + c);
                    expected.append(c == 0 ? "" : ", ").append((float) (r * COLS + c));
                }
                expected.append(']');
            }
            expected.append(']');
            CudaCopies.hostToDeviceAsync(host, buffer, OFFSET, stream); // the child waits on the event after it
            TensorSpec spec = TensorSpec.of(MemorySegment.ofAddress(buffer.address()).reinterpret(buffer.byteSize()),
                    DType.FLOAT32, ROWS, COLS).withByteOffset(OFFSET).withDevice(Device.cuda(0));
            IpcTensorExport export = IpcTensorExport.export(buffer, spec, stream);
            try {
                toChild.write(export.descriptor().toJson() + "\n");
                toChild.flush();
                String report = fromChild.readLine();
                assertEquals("{\"values\": " + expected + ", \"ptr_offset\": " + OFFSET + "}", report);
                String closed = fromChild.readLine();
                assertFalse(export.gate().isAcknowledged());
                assertThrows(HandleBusyException.class, export.gate()::close, "no close before the acknowledgement");
                export.gate().acknowledge(closed);
                export.gate().close();
            } finally {
                export.gate().forceClose(); // a no-op after close(); releases if an assertion failed above
            }
            stream.synchronize();
            MemorySegment back = arena.allocate(JAVA_FLOAT, ROWS * COLS);
            CudaCopies.deviceToHost(buffer, OFFSET, back);
            for (int i = 0; i < ROWS * COLS; i++) {
                assertEquals(2f * i, back.getAtIndex(JAVA_FLOAT, i), "element " + i + " doubled by the child");
            }

            IpcTensorDescriptor theirs = IpcTensorDescriptor.parse(fromChild.readLine());
            assertEquals(32, theirs.offset(), "a view 4 int64 into the child's allocation");
            MemorySegment values = arena.allocate(JAVA_LONG, 6);
            try (ImportedTensor t = IpcTensorImport.open(theirs, stream,
                    ImportOptions.expecting(Device.cuda(0)).confirmingPointers());
                 DeviceBuffer view = DeviceBuffer.wrap(t.devicePointer().address(), t.byteExtent(), Device.cuda(0), null)) {
                assertEquals(DType.INT64, t.dtype());
                CudaCopies.deviceToHostAsync(view, 0, values, stream);
                stream.synchronize();
            }
            for (int i = 0; i < 6; i++) {
                assertEquals(3L * (i + 4), values.getAtIndex(JAVA_LONG, i));
            }
            toChild.write(theirs.closeMessage() + "\n");
            toChild.flush();
            assertEquals("{\"done\": true}", fromChild.readLine());
            assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the child exits");
            assertEquals(0, child.exitValue());
        } finally {
            child.destroyForcibly();
        }
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
    }
}
