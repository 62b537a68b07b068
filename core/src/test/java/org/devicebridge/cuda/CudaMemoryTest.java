package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import org.devicebridge.DeviceKind;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.devicebridge.Device;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Device memory, pinned and registered host memory, and copies in every direction, on device 0. */
@RequiresCuda
class CudaMemoryTest {
    private static final int DEVICE = 0;
    private long liveBefore;
    private long failedBefore;
    private CudaCounters.Snapshot countersBefore;

    @BeforeEach
    void baseline() {
        liveBefore = HandleTracker.liveHandles();
        failedBefore = HandleTracker.failedReleases();
        countersBefore = CudaCounters.snapshot();
    }

    @AfterEach
    void nothingLeaked() {
        assertEquals(liveBefore, HandleTracker.liveHandles(), "live handles");
        assertEquals(failedBefore, HandleTracker.failedReleases(), "failed (logged) releases");
        CudaCounters.Snapshot after = CudaCounters.snapshot();
        assertEquals(countersBefore.deviceBytesOutstanding(), after.deviceBytesOutstanding(), "device bytes");
        assertEquals(countersBefore.pinnedBytesOutstanding(), after.pinnedBytesOutstanding(), "pinned bytes");
    }

    static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void allocateAndFreeReturnsDeviceMemoryToBaseline() {
        long size = 256L << 20;
        Cuda.synchronize(Device.cuda(DEVICE));
        long freeBefore = Cuda.freeMemory(Device.cuda(DEVICE));
        DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(DEVICE), size);
        assertEquals(size, b.byteSize());
        assertEquals(Device.cuda(DEVICE), b.device());
        assertTrue(b.address() != 0);
        long freeDuring = Cuda.freeMemory(Device.cuda(DEVICE));
        assertTrue(freeBefore - freeDuring >= size, "free memory should drop by at least " + size
                + " bytes, before " + freeBefore + " during " + freeDuring);
        assertEquals(countersBefore.memAllocCalls() + 1, CudaCounters.snapshot().memAllocCalls());
        b.close();
        b.close(); // idempotent
        Cuda.synchronize(Device.cuda(DEVICE));
        long freeAfter = Cuda.freeMemory(Device.cuda(DEVICE));
        // other processes may allocate meanwhile; our 256 MiB must be back (within 2 MiB of driver slack)
        assertTrue(freeAfter >= freeBefore - (2L << 20), "before " + freeBefore + " after " + freeAfter);
        assertThrows(HandleClosedException.class, b::address);
    }

    @Test
    void zeroByteBuffersAllocateNothing() {
        try (DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(DEVICE), 0);
             PinnedHostBuffer p = PinnedHostBuffer.allocate(0)) {
            assertEquals(0, b.address());
            assertEquals(0, p.segment().byteSize());
        }
        assertEquals(countersBefore.memAllocCalls(), CudaCounters.snapshot().memAllocCalls());
        assertEquals(countersBefore.memHostAllocCalls(), CudaCounters.snapshot().memHostAllocCalls());
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {0, 1, 4093, 1 << 20, 64 << 20})
    void syncCopiesRoundTripEveryByte(int size) {
        byte[] data = pattern(size, size);
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer a = DeviceBuffer.allocate(Device.cuda(DEVICE), size);
             DeviceBuffer b = DeviceBuffer.allocate(Device.cuda(DEVICE), size)) {
            MemorySegment src = arena.allocate(Math.max(size, 1)).asSlice(0, size);
            MemorySegment.copy(data, 0, src, ValueLayout.JAVA_BYTE, 0, size);
            MemorySegment dst = arena.allocate(Math.max(size, 1)).asSlice(0, size);
            CudaCopies.hostToDevice(src, a, 0);
            CudaCopies.deviceToDevice(a.range(0, size), b, 0);
            CudaCopies.deviceToHost(b, 0, dst);
            assertArrayEquals(data, dst.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {0, 1, 4093, 1 << 20, 64 << 20})
    void asyncCopiesThroughPinnedMemoryRoundTripEveryByte(int size) {
        byte[] data = pattern(size, 31L * size);
        try (CudaStream stream = CudaStream.create(Device.cuda(DEVICE));
             PinnedHostBuffer src = PinnedHostBuffer.allocate(size);
             PinnedHostBuffer dst = PinnedHostBuffer.allocate(size);
             DeviceBuffer a = DeviceBuffer.allocateAsync(Device.cuda(DEVICE), size, stream);
             DeviceBuffer b = DeviceBuffer.allocateAsync(Device.cuda(DEVICE), size, stream)) {
            MemorySegment.copy(data, 0, src.segment(), ValueLayout.JAVA_BYTE, 0, size);
            CudaCopies.hostToDeviceAsync(src.segment(), a, 0, stream);
            CudaCopies.deviceToDeviceAsync(a.range(0, size), b, 0, stream);
            CudaCopies.deviceToHostAsync(b, 0, dst.segment(), stream);
            stream.synchronize();
            assertTrue(stream.query());
            assertArrayEquals(data, dst.segment().toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void copiesHonourOffsetsAndRejectRangesOutsideTheBuffer() {
        try (Arena arena = Arena.ofConfined(); DeviceBuffer d = DeviceBuffer.allocate(Device.cuda(DEVICE), 100)) {
            MemorySegment host = arena.allocate(100);
            CudaCopies.fill(d.range(0, 100), (byte) 7);
            MemorySegment ten = arena.allocate(10);
            ten.fill((byte) 42);
            CudaCopies.hostToDevice(ten, d, 90);
            CudaCopies.deviceToHost(d, 0, host);
            for (int i = 0; i < 100; i++) {
                assertEquals(i >= 90 ? 42 : 7, host.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            assertThrows(InvalidArgumentException.class, () -> CudaCopies.hostToDevice(ten, d, 91));
            assertThrows(InvalidArgumentException.class, () -> CudaCopies.deviceToHost(d, -1, ten));
            assertThrows(InvalidArgumentException.class, () -> d.range(50, 51));
            assertThrows(InvalidArgumentException.class, () -> CudaCopies.deviceToDevice(d.range(50, 50), d, 51));
            assertThrows(InvalidArgumentException.class, () -> d.range(0, 101));
            assertThrows(InvalidArgumentException.class,
                    () -> CudaCopies.deviceToHost(d, 0, MemorySegment.ofArray(new byte[4])));
        }
    }

    @Test
    void registeredHostMemoryCopiesAsyncAndUnregistersOnClose() {
        int size = 3 << 20;
        byte[] data = pattern(size, 5);
        try (Arena arena = Arena.ofShared();
             CudaStream stream = CudaStream.createBlocking(Device.cuda(DEVICE));
             DeviceBuffer d = DeviceBuffer.allocate(Device.cuda(DEVICE), size)) {
            MemorySegment src = arena.allocate(size, 4096);
            MemorySegment dst = arena.allocate(size, 4096);
            MemorySegment.copy(data, 0, src, ValueLayout.JAVA_BYTE, 0, size);
            try (PinnedHostBuffer rs = PinnedHostBuffer.register(src);
                 PinnedHostBuffer rd = PinnedHostBuffer.register(dst)) {
                assertTrue(rs.isLive() && rd.isLive());
                assertEquals(DeviceKind.CUDA_HOST, PointerAttributes.query(src.address()).kind());
                // registering the same memory twice is a typed driver error
                CudaException twice = assertThrows(CudaException.class, () -> PinnedHostBuffer.register(src));
                assertEquals("cuMemHostRegister_v2", twice.function());
                assertEquals("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", twice.resultName());
                CudaCopies.hostToDeviceAsync(src, d, 0, stream);
                CudaCopies.deviceToHostAsync(d, 0, dst, stream);
                stream.synchronize();
                assertArrayEquals(data, dst.toArray(ValueLayout.JAVA_BYTE));
            }
            assertEquals(DeviceKind.CPU,
                    PointerAttributes.query(src.address()).kind());
            // unregistered now, so it can be registered again
            PinnedHostBuffer.register(src).close();
        }
    }

    @Test
    void pinnedSegmentIsUnusableAfterClose() {
        PinnedHostBuffer p = PinnedHostBuffer.allocate(4096);
        MemorySegment s = p.segment();
        s.set(ValueLayout.JAVA_INT, 0, 17);
        assertEquals(countersBefore.memHostAllocCalls() + 1, CudaCounters.snapshot().memHostAllocCalls());
        p.close();
        assertFalse(s.scope().isAlive());
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_INT, 0));
        assertThrows(HandleClosedException.class, p::segment);
    }

    @Test
    void retainedHandlesShareOneAllocationFreedByTheLastClose() {
        DeviceBuffer first = DeviceBuffer.allocate(Device.cuda(DEVICE), 1 << 20);
        long address = first.address();
        DeviceBuffer second = first.retain();
        DeviceBuffer third = second.retain();
        assertEquals(3, first.referenceCount());
        assertEquals(address, third.address());
        first.close();
        first.close(); // a second close of the same handle drops nothing more
        assertEquals(2, second.referenceCount());
        assertThrows(HandleClosedException.class, first::retain);
        long outstanding = CudaCounters.snapshot().deviceBytesOutstanding();
        assertEquals(countersBefore.deviceBytesOutstanding() + (1 << 20), outstanding, "still allocated");
        try (Arena arena = Arena.ofConfined()) {
            CudaCopies.deviceToHost(third, 0, arena.allocate(16)); // the memory is still valid
        }
        second.close();
        third.close();
        assertEquals(0, third.referenceCount());
        assertEquals(countersBefore.deviceBytesOutstanding(), CudaCounters.snapshot().deviceBytesOutstanding());
    }

    @Test
    void wrappedMemoryClosesItsOwnerOnceAfterTheLastHandle() {
        try (DeviceBuffer real = DeviceBuffer.allocate(Device.cuda(DEVICE), 4096)) {
            int[] closes = {0};
            DeviceBuffer view = DeviceBuffer.wrap(real.address(), 4096, Device.cuda(DEVICE), () -> closes[0]++);
            DeviceBuffer other = view.retain();
            view.close();
            assertEquals(0, closes[0]);
            other.close();
            other.close();
            assertEquals(1, closes[0]);
        }
    }

    @Test
    void concurrentCloseOfTheSameHandlesFreesEachExactlyOnce() throws Exception {
        int n = 64;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 20; round++) {
                DeviceBuffer[] buffers = new DeviceBuffer[n];
                CudaStream[] streams = new CudaStream[n];
                CudaEvent[] events = new CudaEvent[n];
                PinnedHostBuffer[] pinned = new PinnedHostBuffer[4];
                for (int i = 0; i < n; i++) {
                    buffers[i] = DeviceBuffer.allocate(Device.cuda(DEVICE), 4096);
                    streams[i] = CudaStream.create(Device.cuda(DEVICE));
                    events[i] = CudaEvent.acquire(Device.cuda(DEVICE));
                }
                for (int i = 0; i < pinned.length; i++) {
                    pinned[i] = PinnedHostBuffer.allocate(4096);
                }
                CountDownLatch start = new CountDownLatch(1);
                Runnable closeAll = () -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    for (int i = 0; i < n; i++) {
                        buffers[i].close();
                        events[i].close();
                        streams[i].close();
                    }
                    for (PinnedHostBuffer p : pinned) {
                        p.close();
                    }
                };
                Future<?> a = pool.submit(closeAll);
                Future<?> b = pool.submit(closeAll);
                start.countDown();
                a.get();
                b.get();
            }
        } finally {
            pool.shutdown();
        }
        // the @AfterEach asserts that no release failed (a double free would make the driver fail one) and
        // that live handles and outstanding device and pinned bytes are back to baseline
    }

    @Test
    void asyncAllocationOnAStreamOfAnotherDeviceIsRejected() {
        try (CudaStream s = CudaStream.borrow(Device.cuda(DEVICE), 0)) {
            assertThrows(InvalidArgumentException.class, () -> DeviceBuffer.allocateAsync(Device.cuda(DEVICE + 1), 16, s));
        }
    }

    @Test
    void streamOrderedBufferKeepsItsStreamAliveUntilFreed() {
        CudaStream stream = CudaStream.create(Device.cuda(DEVICE));
        DeviceBuffer b = DeviceBuffer.allocateAsync(Device.cuda(DEVICE), 1 << 20, stream);
        assertTrue(b.isStreamOrdered());
        stream.close(); // the CUstream stays until the buffer's cuMemFreeAsync was queued on it
        assertThrows(HandleClosedException.class, stream::synchronize);
        try (Arena arena = Arena.ofConfined()) {
            CudaCopies.hostToDevice(arena.allocate(64).fill((byte) 1), b, 0);
        }
        b.close();
        Cuda.synchronize(Device.cuda(DEVICE));
    }
}
