package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import org.devicebridge.DeviceBridgeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The staging ring and the batch logic of HostDeviceTransfer without a GPU: a fake stream whose copies run
 * only when the host waits for them (or, when it asks, at random), in queue order, as a CUDA stream would
 * run them at the latest. A ring that refilled a chunk before its queued copy ran, or unpacked before
 * waiting, would read or send the wrong bytes here; a direct copy reads the caller's buffer as late as
 * the stream reaches it.
 */
class StagingRingTest {
    private static final long BASE = 1 << 20; // fake device addresses start here

    /** A stream of copies against a host segment standing in for device memory. */
    static class FakeStream implements TransferOps {
        MemorySegment device; // the fake device memory copies queued from now on use
        final List<Runnable> queue = new ArrayList<>();
        final Map<Integer, Integer> mark = new HashMap<>();
        final Random eager; // null: query() never runs queued copies
        int executed;
        int toDevice;
        int toHost;
        int zeros;
        int realWaits;

        FakeStream(Random eager) {
            this.eager = eager;
        }

        /** Sets the fake device memory and zeroes the per-batch counters. */
        FakeStream on(MemorySegment memory) {
            this.device = memory;
            toDevice = 0;
            toHost = 0;
            zeros = 0;
            realWaits = 0;
            return this;
        }

        @Override
        public synchronized void toDevice(long deviceAddress, MemorySegment from, long bytes) {
            assertEquals(bytes, from.byteSize());
            toDevice++;
            MemorySegment d = device;
            queue.add(() -> MemorySegment.copy(from, 0, d, deviceAddress - BASE, bytes));
        }

        @Override
        public synchronized void toHost(MemorySegment to, long deviceAddress, long bytes) {
            assertEquals(bytes, to.byteSize());
            toHost++;
            MemorySegment d = device;
            queue.add(() -> MemorySegment.copy(d, deviceAddress - BASE, to, 0, bytes));
        }

        @Override
        public synchronized void zero(long deviceAddress, long bytes) {
            zeros++;
            MemorySegment d = device;
            queue.add(() -> d.asSlice(deviceAddress - BASE, bytes).fill((byte) 0));
        }

        @Override
        public synchronized void record(int event) {
            mark.put(event, queue.size());
        }

        @Override
        public synchronized void await(int event) {
            Integer m = mark.get(event);
            assertTrue(m != null, "waited for event " + event + ", never recorded");
            if (executed < m) {
                realWaits++;
            }
            runUpTo(m);
        }

        @Override
        public synchronized boolean query(int event) {
            Integer m = mark.get(event);
            assertTrue(m != null, "queried event " + event + ", never recorded");
            if (eager != null && eager.nextBoolean()) {
                runUpTo(m);
            }
            return executed >= m;
        }

        synchronized void runUpTo(int end) {
            while (executed < end) {
                queue.get(executed++).run();
            }
        }

        synchronized void finish() {
            runUpTo(queue.size());
        }
    }

    private static MemorySegment random(Arena arena, Random r, long size) {
        MemorySegment s = arena.allocate(Math.max(1, size), 8).asSlice(0, size);
        byte[] b = new byte[(int) size];
        r.nextBytes(b);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
        return s;
    }

    private static long randomSize(Random r) {
        int[] special = {0, 1, 63, 64, 65, 127, 128, 129};
        return r.nextInt(3) == 0 ? special[r.nextInt(special.length)] : r.nextInt(3000);
    }

    private static StagingRing ring(Arena arena, int chunks, long chunkBytes, Supplier<StagingCopy> copies) {
        return ring(arena, chunks, chunkBytes, copies, -1);
    }

    /**
     * An upload as the transfer engine runs it: the batch's copies, then a mark after the direct ones (the engine
     * records the upload's own event there; {@link TransferOps#BATCH} here).
     */
    private static boolean upload(StagingRing ring, MemorySegment[] src, long[] sizes, BatchTransfer.Layout layout,
                                  long base, TransferOps ops, TransferStatistics stats) {
        assertArrayEquals(sizes, layout.sizes(), "the layout's sizes");
        boolean queued = BatchTransfer.upload(new BatchTransfer.Lane(ring, ops, stats), src, layout, base);
        if (queued) {
            ops.record(TransferOps.BATCH);
        }
        return queued;
    }

