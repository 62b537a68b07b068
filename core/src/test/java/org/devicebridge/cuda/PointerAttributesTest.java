package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import org.devicebridge.DeviceKind;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.devicebridge.Device;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Pointer attributes of device, pinned, registered and plain host memory, and their cache. */
@RequiresCuda
class PointerAttributesTest {
    private static final int DEVICE = 0;
    private long liveBefore;

    @BeforeEach
    void baseline() {
        liveBefore = HandleTracker.liveHandles();
    }

    @AfterEach
    void nothingLeaked() {
        assertEquals(liveBefore, HandleTracker.liveHandles());
    }

    @Test
    void deviceMemoryIsDeviceOfItsOrdinalWithItsRange() {
        long bytes = 3 << 20;
        try (CudaStream s = CudaStream.create(Device.cuda(DEVICE));
             DeviceBuffer plain = DeviceBuffer.allocate(Device.cuda(DEVICE), bytes);
             DeviceBuffer pooled = DeviceBuffer.allocateAsync(Device.cuda(DEVICE), bytes, s)) {
            for (DeviceBuffer b : new DeviceBuffer[] {plain, pooled}) {
                long inside = b.address() + 12345;
                PointerAttributes cached = PointerAttributes.of(inside);
                assertEquals(new PointerAttributes(DeviceKind.CUDA, DEVICE, b.address(), bytes, false), cached);
                assertSame(cached, PointerAttributes.of(b.address()), "answered from the per-allocation cache");
                PointerAttributes driver = PointerAttributes.query(inside);
                assertEquals(DeviceKind.CUDA, driver.kind());
                assertEquals(DEVICE, driver.deviceOrdinal());
                assertFalse(driver.managed());
                // the driver reports the mappable range, which contains the allocation
                assertTrue(driver.contains(b.address()) && driver.contains(b.address() + bytes - 1), driver.toString());
            }
            s.synchronize();
        }
    }

    @Test
    void pinnedMemoryIsHostWithItsRange() {
        try (PinnedHostBuffer p = PinnedHostBuffer.allocate(10_000)) {
            long address = p.segment().address();
            PointerAttributes a = PointerAttributes.of(address + 9_999);
            assertEquals(DeviceKind.CUDA_HOST, a.kind());
            assertEquals(address, a.rangeStart());
            assertEquals(10_000, a.rangeSize());
            assertEquals(DeviceKind.CUDA_HOST, PointerAttributes.query(address).kind());
        }
    }

    @Test
    void registeredMemoryIsHostUntilUnregistered() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(1 << 16, 4096);
            PointerAttributes before = PointerAttributes.of(seg.address());
            assertEquals(DeviceKind.CPU, before.kind());
            assertEquals(-1, before.deviceOrdinal());
            try (PinnedHostBuffer r = PinnedHostBuffer.register(seg)) {
                assertEquals(seg, r.segment());
                PointerAttributes during = PointerAttributes.of(seg.address() + 100);
                assertEquals(DeviceKind.CUDA_HOST, during.kind());
                // the range of registered memory is the driver's to report; where it reports one, it holds the address
                assertTrue(during.rangeSize() == 0 || during.contains(seg.address()), during.toString());
            }
            // closing the registration dropped its cached range
            assertEquals(DeviceKind.CPU, PointerAttributes.of(seg.address() + 100).kind());
        }
    }

    @Test
    void plainHostMemoryIsUnregistered() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64);
            PointerAttributes a = PointerAttributes.query(seg.address());
            assertEquals(new PointerAttributes(DeviceKind.CPU, -1, 0, 0, false), a);
        }
    }

    @Test
    void freedDeviceMemoryLeavesTheCache() {
        long address;
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(DEVICE), 1 << 20)) {
            address = b.address();
            assertEquals(DeviceKind.CUDA, PointerAttributes.of(address).kind());
            assertEquals(address, PointerAttributes.cachedOwn(address).rangeStart());
        }
        // freed: no longer answered from the per-allocation cache (the driver may still map the address:
        // it sub-allocates small allocations from larger pages, so the driver's answer is not asserted)
        assertEquals(null, PointerAttributes.cachedOwn(address));
    }
}
