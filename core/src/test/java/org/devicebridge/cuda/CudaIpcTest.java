package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.devicebridge.Device;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/** CUDA IPC across two JVM processes: the child opens the parent's memory and event from their handles. */
@RequiresCuda
class CudaIpcTest {
    private static final int DEVICE = 0;

    @Test
    void childProcessReadsAndWritesTheParentsDeviceMemory() throws Exception {
        long liveBefore = HandleTracker.liveHandles();
        int size = (4 << 20) + 13;
        long parentSeed = 11;
        long childSeed = 12;
        byte[] parentBytes = CudaMemoryTest.pattern(size, parentSeed);
        try (CudaStream stream = CudaStream.create(Device.cuda(DEVICE));
             DeviceBuffer buffer = DeviceBuffer.allocate(Device.cuda(DEVICE), size);
             PinnedHostBuffer staging = PinnedHostBuffer.allocate(size);
             CudaEvent ready = CudaEvent.createInterprocess(Device.cuda(DEVICE))) {
            MemorySegment.copy(parentBytes, 0, staging.segment(), ValueLayout.JAVA_BYTE, 0, size);
            CudaCopies.hostToDeviceAsync(staging.segment(), buffer, 0, stream);
            ready.record(stream); // no host synchronisation: the child waits on the event itself
            byte[] memHandle = buffer.ipcHandle();
            byte[] eventHandle = ready.ipcHandle();
            assertEquals(CudaIpc.HANDLE_SIZE, memHandle.length);

            List<String> command = new ArrayList<>();
            command.add(ProcessHandle.current().info().command().orElseThrow());
            command.add("--enable-native-access=ALL-UNNAMED");
            command.add("-cp");
            command.add(childClassPath());
            command.add(IpcChild.class.getName());
            command.add(Integer.toString(DEVICE));
            command.add(HexFormat.of().formatHex(memHandle));
            command.add(HexFormat.of().formatHex(eventHandle));
            command.add(Integer.toString(size));
            command.add(Long.toString(parentSeed));
            command.add(Long.toString(childSeed));
            Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = readAll(child);
            assertTrue(child.waitFor(120, TimeUnit.SECONDS), "child did not finish: " + output);
            assertEquals(0, child.exitValue(), "child output:\n" + output);

            // the parent sees what the child wrote through its mapping
            CudaCopies.deviceToHost(buffer, 0, staging.segment());
            assertArrayEquals(CudaMemoryTest.pattern(size, childSeed), staging.segment().toArray(ValueLayout.JAVA_BYTE));
        }
        assertEquals(liveBefore, HandleTracker.liveHandles());
    }

    @Test
    void onlyCuMemAllocMemoryAndInterprocessEventsCanBeShared() {
        try (CudaStream stream = CudaStream.create(Device.cuda(DEVICE));
             DeviceBuffer pooled = DeviceBuffer.allocateAsync(Device.cuda(DEVICE), 1024, stream);
             DeviceBuffer empty = DeviceBuffer.allocate(Device.cuda(DEVICE), 0);
             CudaEvent pooledEvent = CudaEvent.acquire(Device.cuda(DEVICE))) {
            assertThrows(UnsupportedFeatureException.class, () -> pooled.ipcHandle());
            assertThrows(UnsupportedFeatureException.class, () -> empty.ipcHandle());
            CudaException e = assertThrows(CudaException.class, () -> pooledEvent.ipcHandle());
            assertEquals("cuIpcGetEventHandle", e.function());
            stream.synchronize();
        }
    }

    private static String childClassPath() {
        return org.devicebridge.testing.ChildJvm.classPath(IpcChild.class);
    }

    private static String readAll(Process p) throws IOException {
        // the child prints little; reading to EOF also waits for it to close its output
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
}
