package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.devicebridge.Device;
import org.devicebridge.DeviceKind;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The Python protocol's stream values, per device, and the producer's synchronisation before export. */
class ConsumerStreamTest {

    @ParameterizedTest(name = "{0} stream {1} -> {2} ({3})")
    @CsvSource(nullValues = "None", value = {
        "CUDA, None, DEFAULT, 1",
        "CUDA, 1, DEFAULT, 1",
        "CUDA, 2, PER_THREAD_DEFAULT, 2",
        "CUDA, -1, NO_SYNC, 0",
        "CUDA, 140737488355328, STREAM, 140737488355328",
        "CUDA_HOST, None, DEFAULT, 1",
        "CUDA_MANAGED, 3, STREAM, 3",
        "ROCM, None, DEFAULT, 0",
        "ROCM, 0, DEFAULT, 0",
        "ROCM, -1, NO_SYNC, 0",
        "ROCM, 4096, STREAM, 4096",
        "CPU, None, NO_SYNC, 0",
        "CPU, -1, NO_SYNC, 0",
        "VULKAN, None, NO_SYNC, 0"})
    void validStreamValuesMeanWhatThePythonSpecSays(DeviceKind type, Long stream, ConsumerStream.Kind kind, long handle) {
        ConsumerStream s = ConsumerStream.of(new Device(type, 0), stream);
        assertEquals(kind, s.kind());
        assertEquals(handle, s.handle().address());
        assertEquals(kind != ConsumerStream.Kind.NO_SYNC, s.needsSync());
    }

    @ParameterizedTest(name = "{0} stream {1} is refused")
    @CsvSource({"CUDA, 0", "CUDA, -2", "CUDA_HOST, 0", "ROCM, 1", "ROCM, 2", "ROCM, -7", "CPU, 0", "CPU, 1",
        "CPU, 12345", "METAL, 5"})
    void invalidStreamValuesAreRefusedTyped(DeviceKind type, long stream) {
        ValidationException e = assertThrows(ValidationException.class, () -> ConsumerStream.of(new Device(type, 0), stream));
        assertEquals(Category.STREAM, e.category());
        assertEquals("stream", e.path());
    }

    @Test
    void theProducerSynchronisesBeforeExportingAndNotAfterAFailure() {
        List<ConsumerStream> seen = new ArrayList<>();
        java.util.function.Consumer<ConsumerStream> recorder = seen::add;
        AtomicInteger closes = new AtomicInteger();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(64);
            Device gpu = Device.cuda(0);
            ConsumerStream consumer = ConsumerStream.of(gpu, 2L);
            TensorSpec spec = TensorSpec.of(data, DType.FLOAT32, 16).withDevice(gpu).withConsumerStream(consumer, recorder);
            try (ExportedTensor e = DLPack.exportVersioned(spec, closes::incrementAndGet)) {
                assertEquals(List.of(consumer), seen);
            }
            assertEquals(1, closes.get());
            ValidationException e = assertThrows(ValidationException.class, () -> DLPack.exportVersioned(
                    spec.withDevice(Device.cuda(1)), closes::incrementAndGet));
            assertEquals(Category.DEVICE, e.category());
            assertEquals(1, seen.size(), "no synchronisation for a refused export");
            assertEquals(1, closes.get());
        }
    }

    @Test
    void theCudaSynchronizerDoesNothingWhenNoSyncIsRequestedOrTheStreamIsTheProducers() {
        // neither case may touch the driver, so this runs without a GPU
        ConsumerStream.of(Device.cuda(0), -1L).waitForCuda(MemorySegment.ofAddress(0x1234));
        ConsumerStream.of(Device.cuda(0), 0x1234L).waitForCuda(MemorySegment.ofAddress(0x1234));
    }
}