    /** A whole download, as {@link HostDeviceTransfer#download(List, List, CudaStream)} runs it. */
    private static void download(StagingRing ring, long[] addresses, long[] groups, MemorySegment[] dst, long[] sizes,
                                 boolean[] direct, TransferOps ops, TransferStatistics stats) {
        BatchTransfer.download(new BatchTransfer.Lane(ring, ops, stats),
                new DownloadBatch(addresses, groups, dst, sizes, direct, dst.length));
    }

    /**
     * A download with {@code work} between its leading ranges and the rest, as a caller of
     * {@link PendingDownload} runs it: a throwing work still waits for every copy (the run's close).
     */
    private static void download(StagingRing ring, long[] addresses, long[] groups, MemorySegment[] dst, long[] sizes,
                                 boolean[] direct, int leading, Runnable work, TransferOps ops, TransferStatistics stats) {
        try (DownloadRun run = DownloadRun.start(new BatchTransfer.Lane(ring, ops, stats),
                new DownloadBatch(addresses, groups, dst, sizes, direct, leading))) {
            run.awaitLeading();
            work.run();
            run.await();
        }
    }

    /** A ring whose upload packs its last {@code aroundCachesTail} bytes around the caches (-1: the default). */
    private static StagingRing ring(Arena arena, int chunks, long chunkBytes, Supplier<StagingCopy> copies,
                                    long aroundCachesTail) {
        MemorySegment staging = arena.allocate(chunks * chunkBytes, 64);
        MemorySegment[] c = new MemorySegment[chunks];
        StagingCopy[] s = new StagingCopy[chunks];
        for (int i = 0; i < chunks; i++) {
            c[i] = staging.asSlice(i * chunkBytes, chunkBytes);
            s[i] = copies.get();
        }
        return aroundCachesTail < 0 ? new StagingRing(c, s) : new StagingRing(c, s, aroundCachesTail);
    }

