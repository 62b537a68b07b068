package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.devicebridge.Device;
import org.devicebridge.HandleClosedException;
import org.devicebridge.InvalidArgumentException;
import org.devicebridge.NativeHandle;
import org.devicebridge.internal.CudaCounters;
import org.devicebridge.internal.HandleTracker;
import org.devicebridge.testing.RequiresCuda;
import org.junit.jupiter.api.Test;

/** The transfer engine on a GPU: packed, aligned uploads and downloads, and a steady state that allocates nothing. */
@RequiresCuda
class HostDeviceTransferTest {
    private static final Device DEVICE = Device.cuda(0);

    private static List<MemorySegment> batch(Arena arena, Random r, long[] sizes) {
        List<MemorySegment> out = new ArrayList<>();
        for (long size : sizes) {
            MemorySegment s = arena.allocate(Math.max(1, size)).asSlice(0, size);
            byte[] b = new byte[(int) size];
            r.nextBytes(b);
            MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
            out.add(s);
        }
        return out;
    }

    @Test
    void uploadPacksAlignedBuffersIntoOneAllocationAndDownloadRestoresThem() {
        long liveBefore = HandleTracker.liveHandles();
        long deviceBytesBefore = CudaCounters.snapshot().deviceBytesOutstanding();
        Random r = new Random(42);
        // sizes 0, 1, odd, a buffer larger than one staging half (forces several chunks), 64 MiB
        long[] sizes = {0, 1, 7, 4093, 1 << 20, (3 << 20) + 5, 0, 64 << 20, 65};
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 4 << 20)) {
            List<MemorySegment> host = batch(arena, r, sizes);
            long allocationsBefore = CudaCounters.snapshot().memAllocAsyncCalls();
            try (DeviceUpload up = transfer.upload(host, stream)) {
                assertEquals(allocationsBefore + 1, CudaCounters.snapshot().memAllocAsyncCalls(), "one allocation");
                long[] offsets = up.offsets();
                assertEquals(sizes.length, up.count());
                assertArrayEquals(sizes, up.sizes());
                for (int i = 0; i < sizes.length; i++) {
                    assertEquals(0, (up.buffer().address() + offsets[i]) % HostDeviceTransfer.ALIGNMENT,
                            "buffer " + i + " is 64-byte aligned on the device");
                }
                // each buffer is where the offsets say, checked with plain copies
                for (int i = 0; i < sizes.length; i++) {
                    MemorySegment check = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                    stream.synchronize();
                    CudaCopies.deviceToHost(up.buffer(), offsets[i], check);
                    assertArrayEquals(host.get(i).toArray(ValueLayout.JAVA_BYTE), check.toArray(ValueLayout.JAVA_BYTE));
                }
                List<MemorySegment> back = transfer.download(ranges(up.buffer(), offsets, sizes), arena, stream);
                for (int i = 0; i < sizes.length; i++) {
                    assertEquals(0, back.get(i).address() % HostDeviceTransfer.ALIGNMENT);
                    assertArrayEquals(host.get(i).toArray(ValueLayout.JAVA_BYTE), back.get(i).toArray(ValueLayout.JAVA_BYTE),
                            "downloaded buffer " + i);
                }
            }
            stream.synchronize();
        }
        assertEquals(liveBefore, HandleTracker.liveHandles());
        assertEquals(deviceBytesBefore, CudaCounters.snapshot().deviceBytesOutstanding());
    }

    @Test
    void rangesOfSeveralAllocationsComeBackInOneDownload() {
        long liveBefore = HandleTracker.liveHandles();
        Random r = new Random(5);
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 1 << 16)) {
            List<MemorySegment> first = batch(arena, r, new long[] {100, 3000});
            List<MemorySegment> second = batch(arena, r, new long[] {40_000, 8});
            try (DeviceUpload a = transfer.upload(first, stream);
                 DeviceUpload b = transfer.upload(second, stream)) {
                long[] ao = a.offsets();
                long[] bo = b.offsets();
                // interleaved, one larger than a staging half, ranges inside buffers and whole buffers
                List<DeviceRange> sources = List.of(a.buffer().range(ao[0], 100), b.buffer().range(bo[0], 40_000),
                        a.buffer().range(ao[1] + 10, 2990), b.buffer().range(bo[1], 8));
                List<MemorySegment> want = List.of(first.get(0), second.get(0), first.get(1).asSlice(10), second.get(1));
                List<MemorySegment> back = new ArrayList<>();
                for (MemorySegment w : want) {
                    back.add(arena.allocate(w.byteSize()));
                }
                transfer.download(sources, back, stream);
                for (int i = 0; i < want.size(); i++) {
                    assertArrayEquals(want.get(i).toArray(ValueLayout.JAVA_BYTE), back.get(i).toArray(ValueLayout.JAVA_BYTE),
                            "range " + i);
                }
                assertThrows(InvalidArgumentException.class, () -> transfer.download(List.of(a.buffer().range(0, 8)),
                        List.of(arena.allocate(9)), stream), "a destination of another size than its range");
            }
            stream.synchronize();
        }
        assertEquals(liveBefore, HandleTracker.liveHandles());
    }

    @Test
    void sharedBuffersLargerThanTheParallelThresholdRoundTripThroughTheSplitCopies() {
        Random r = new Random(43);
        // 32 MiB halves: the 40 MiB buffer spans both, the 9 MiB and 17 MiB ones are split over threads
        long[] sizes = {9 << 20, 3, (17 << 20) + 1, 40 << 20, 4099};
        try (Arena arena = Arena.ofShared(); // not thread-confined: the staging copies may use the pool
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 64 << 20)) {
            List<MemorySegment> host = batch(arena, r, sizes);
            for (int round = 0; round < 3; round++) {
                try (DeviceUpload up = transfer.upload(host, stream)) {
                    List<MemorySegment> back = transfer.download(ranges(up.buffer(), up.offsets(), sizes), arena, stream);
                    for (int i = 0; i < sizes.length; i++) {
                        assertArrayEquals(host.get(i).toArray(ValueLayout.JAVA_BYTE),
                                back.get(i).toArray(ValueLayout.JAVA_BYTE), "round " + round + ", buffer " + i);
                    }
                }
            }
            stream.synchronize();
        }
    }

    @Test
    void steadyStateBatchesCreateNoEventAndNoAllocationBesidesThePool() {
        Random r = new Random(9);
        long[] sizes = {4096, 123, 0, 100_000, 64, 65, 8 << 10};
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 1 << 20)) {
            List<MemorySegment> host = batch(arena, r, sizes);
            List<MemorySegment> back = batch(arena, r, sizes);
            transfer.upload(host, stream).close(); // warm-up
            CudaCounters.Snapshot before = CudaCounters.snapshot();
            int batches = 50;
            for (int b = 0; b < batches; b++) {
                try (DeviceUpload up = transfer.upload(host, stream)) {
                    download(transfer, up.buffer(), up.offsets(), back, stream);
                }
            }
            CudaCounters.Snapshot after = CudaCounters.snapshot();
            assertEquals(before.eventCreateCalls(), after.eventCreateCalls(), "cuEventCreate");
            assertEquals(before.memAllocCalls(), after.memAllocCalls(), "cuMemAlloc");
            assertEquals(before.memHostAllocCalls(), after.memHostAllocCalls(), "cuMemHostAlloc");
            assertEquals(before.streamCreateCalls(), after.streamCreateCalls(), "cuStreamCreate");
            assertEquals(before.memAllocAsyncCalls() + batches, after.memAllocAsyncCalls(), "one pool allocation per batch");
            for (int i = 0; i < sizes.length; i++) {
                assertArrayEquals(host.get(i).toArray(ValueLayout.JAVA_BYTE), back.get(i).toArray(ValueLayout.JAVA_BYTE));
            }
            stream.synchronize();
        }
    }

    @Test
    void closedTransferAndBadRangesAreRejected() {
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(DEVICE);
             DeviceBuffer d = DeviceBuffer.allocate(DEVICE, 100)) {
            HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 1 << 16);
            assertThrows(InvalidArgumentException.class,
                    () -> transfer.download(List.of(d.range(90, 11)), arena, stream));
            assertThrows(InvalidArgumentException.class,
                    () -> download(transfer, d, new long[] {0, 1}, List.of(arena.allocate(1)), stream));
            assertThrows(InvalidArgumentException.class,
                    () -> transfer.upload(List.of(MemorySegment.ofArray(new byte[3])), stream));
            long live = HandleTracker.liveHandles();
            assertEquals(NativeHandle.State.LIVE, transfer.state());
            transfer.close();
            long afterClose = HandleTracker.liveHandles();
            transfer.close();
            assertEquals(NativeHandle.State.RELEASED, transfer.state(), "a transfer is an owning handle");
            // the transfer and the pinned staging buffers it owns close together, once
            assertTrue(afterClose <= live - 1, "the transfer itself is counted: " + live + " -> " + afterClose);
            assertEquals(afterClose, HandleTracker.liveHandles(), "a second close releases nothing more");
            assertThrows(HandleClosedException.class, () -> transfer.upload(List.of(), stream));
            assertThrows(HandleClosedException.class,
                    () -> download(transfer, d, new long[] {0}, List.of(arena.allocate(1)), stream));
        }
    }

    @Test
    void pageLockedMemoryIsRecognisedAndPageableOrEmptyMemoryIsNot() {
        try (Arena arena = Arena.ofConfined();
             PinnedHostBuffer pinned = PinnedHostBuffer.allocate(1 << 16)) {
            assertTrue(PointerAttributes.isPageLocked(pinned.segment()));
            assertTrue(PointerAttributes.isPageLocked(pinned.segment().asSlice(100, 1000)));
            MemorySegment pageable = arena.allocate(1 << 16);
            assertEquals(false, PointerAttributes.isPageLocked(pageable));
            assertEquals(false, PointerAttributes.isPageLocked(pinned.segment().asSlice(0, 0)), "empty");
            MemorySegment registered = arena.allocate(1 << 16, 4096);
            try (PinnedHostBuffer reg = PinnedHostBuffer.register(registered)) {
                assertTrue(PointerAttributes.isPageLocked(reg.segment()), "registered host memory");
                assertTrue(PointerAttributes.isPageLocked(registered.asSlice(10, 100)));
            }
            assertEquals(false, PointerAttributes.isPageLocked(registered), "unregistered again");
            // past the end of a pinned allocation: not all of it is page-locked
            MemorySegment beyond = MemorySegment.ofAddress(pinned.segment().address()).reinterpret((1 << 16) + 1);
            assertEquals(false, PointerAttributes.isPageLocked(beyond));
        }
    }

    @Test
    void pinnedBuffersGoStraightToTheDeviceAndBackWithOneHostWaitPerBatchAndNoStaging() {
        Random r = new Random(17);
        long[] sizes = {1, 4093, 1 << 20, (9 << 20) + 7, 64, 65};
        try (Arena arena = Arena.ofConfined();
             PinnedHostBuffer pinned = PinnedHostBuffer.allocate(16L << 20);
             PinnedHostBuffer pinnedBack = PinnedHostBuffer.allocate(16L << 20);
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 4 << 20)) {
            List<MemorySegment> host = slices(pinned.segment(), sizes, r);
            List<MemorySegment> back = slices(pinnedBack.segment(), sizes, null);
            for (int round = 0; round < 3; round++) {
                TransferStatistics.Snapshot before = transfer.statistics();
                try (DeviceUpload up = transfer.upload(host, stream)) {
                    TransferStatistics.Snapshot mid = transfer.statistics();
                    assertEquals(before.directCopies() + sizes.length, mid.directCopies(), "every buffer copied directly");
                    assertEquals(before.stagedBytes(), mid.stagedBytes(), "nothing staged");
                    assertEquals(before.hostWaits() + 1, mid.hostWaits(), "one host wait for the upload");
                    for (int i = 0; i < sizes.length; i++) {
                        assertEquals(0, (up.buffer().address() + up.offsets()[i]) % HostDeviceTransfer.ALIGNMENT);
                    }
                    checkPaddingIsZero(arena, up, stream);
                    download(transfer, up.buffer(), up.offsets(), back, stream);
                    TransferStatistics.Snapshot after = transfer.statistics();
                    assertEquals(mid.directCopies() + sizes.length, after.directCopies());
                    assertEquals(mid.stagedBytes(), after.stagedBytes(), "nothing staged");
                    assertEquals(mid.hostWaits() + 1, after.hostWaits(), "one host wait for the download");
                }
                for (int i = 0; i < sizes.length; i++) {
                    assertEquals(-1, host.get(i).mismatch(back.get(i)), "round " + round + ", buffer " + i);
                }
                back.forEach(b -> b.fill((byte) 0));
            }
            stream.synchronize();
        }
    }

    @Test
    void uploadAsyncOfPinnedBuffersDoesNotWaitAndTheStreamOrdersTheData() {
        Random r = new Random(19);
        long[] sizes = {3 << 20, 100, 5 << 20};
        try (PinnedHostBuffer pinned = PinnedHostBuffer.allocate(16L << 20);
             PinnedHostBuffer pinnedBack = PinnedHostBuffer.allocate(16L << 20);
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 4 << 20);
             CudaEvent done = CudaEvent.acquire(DEVICE)) {
            List<MemorySegment> host = slices(pinned.segment(), sizes, r);
            List<MemorySegment> back = slices(pinnedBack.segment(), sizes, null);
            long waits = transfer.statistics().hostWaits();
            try (DeviceUpload up = transfer.uploadAsync(host, stream)) {
                assertEquals(waits, transfer.statistics().hostWaits(), "no host wait");
                done.record(stream);
                done.synchronize(); // the caller's own wait before it may change the sources
                download(transfer, up.buffer(), up.offsets(), back, stream);
            }
            for (int i = 0; i < sizes.length; i++) {
                assertEquals(-1, host.get(i).mismatch(back.get(i)), "buffer " + i);
            }
            stream.synchronize();
        }
    }

    @Test
    void anUploadRunsItsWorkOnceTheCopiesAreQueuedThenWaitsOnceAndAThrowingWorkFreesTheAllocation() {
        Random r = new Random(23);
        long[] sizes = {4096, 3 << 20, 100, 5 << 20};
        try (Arena arena = Arena.ofConfined();
             PinnedHostBuffer pinned = PinnedHostBuffer.allocate(16L << 20);
             PinnedHostBuffer pinnedBack = PinnedHostBuffer.allocate(16L << 20);
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 4 << 20)) {
            List<MemorySegment> back = slices(pinnedBack.segment(), sizes, null);
            for (boolean direct : new boolean[] {true, false}) {
                List<MemorySegment> host = direct ? slices(pinned.segment(), sizes, r) : batch(arena, r, sizes);
                long deviceBytes = CudaCounters.snapshot().deviceBytesOutstanding();
                long allocations = CudaCounters.snapshot().memAllocAsyncCalls();
                long waits = transfer.statistics().hostWaits();
                long[] seen = new long[2];
                try (DeviceUpload up = upload(transfer, host, () -> {
                    seen[0]++;
                    seen[1] = CudaCounters.snapshot().memAllocAsyncCalls(); // the copies' allocation is made
                }, stream)) {
                    assertEquals(1, seen[0], "the work ran once");
                    assertEquals(allocations + 1, seen[1], "the work ran after the copies were queued");
                    if (direct) {
                        assertEquals(waits + 1, transfer.statistics().hostWaits(), "one host wait, after the work");
                    }
                    download(transfer, up.buffer(), up.offsets(), back, stream);
                }
                for (int i = 0; i < sizes.length; i++) {
                    assertEquals(-1, host.get(i).mismatch(back.get(i)), "direct " + direct + ", buffer " + i);
                }
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> upload(transfer, host, () -> {
                    throw new IllegalStateException("work failed");
                }, stream));
                assertEquals("work failed", e.getMessage());
                stream.synchronize();
                assertEquals(deviceBytes, CudaCounters.snapshot().deviceBytesOutstanding(), "the allocation was freed");
                try (DeviceUpload again = transfer.upload(host, stream)) {
                    assertEquals(sizes.length, again.offsets().length, "the transfer is usable after a failed batch");
                }
                back.forEach(b -> b.fill((byte) 0));
            }
            stream.synchronize();
        }
    }

    @Test
    void aBatchMixingPinnedAndPageableBuffersRoundTripsAndStagesOnlyThePageableOnes() {
        Random r = new Random(23);
        long[] pinnedSizes = {5 << 20, 33};
        long[] pageableSizes = {(6 << 20) + 3, 0, 1000};
        try (Arena arena = Arena.ofShared();
             PinnedHostBuffer pinned = PinnedHostBuffer.allocate(8L << 20);
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, TransferOptions.defaults()
                     .withStagingBytes(8L << 20).withChunkBytes(1L << 20))) {
            List<MemorySegment> p = slices(pinned.segment(), pinnedSizes, r);
            List<MemorySegment> q = batch(arena, r, pageableSizes);
            List<MemorySegment> host = List.of(q.get(0), p.get(0), q.get(1), p.get(1), q.get(2));
            TransferStatistics.Snapshot before = transfer.statistics();
            try (DeviceUpload up = transfer.upload(host, stream)) {
                TransferStatistics.Snapshot after = transfer.statistics();
                assertEquals(before.directCopies() + 2, after.directCopies());
                assertEquals(before.directBytes() + (5 << 20) + 33, after.directBytes());
                assertTrue(after.stagedBytes() - before.stagedBytes() >= (6 << 20) + 1003, "the pageable bytes are staged");
                assertEquals(after.stagedBytes(), transfer.stagedBytes(), "the public count is the staged bytes");
                checkPaddingIsZero(arena, up, stream);
                List<MemorySegment> back = transfer.download(up.ranges(), arena, stream);
                for (int i = 0; i < host.size(); i++) {
                    assertEquals(-1, host.get(i).mismatch(back.get(i)), "buffer " + i);
                }
            }
            stream.synchronize();
        }
    }

    /** Consecutive slices of {@code memory}, 64-byte aligned, of these sizes; filled with random bytes if r != null. */
    private static List<MemorySegment> slices(MemorySegment memory, long[] sizes, Random r) {
        List<MemorySegment> out = new ArrayList<>();
        long at = 0;
        for (long size : sizes) {
            MemorySegment s = memory.asSlice(at, size);
            if (r != null) {
                byte[] b = new byte[(int) size];
                r.nextBytes(b);
                MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
            }
            out.add(s);
            at = (at + size + 127) & -64L; // not adjacent: each slice its own copy
        }
        return out;
    }

    /** Every byte of the allocation outside the buffers is zero. */
    private static void checkPaddingIsZero(Arena arena, DeviceUpload up, CudaStream stream) {
        stream.synchronize();
        long total = up.buffer().byteSize();
        MemorySegment all = arena.allocate(Math.max(1, total)).asSlice(0, total);
        CudaCopies.deviceToHost(up.buffer(), 0, all);
        boolean[] inside = new boolean[(int) total];
        for (int i = 0; i < up.count(); i++) {
            java.util.Arrays.fill(inside, (int) up.offsets()[i], (int) (up.offsets()[i] + up.sizes()[i]), true);
        }
        for (int b = 0; b < total; b++) {
            if (!inside[b]) {
                assertEquals(0, all.get(ValueLayout.JAVA_BYTE, b), "padding byte " + b);
            }
        }
    }

    @Test
    void aDownloadWithLeadingRangesRunsItsWorkOnceTheyArrivedAndReturnsOnceAllDid() {
        Random r = new Random(17);
        long[] sizes = {4096, 1 << 20, 64, 32 << 20, 0, 8 << 20};
        try (Arena arena = Arena.ofConfined();
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 4 << 20)) {
            List<MemorySegment> host = batch(arena, r, sizes);
            try (DeviceUpload up = transfer.upload(host, stream)) {
                for (boolean pinned : new boolean[] {true, false}) {
                    long total = java.util.Arrays.stream(sizes).sum() + 64L * sizes.length;
                    PinnedHostBuffer pinnedBlock = pinned ? PinnedHostBuffer.allocate(total) : null;
                    try {
                        MemorySegment block = pinned ? pinnedBlock.segment() : arena.allocate(total, 64);
                        List<DeviceRange> sources = new ArrayList<>();
                        List<MemorySegment> destinations = new ArrayList<>();
                        long at = 0;
                        for (int i = 0; i < sizes.length; i++) {
                            sources.add(up.buffer().range(up.offsets()[i], sizes[i]));
                            destinations.add(block.asSlice(at, sizes[i]));
                            at += sizes[i] + 64;
                        }
                        int leading = 3;
                        int[] ran = {0};
                        download(transfer, sources, destinations, leading, () -> {
                            ran[0]++;
                            assertSameBytes(host, destinations, leading, "leading");
                        }, stream);
                        assertEquals(1, ran[0]);
                        assertSameBytes(host, destinations, sizes.length, "pinned " + pinned);
                        IllegalStateException e = assertThrows(IllegalStateException.class,
                                () -> download(transfer, sources, destinations, 1, () -> {
                                    throw new IllegalStateException("work failed");
                                }, stream));
                        assertEquals("work failed", e.getMessage());
                        assertThrows(InvalidArgumentException.class,
                                () -> download(transfer, sources, destinations, sizes.length + 1, () -> { }, stream));
                        // the transfer is usable after a failed batch
                        destinations.get(5).fill((byte) 0);
                        transfer.download(sources, destinations, stream);
                        assertArrayEquals(host.get(5).toArray(ValueLayout.JAVA_BYTE),
                                destinations.get(5).toArray(ValueLayout.JAVA_BYTE));
                    } finally {
                        if (pinnedBlock != null) {
                            pinnedBlock.close();
                        }
                    }
                }
            }
            stream.synchronize();
        }
    }

    @Test
    void aPageableDownloadWithLeadingRangesRunsItsWorkAndReturnsOnceEveryRangeArrived() {
        Random r = new Random(18);
        long[] sizes = {4096, 1 << 20, 64, 24 << 20, 0, 8 << 20};
        int leading = 3;
        try (Arena arena = Arena.ofShared();
             CudaStream stream = CudaStream.create(DEVICE);
             HostDeviceTransfer transfer = HostDeviceTransfer.create(DEVICE, 64 << 20)) {
            List<MemorySegment> host = batch(arena, r, sizes);
            try (DeviceUpload up = transfer.upload(host, stream)) {
                for (int round = 0; round < 3; round++) {
                    List<DeviceRange> sources = new ArrayList<>();
                    List<MemorySegment> destinations = new ArrayList<>();
                    for (int i = 0; i < sizes.length; i++) {
                        sources.add(up.buffer().range(up.offsets()[i], sizes[i]));
                        MemorySegment d = arena.allocate(Math.max(1, sizes[i]), 64).asSlice(0, sizes[i]);
                        d.fill((byte) 0);
                        destinations.add(d);
                    }
                    long waitsBefore = transfer.statistics().hostWaits();
                    Thread caller = Thread.currentThread();
                    int[] ran = {0};
                    download(transfer, sources, destinations, leading, () -> {
                        ran[0]++;
                        assertSame(caller, Thread.currentThread());
                        assertSameBytes(host, destinations, leading, "leading");
                    }, stream);
                    assertEquals(1, ran[0]);
                    assertSameBytes(host, destinations, sizes.length, "round " + round);
                    assertTrue(transfer.statistics().hostWaits() - waitsBefore >= 2, "a wait per chunk");
                }
                try (Arena confined = Arena.ofConfined()) { // only this thread may unpack into it
                    List<DeviceRange> sources = new ArrayList<>();
                    List<MemorySegment> destinations = new ArrayList<>();
                    for (int i = 0; i < sizes.length; i++) {
                        sources.add(up.buffer().range(up.offsets()[i], sizes[i]));
                        destinations.add(confined.allocate(Math.max(1, sizes[i]), 64).asSlice(0, sizes[i]));
                    }
                    download(transfer, sources, destinations, leading,
                            () -> assertSameBytes(host, destinations, leading, "leading, confined"), stream);
                    assertSameBytes(host, destinations, sizes.length, "confined");
                }
                List<DeviceRange> sources = new ArrayList<>();
                List<MemorySegment> destinations = new ArrayList<>();
                for (int i = 0; i < sizes.length; i++) {
                    sources.add(up.buffer().range(up.offsets()[i], sizes[i]));
                    destinations.add(arena.allocate(Math.max(1, sizes[i]), 64).asSlice(0, sizes[i]));
                }
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> download(transfer, sources, destinations, 1, () -> {
                            throw new IllegalStateException("work failed");
                        }, stream));
                assertEquals("work failed", e.getMessage());
                assertSameBytes(host, destinations, sizes.length, "unpacked before the throw");
                destinations.get(5).fill((byte) 0);
                transfer.download(sources, destinations, stream);
                assertArrayEquals(host.get(5).toArray(ValueLayout.JAVA_BYTE), destinations.get(5).toArray(ValueLayout.JAVA_BYTE),
                        "the transfer is usable after a failed batch");
            }
            stream.synchronize();
        }
    }

    /** Ranges {@code [0, count)} of {@code actual} hold the bytes of {@code expected}'s. */
    private static void assertSameBytes(List<MemorySegment> expected, List<MemorySegment> actual, int count, String what) {
        for (int i = 0; i < count; i++) {
            assertArrayEquals(expected.get(i).toArray(ValueLayout.JAVA_BYTE), actual.get(i).toArray(ValueLayout.JAVA_BYTE),
                    what + ": range " + i);
        }
    }

    /** Ranges of {@code buffer} at {@code offsets}, each of its destination's size, downloaded into them. */
    private static List<DeviceRange> ranges(DeviceBuffer buffer, long[] offsets, long[] sizes) {
        List<DeviceRange> ranges = new ArrayList<>();
        for (int i = 0; i < offsets.length; i++) {
            ranges.add(buffer.range(offsets[i], sizes[i]));
        }
        return ranges;
    }

    private static void download(HostDeviceTransfer transfer, DeviceBuffer buffer, long[] offsets,
                                 List<MemorySegment> destinations, CudaStream stream) {
        long[] sizes = destinations.stream().mapToLong(MemorySegment::byteSize).toArray();
        List<DeviceRange> sources = new java.util.ArrayList<>();
        for (int i = 0; i < offsets.length; i++) {
            sources.add(new DeviceRange(buffer, offsets[i], i < sizes.length ? sizes[i] : 0));
        }
        transfer.download(sources, destinations, stream);
    }

    /** An upload with host work while the copy engine reads: uploadAsync, the work, then the one wait. */
    private static DeviceUpload upload(HostDeviceTransfer transfer, List<MemorySegment> host, Runnable work,
                                       CudaStream stream) {
        DeviceUpload up = transfer.uploadAsync(host, stream);
        try {
            work.run();
            up.await();
        } catch (RuntimeException | Error e) {
            up.await(); // no copy reads the buffers after a throw
            up.close();
            throw e;
        }
        return up;
    }

    /** A download with host work once the leading ranges arrived, as the Arrow download runs it. */
    private static void download(HostDeviceTransfer transfer, List<DeviceRange> sources, List<MemorySegment> destinations,
                                 int leading, Runnable work, CudaStream stream) {
        try (PendingDownload d = transfer.downloadAsync(sources, destinations, leading, stream)) {
            d.awaitLeading();
            work.run();
            d.await();
        }
    }
}
