package org.devicebridge.dlpack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.devicebridge.Device;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.UnsupportedFeatureException;
import org.devicebridge.ValidationException;
import org.devicebridge.ValidationException.Category;
import org.devicebridge.generated.dlpack.DLPackExchangeAPI;
import org.devicebridge.generated.dlpack.DLPackExchangeAPIHeader;
import org.devicebridge.generated.dlpack.DLPackVersion;
import org.devicebridge.internal.HandleTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The C exchange API: this library's published table, consumed through the same C function pointers. */
class DLPackExchangeTest {
    private long liveBaseline;
    private int exportsBaseline;

    @BeforeEach
    void baseline() {
        DLPackExchange.published(); // builds the table (and its handles) once, outside the counts
        liveBaseline = HandleTracker.liveHandles();
        exportsBaseline = Exports.REGISTRY.size();
    }

    @AfterEach
    void nothingLeaked() {
        assertEquals(liveBaseline, HandleTracker.liveHandles(), "live handles");
        assertEquals(exportsBaseline, Exports.REGISTRY.size(), "live exports");
    }

    @Test
    void thePublishedAllocatorMakesWritableCompactCpuTensorsFreedByTheirDeleter() {
        DLPackExchange api = DLPackExchange.published();
        assertEquals(1, api.majorVersion());
        assertEquals(3, api.minorVersion());
        try (ImportedTensor t = api.allocate(DType.FLOAT64, new long[] {3, 5}, Device.CPU)) {
            assertArrayEquals(new long[] {3, 5}, t.shape());
            assertArrayEquals(new long[] {5, 1}, t.strides());
            assertEquals(120, t.segment().byteSize());
            t.segment().setAtIndex(ValueLayout.JAVA_DOUBLE, 14, 2.5);
            assertEquals(2.5, t.segment().getAtIndex(ValueLayout.JAVA_DOUBLE, 14));
            assertEquals(exportsBaseline + 1, Exports.REGISTRY.size(), "the allocation is held until the deleter runs");
        }
    }

    @Test
    void aRefusedAllocationCarriesTheProducersErrorKindAndMessage() {
        DeviceBridgeException e = assertThrows(DeviceBridgeException.class,
                () -> DLPackExchange.published().allocate(DType.FLOAT32, new long[] {4}, Device.cuda(0)));
        assertTrue(e.getMessage().contains("NotImplementedError: devicebridge allocates kDLCPU tensors only"), e.getMessage());
    }

    @Test
    void theCurrentWorkStreamIsTheDefaultStreamAndPythonFunctionsRefuse() {
        DLPackExchange api = DLPackExchange.published();
        assertEquals(0, api.currentWorkStream(Device.CPU).address());
        assertThrows(DeviceBridgeException.class, () -> api.importFromPyObject(MemorySegment.ofAddress(8), ImportOptions.any()));
    }

    @Test
    void tablesWithAnotherMajorVersionOrBefore12AreRefused() {
        try (Arena arena = Arena.ofConfined()) {
            for (int[] v : new int[][] {{2, 0}, {0, 9}, {1, 1}}) {
                MemorySegment t = arena.allocate(DLPackExchangeAPI.layout());
                MemorySegment ver = DLPackExchangeAPIHeader.version(DLPackExchangeAPI.header(t));
                DLPackVersion.major(ver, v[0]);
                DLPackVersion.minor(ver, v[1]);
                ValidationException e = assertThrows(ValidationException.class, () -> DLPackExchange.of(t));
                assertEquals(Category.VERSION, e.category());
            }
            assertEquals(Category.RELEASED, assertThrows(ValidationException.class,
                    () -> DLPackExchange.of(MemorySegment.NULL)).category());
        }
    }

    @Test
    void missingFunctionsAreReportedByName() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment t = arena.allocate(DLPackExchangeAPI.layout());
            MemorySegment ver = DLPackExchangeAPIHeader.version(DLPackExchangeAPI.header(t));
            DLPackVersion.major(ver, 1);
            DLPackVersion.minor(ver, 2);
            DLPackExchange api = DLPackExchange.of(t);
            UnsupportedFeatureException e = assertThrows(UnsupportedFeatureException.class,
                    () -> api.allocate(DType.INT8, new long[] {1}, Device.CPU));
            assertEquals("managed_tensor_allocator", e.path());
            assertThrows(UnsupportedFeatureException.class, () -> api.currentWorkStream(Device.CPU));
        }
    }
}