    @ParameterizedTest(name = "{0} chunks of {1} bytes, split copies {2}, eager device {3}")
    @CsvSource({
        "2, 64, false, false", "2, 192, false, true", "3, 1024, false, false", "5, 65536, false, true",
        "2, 64, true, true", "3, 192, true, false", "4, 1024, true, true", "2, 65536, true, false",
    })
    void batchesOfPageableAndPageLockedBuffersRoundTripEveryByteThroughTheReusedRing(int chunks, long chunkBytes,
                                                                                     boolean split, boolean eager) {
        Random r = new Random(chunks * 31L + chunkBytes);
        // split: thresholds far below the real ones, so that small, odd-sized chunks are cut into many
        // slices copied by the pool (shared buffers); otherwise everything on the caller's thread (confined)
        try (Arena arena = split ? Arena.ofShared() : Arena.ofConfined()) {
            StagingRing ring = ring(arena, chunks, chunkBytes, split ? () -> new StagingCopy(1, 7, 4) : StagingCopy::new);
            FakeStream stream = new FakeStream(eager ? new Random(chunkBytes) : null); // marks persist across batches
            TransferStatistics stats = new TransferStatistics();
            for (int batch = 0; batch < 30; batch++) {
                int n = r.nextInt(12);
                MemorySegment[] src = new MemorySegment[n];
                long[] sizes = new long[n];
                boolean[] direct = new boolean[n];
                for (int i = 0; i < n; i++) {
                    src[i] = random(arena, r, randomSize(r));
                    sizes[i] = src[i].byteSize();
                    direct[i] = sizes[i] > 0 && batch % 3 != 0 && r.nextInt(3) == 0; // every third batch: all staged
                }
                BatchTransfer.Layout layout = BatchTransfer.layout(sizes, direct);
                checkLayout(layout, sizes, direct);

                MemorySegment device = arena.allocate(Math.max(1, layout.total())).asSlice(0, layout.total());
                device.fill((byte) 0x5A); // padding must come out zero, not this
                stream.on(device);
                boolean waits = upload(ring, src, sizes, layout, BASE, stream, stats);
                assertEquals(layout.direct().length > 0, waits, "the batch event is recorded after direct copies");
                assertEquals(layout.direct().length + (layout.stagedBytes() + chunkBytes - 1) / chunkBytes,
                        stream.toDevice, "one copy per direct buffer and one per staging chunk");
                stream.finish();
                long cursor = 0;
                for (int i : order(layout)) {
                    for (long p = cursor; p < layout.offsets()[i]; p++) {
                        assertEquals(0, device.get(ValueLayout.JAVA_BYTE, p), "padding byte " + p);
                    }
                    assertArrayEquals(src[i].toArray(ValueLayout.JAVA_BYTE),
                            device.asSlice(layout.offsets()[i], sizes[i]).toArray(ValueLayout.JAVA_BYTE), "buffer " + i);
                    cursor = layout.offsets()[i] + sizes[i];
                }

                MemorySegment[] back = new MemorySegment[n];
                long[] addresses = new long[n];
                for (int i = 0; i < n; i++) {
                    back[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                    addresses[i] = BASE + layout.offsets()[i];
                }
                FakeStream down = stream.on(device);
                download(ring, addresses, null, back, sizes, direct, down, stats);
                for (int i = 0; i < n; i++) {
                    assertArrayEquals(src[i].toArray(ValueLayout.JAVA_BYTE), back[i].toArray(ValueLayout.JAVA_BYTE),
                            "downloaded buffer " + i);
                }
                if (layout.direct().length == 0 && layout.total() > 0 && layout.total() <= chunkBytes) {
                    assertEquals(1, down.toHost, "a packed batch that fits a chunk is one copy");
                    assertTrue(down.realWaits <= 1, "and at most one synchronisation");
                }
                if (layout.direct().length > 0 && layout.stagedBytes() == 0) {
                    assertEquals(layout.direct().length, down.toHost, "direct copies only");
                    assertTrue(down.realWaits <= 1, "and one synchronisation for the batch");
                }
                stream.finish();
            }
        }
    }

    @Test
    void onlyTheChunksStartingInTheUploadsLastBytesArePackedAroundTheCaches() {
        long mib = 1L << 20;
        try (Arena arena = Arena.ofShared()) {
            List<StagingCopy> copies = new ArrayList<>();
            StagingRing ring = ring(arena, 4, 2 * mib, () -> {
                StagingCopy c = new StagingCopy();
                copies.add(c);
                return c;
            }, 5 * mib);
            Random r = new Random(11);
            FakeStream stream = new FakeStream(new Random(12));
            TransferStatistics stats = new TransferStatistics();
            // {bytes, bytes packed around the caches}: the 2 MiB steps that start in the last 5 MiB
            for (long[] c : new long[][] {{17 * mib, 5 * mib}, {18 * mib, 4 * mib}, {5 * mib, 5 * mib}, {3 * mib, 3 * mib}, {12 * mib + 64, 4 * mib + 64}}) {
                MemorySegment[] src = {random(arena, r, c[0])};
                long[] sizes = {c[0]};
                BatchTransfer.Layout layout = BatchTransfer.layout(sizes, new boolean[1]);
                long before = copies.stream().mapToLong(StagingCopy::packedBytes).sum();
                MemorySegment device = arena.allocate(layout.total());
                stream.on(device);
                upload(ring, src, sizes, layout, BASE, stream, stats);
                stream.finish();
                assertEquals(-1, device.mismatch(src[0]), () -> c[0] + " bytes");
                assertEquals(c[1], copies.stream().mapToLong(StagingCopy::packedBytes).sum() - before,
                        () -> c[0] + " bytes");
            }
            assertEquals(new StagingCopy().parallelism() * StagingRing.PRIVATE_CACHE_BYTES,
                    ring(arena, 2, 64, StagingCopy::new).aroundCachesTail(), "by default, a private cache per packing thread");
        }
    }

    @Test
    void aSmallBatchUsesItsChunksInSmallerStepsSoThatPackingAndDmaOverlap() {
        try (Arena arena = Arena.ofShared()) {
            long mib = 1L << 20;
            StagingRing eight = ring(arena, 8, 8 * mib, StagingCopy::new);
            assertEquals(2 * mib, eight.stepFor(1), "never below the smallest step");
            assertEquals(18 * mib / 8, eight.stepFor(18 * mib), "16 MiB of data and its bitmap: one step per chunk");
            assertEquals(4 * mib, eight.stepFor(32 * mib));
            assertEquals(8 * mib, eight.stepFor(64 * mib), "large batches use whole chunks");
            assertEquals(8 * mib, eight.stepFor(1L << 30));
            assertEquals(0, eight.stepFor(18 * mib + 1) % HostDeviceTransfer.ALIGNMENT, "aligned steps");
            StagingRing small = ring(arena, 2, mib + 64, StagingCopy::new);
            assertEquals(mib + 64, small.stepFor(mib), "chunks below the smallest step are used whole");
            StagingRing ring = ring(arena, 3, 8 * mib, StagingCopy::new);

            Random r = new Random(7);
            FakeStream stream = new FakeStream(new Random(8));
            TransferStatistics stats = new TransferStatistics();
            for (long[] sizes : new long[][] {{5 * mib + 3, 3 * mib, 1}, {mib}, {9 * mib + 17, 0, 2 * mib - 1}}) {
                MemorySegment[] src = new MemorySegment[sizes.length];
                for (int i = 0; i < sizes.length; i++) {
                    src[i] = random(arena, r, sizes[i]);
                }
                BatchTransfer.Layout layout = BatchTransfer.layout(sizes, new boolean[sizes.length]);
                MemorySegment device = arena.allocate(layout.total());
                device.fill((byte) 0x5A);
                stream.on(device);
                upload(ring, src, sizes, layout, BASE, stream, stats);
                long step = ring.stepFor(layout.stagedBytes());
                assertEquals((layout.stagedBytes() + step - 1) / step, stream.toDevice, "one copy per step");
                stream.finish();
                MemorySegment[] back = new MemorySegment[sizes.length];
                long[] addresses = new long[sizes.length];
                for (int i = 0; i < sizes.length; i++) {
                    assertArrayEquals(src[i].toArray(ValueLayout.JAVA_BYTE),
                            device.asSlice(layout.offsets()[i], sizes[i]).toArray(ValueLayout.JAVA_BYTE), "buffer " + i);
                    back[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                    addresses[i] = BASE + layout.offsets()[i];
                }
                FakeStream down = stream.on(device);
                download(ring, addresses, null, back, sizes, new boolean[sizes.length], down, stats);
                assertTrue(down.toHost >= (layout.stagedBytes() + step - 1) / step - 1, "copies of step size");
                for (int i = 0; i < sizes.length; i++) {
                    assertArrayEquals(src[i].toArray(ValueLayout.JAVA_BYTE), back[i].toArray(ValueLayout.JAVA_BYTE),
                            "downloaded buffer " + i);
                }
                stream.finish();
            }
        }
    }

    /** Staged buffers first, in order, packed; then direct ones, in order; all aligned. */
    private static void checkLayout(BatchTransfer.Layout layout, long[] sizes, boolean[] direct) {
        long end = 0;
        for (int i : order(layout)) {
            long at = layout.offsets()[i];
            assertEquals(0, at % HostDeviceTransfer.ALIGNMENT, "aligned offset");
            assertTrue(at >= end && at - end < HostDeviceTransfer.ALIGNMENT, "packed tightly");
            end = at + sizes[i];
            if (direct[i]) {
                assertTrue(at >= layout.stagedBytes(), "a direct buffer lies after the staged region");
            } else {
                assertTrue(end <= layout.stagedBytes(), "a staged buffer lies in the staged region");
            }
        }
        assertEquals(end, layout.total(), "the allocation ends with the last buffer");
    }

    private static int[] order(BatchTransfer.Layout layout) {
        int[] all = new int[layout.staged().length + layout.direct().length];
        System.arraycopy(layout.staged(), 0, all, 0, layout.staged().length);
        System.arraycopy(layout.direct(), 0, all, layout.staged().length, layout.direct().length);
        return all;
    }

    @Test
    void aBatchWithoutDirectBuffersKeepsTheInputOrderAndABatchWithThemPutsThemLast() {
        long[] sizes = {10, 100, 64, 3};
        BatchTransfer.Layout plain = BatchTransfer.layout(sizes, new boolean[4]);
        assertArrayEquals(new long[] {0, 64, 192, 256}, plain.offsets());
        assertEquals(259, plain.total());
        assertEquals(259, plain.stagedBytes());
        BatchTransfer.Layout mixed = BatchTransfer.layout(sizes, new boolean[] {false, true, false, true});
        assertArrayEquals(new long[] {0, 128, 64, 256}, mixed.offsets());
        assertEquals(128, mixed.stagedBytes(), "the staged region ends aligned: its padding is packed");
        assertEquals(259, mixed.total());
    }

    @Test
    void theGapsBetweenDirectBuffersAreZeroedOnTheDeviceAndNothingElse() {
        try (Arena arena = Arena.ofConfined()) {
            StagingRing ring = ring(arena, 2, 256, StagingCopy::new);
            FakeStream stream = new FakeStream(null);
            Random r = new Random(1);
            MemorySegment[] src = {random(arena, r, 10), random(arena, r, 64), random(arena, r, 100), random(arena, r, 1)};
            long[] sizes = {10, 64, 100, 1};
            BatchTransfer.Layout layout = BatchTransfer.layout(sizes, new boolean[] {true, true, true, true});
            MemorySegment device = arena.allocate(layout.total());
            device.fill((byte) 0x5A);
            upload(ring, src, sizes, layout, BASE, stream.on(device), new TransferStatistics());
            assertEquals(2, stream.zeros, "after the 10-byte and the 100-byte buffer; the 64-byte one ends aligned");
            assertEquals(4, stream.toDevice);
            stream.finish();
            assertEquals(-1, device.asSlice(10, 54).mismatch(arena.allocate(54)), "gap zeroed");
            assertArrayEquals(src[3].toArray(ValueLayout.JAVA_BYTE), device.asSlice(256, 1).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aDirectUploadReadsTheCallersBufferOnlyWhenTheStreamReachesIt() {
        try (Arena arena = Arena.ofConfined()) {
            StagingRing ring = ring(arena, 2, 256, StagingCopy::new);
            FakeStream stream = new FakeStream(null);
            MemorySegment src = arena.allocate(100);
            src.fill((byte) 1);
            MemorySegment device = arena.allocate(100);
            BatchTransfer.Layout layout = BatchTransfer.layout(new long[] {100}, new boolean[] {true});
            TransferStatistics stats = new TransferStatistics();
            assertTrue(upload(ring, new MemorySegment[] {src}, new long[] {100}, layout, BASE,
                    stream.on(device), stats));
            src.fill((byte) 2); // what HostDeviceTransfer.uploadAsync's contract forbids: the device sees it
            stream.await(TransferOps.BATCH); // what upload() does before it returns
            assertEquals(2, device.get(ValueLayout.JAVA_BYTE, 99));
            assertEquals(new TransferStatistics.Snapshot(0, 1, 100, 0, 0), stats.snapshot());
        }
    }

    @ParameterizedTest(name = "{0} chunks of {1} bytes")
    @CsvSource({"2, 64", "3, 320", "2, 4096", "6, 128"})
    void downloadOfArbitraryRangesFillsEachDestination(int chunks, long chunkBytes) {
        Random r = new Random(7L * chunkBytes + chunks);
        try (Arena arena = Arena.ofShared()) {
            StagingRing ring = ring(arena, chunks, chunkBytes, () -> new StagingCopy(1, 5, 3));
            MemorySegment device = random(arena, r, 20_000);
            FakeStream stream = new FakeStream(new Random(chunks)).on(device);
            for (int batch = 0; batch < 40; batch++) {
                int n = r.nextInt(10);
                long[] addresses = new long[n];
                long[] offsets = new long[n];
                long[] sizes = new long[n];
                MemorySegment[] dst = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    sizes[i] = Math.min(randomSize(r), 20_000);
                    // unsorted, overlapping, adjacent or nearly adjacent ranges
                    offsets[i] = i > 0 && r.nextBoolean()
                            ? Math.min(offsets[i - 1] + sizes[i - 1] + r.nextInt(70), 20_000 - sizes[i])
                            : r.nextLong(20_000 - sizes[i] + 1);
                    addresses[i] = BASE + offsets[i];
                    dst[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                }
                ring.download(DownloadPlan.of(addresses, sizes, null, chunkBytes), dst, stream);
                for (int i = 0; i < n; i++) {
                    assertArrayEquals(device.asSlice(offsets[i], sizes[i]).toArray(ValueLayout.JAVA_BYTE),
                            dst[i].toArray(ValueLayout.JAVA_BYTE), "range " + i + " of batch " + batch);
                }
                stream.finish();
            }
        }
    }

    @Test
    void downloadJoinsNearbyRangesOfOneGroupButNeverRangesOfTwoGroups() {
        try (Arena arena = Arena.ofConfined()) {
            StagingRing ring = ring(arena, 2, 4096, StagingCopy::new);
            MemorySegment device = random(arena, new Random(3), 1000);
            FakeStream stream = new FakeStream(null).on(device);
            long[] addresses = {BASE, BASE + 108, BASE + 300}; // gaps of 8 and 92 bytes
            long[] sizes = {100, 100, 50};
            for (long[] groups : new long[][] {null, {1, 1, 1}, {1, 2, 2}, {1, 1, 2}}) {
                MemorySegment[] dst = new MemorySegment[3];
                for (int i = 0; i < 3; i++) {
                    dst[i] = arena.allocate(sizes[i]);
                }
                stream.on(device);
                ring.download(DownloadPlan.of(addresses, sizes, groups, 4096), dst, stream);
                for (int i = 0; i < 3; i++) {
                    assertArrayEquals(device.asSlice(addresses[i] - BASE, sizes[i]).toArray(ValueLayout.JAVA_BYTE),
                            dst[i].toArray(ValueLayout.JAVA_BYTE), "range " + i);
                }
                boolean splitFirstGap = groups != null && groups[0] != groups[1];
                assertEquals(splitFirstGap ? 3 : 2, stream.toHost,
                        "the 8-byte gap is copied over only inside one group; the 92-byte gap never");
                stream.finish();
            }
        }
    }

    @Test
    void anUploadPacksAheadIntoFreeChunksWithoutWaitingWhenTheDeviceKeepsUp() {
        try (Arena arena = Arena.ofConfined()) {
            StagingRing ring = ring(arena, 4, 1024, StagingCopy::new);
            Random r = new Random(2);
            MemorySegment src = random(arena, r, 10 * 1024);
            MemorySegment device = arena.allocate(10 * 1024);
            FakeStream fast = new FakeStream(null) {
                @Override
                public boolean query(int event) {
                    runUpTo(mark.get(event)); // a device that finished everything by the time the host asks
                    return true;
                }
            };
            BatchTransfer.Layout layout = BatchTransfer.layout(new long[] {10 * 1024}, new boolean[1]);
            assertFalse(upload(ring, new MemorySegment[] {src}, new long[] {10 * 1024}, layout, BASE,
                    fast.on(device), new TransferStatistics()));
            assertEquals(10, fast.toDevice);
            assertEquals(0, fast.realWaits, "no host wait: every chunk was free when its turn came");
            fast.finish();
            assertEquals(-1, src.mismatch(device));
        }
    }

    @Test
    void aFailedStagingCopyThrowsALibraryExceptionRecordsWhatWasSentAndLeavesTheRingUsable() {
        Random r = new Random(11);
        try (Arena arena = Arena.ofShared()) {
            StagingRing ring = ring(arena, 3, 1024, () -> new StagingCopy(1, 64, 4));
            MemorySegment good = random(arena, r, 3000);
            Arena gone = Arena.ofShared();
            MemorySegment dead = gone.allocate(3000);
            gone.close();
            MemorySegment device = arena.allocate(8192);
            FakeStream stream = new FakeStream(null).on(device);
            TransferStatistics stats = new TransferStatistics();

            // upload: the buffer at 3008 is closed; the chunks before it went
            long[] sizes = {3000, 3000};
            BatchTransfer.Layout layout = BatchTransfer.layout(sizes, new boolean[2]);
            DeviceBridgeException up = assertThrows(DeviceBridgeException.class, () -> upload(ring,
                    new MemorySegment[] {good, dead}, sizes, layout, BASE, stream, stats));
            assertInstanceOf(IllegalStateException.class, up.getCause());
            assertEquals(2, stream.toDevice, "the two chunks before the closed buffer's first byte");
            assertEquals(2, stream.mark.size(), "and both recorded: not refilled before they ran");

            // download into a closed destination: the copy into staging was queued, the unpack fails
            DeviceBridgeException down = assertThrows(DeviceBridgeException.class, () -> ring.download(
                    DownloadPlan.of(new long[] {BASE}, new long[] {3000}, null, 1024), new MemorySegment[] {dead}, stream));
            assertInstanceOf(IllegalStateException.class, down.getCause());

            // the ring is usable again: the next batch goes through and round-trips
            device.fill((byte) 0x5A);
            stream.on(device);
            upload(ring, new MemorySegment[] {good}, new long[] {3000},
                    BatchTransfer.layout(new long[] {3000}, new boolean[1]), BASE, stream, stats);
            stream.finish();
            MemorySegment back = arena.allocate(3000);
            ring.download(DownloadPlan.of(new long[] {BASE}, new long[] {3000}, null, 1024), new MemorySegment[] {back},
                    stream);
            assertArrayEquals(good.toArray(ValueLayout.JAVA_BYTE), back.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(3, stream.toDevice, "3000 bytes in chunks of 1024");
            assertEquals(3, stream.toHost);
            stream.finish();
        }
    }

    @Test
    void aDirectDownloadRunsItsWorkOnceTheLeadingRangesArrivedWhileTheOthersStillCopy() {
        try (Arena arena = Arena.ofShared()) {
            StagingRing ring = ring(arena, 2, 1 << 16, StagingCopy::new);
            TransferStatistics stats = new TransferStatistics();
            Random r = new Random(11);
            long[] sizes = {100, 0, 4000, 64, 7000};
            MemorySegment device = random(arena, r, 16384);
            long[] addresses = {BASE, BASE + 200, BASE + 256, BASE + 4352, BASE + 8192};
            for (int leading = 0; leading <= sizes.length; leading++) {
                MemorySegment[] back = new MemorySegment[sizes.length];
                for (int i = 0; i < sizes.length; i++) {
                    back[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                    back[i].fill((byte) 0);
                }
                boolean[] direct = {true, true, true, true, true};
                FakeStream down = new FakeStream(null).on(device);
                int lead = leading;
                int[] ran = {0};
                download(ring, addresses, null, back, sizes, direct, leading, () -> {
                    ran[0]++;
                    for (int i = 0; i < sizes.length; i++) {
                        boolean arrived = Arrays.equals(back[i].toArray(ValueLayout.JAVA_BYTE),
                                device.asSlice(addresses[i] - BASE, sizes[i]).toArray(ValueLayout.JAVA_BYTE));
                        if (i < lead || sizes[i] == 0) {
                            assertTrue(arrived, "leading range " + i + " arrived before the work");
                        } else if (lead < sizes.length) {
                            assertFalse(arrived, "range " + i + " still copying during the work (leading " + lead + ")");
                        }
                    }
                }, down, stats);
                assertEquals(1, ran[0]);
                for (int i = 0; i < sizes.length; i++) {
                    assertArrayEquals(device.asSlice(addresses[i] - BASE, sizes[i]).toArray(ValueLayout.JAVA_BYTE),
                            back[i].toArray(ValueLayout.JAVA_BYTE), "every range arrived before the return: " + i);
                }
                assertEquals(4, down.toHost, "one copy per range of bytes");
            }
        }
    }

    @Test
    void workThatThrowsDuringADirectDownloadIsThrownAfterEveryCopyFinished() {
        try (Arena arena = Arena.ofShared()) {
            StagingRing ring = ring(arena, 2, 1 << 16, StagingCopy::new);
            MemorySegment device = random(arena, new Random(12), 4096);
            MemorySegment[] back = {arena.allocate(64), arena.allocate(2048)};
            FakeStream down = new FakeStream(null).on(device);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> download(ring,
                    new long[] {BASE, BASE + 1024}, null, back, new long[] {64, 2048}, new boolean[] {true, true}, 1,
                    () -> {
                        throw new IllegalStateException("checks failed");
                    }, down, new TransferStatistics()));
            assertEquals("checks failed", e.getMessage());
            assertEquals(down.queue.size(), down.executed, "no copy still writes into a destination");
        }
    }

    /** {@code dst[i]} holds device bytes {@code [addresses[i], + sizes[i])}. */
    private static boolean arrived(MemorySegment device, long[] addresses, long[] sizes, MemorySegment[] dst, int i) {
        return Arrays.equals(dst[i].toArray(ValueLayout.JAVA_BYTE),
                device.asSlice(addresses[i] - BASE, sizes[i]).toArray(ValueLayout.JAVA_BYTE));
    }

    private static MemorySegment[] zeroed(Arena arena, long[] sizes) {
        MemorySegment[] dst = new MemorySegment[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            dst[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
            dst[i].fill((byte) 0);
        }
        return dst;
    }

    @ParameterizedTest(name = "{0} chunks of {1} bytes")
    @CsvSource({"2, 1024", "8, 4096"})
    void aStagedDownloadWithLeadingRangesRunsItsWorkOnceEveryRangeArrived(int chunks, long chunkBytes) {
        try (Arena arena = Arena.ofShared()) {
            StagingRing ring = ring(arena, chunks, chunkBytes, StagingCopy::new);
            MemorySegment device = random(arena, new Random(15), 32768);
            long[] sizes = {100, 5000, 64, 3000, 0, 7000};
            long[] addresses = {BASE, BASE + 256, BASE + 5376, BASE + 8192, BASE + 12000, BASE + 12288};
            boolean[] direct = {true, false, false, false, false, false};
            for (int round = 0; round < 2; round++) { // the ring is reused
                MemorySegment[] back = zeroed(arena, sizes);
                FakeStream down = new FakeStream(null).on(device);
                int[] ran = {0};
                download(ring, addresses, null, back, sizes, direct, 3, () -> {
                    ran[0]++;
                    for (int i = 0; i < sizes.length; i++) {
                        assertTrue(arrived(device, addresses, sizes, back, i), "range " + i + " arrived before the work");
                    }
                }, down, new TransferStatistics());
                assertEquals(1, ran[0]);
                assertEquals(down.queue.size(), down.executed);
            }
        }
    }

    @Test
    void workThatThrowsDuringAStagedDownloadIsThrownAndLeavesTheRingUsable() {
        try (Arena arena = Arena.ofShared()) {
            StagingRing ring = ring(arena, 8, 4096, StagingCopy::new);
            MemorySegment device = random(arena, new Random(14), 32768);
            long[] sizes = {3000, 9000, 6000};
            long[] addresses = {BASE, BASE + 4096, BASE + 16384};
            boolean[] direct = {false, false, false};
            MemorySegment[] back = zeroed(arena, sizes);
            FakeStream down = new FakeStream(null).on(device);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> download(ring,
                    addresses, null, back, sizes, direct, 1, () -> {
                        throw new IllegalStateException("checks failed");
                    }, down, new TransferStatistics()));
            assertEquals("checks failed", e.getMessage());
            assertEquals(down.queue.size(), down.executed, "no copy still writes into a chunk");
            MemorySegment[] again = zeroed(arena, sizes);
            download(ring, addresses, null, again, sizes, direct, down.on(device), new TransferStatistics());
            for (int i = 0; i < sizes.length; i++) {
                assertTrue(arrived(device, addresses, sizes, again, i), "the ring is usable after the throw: range " + i);
            }
        }
    }

}
