package org.devicebridge.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.devicebridge.DeviceBridgeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The staging logic of HostDeviceTransfer without a GPU: a fake device whose copies run only when the
 * stager waits for them, in queue order, as a CUDA stream would run them at the latest. A stager that
 * reused a half before waiting for its copies, or unpacked before waiting, would read or send the wrong
 * bytes here.
 */
class HostDeviceTransferStagerTest {
    private static final long BASE = 1 << 20; // fake device addresses start here

    /** A stream of copies against a host segment standing in for device memory. */
    static final class FakeStream implements HostDeviceTransfer.Ops {
        MemorySegment device; // the fake device memory copies queued from now on use
        final List<Runnable> queue = new ArrayList<>();
        int executed;
        final int[] mark = {-1, -1};
        int toDevice;
        int toHost;
        int realWaits;

        /** Sets the fake device memory and zeroes the per-batch counters. */
        FakeStream on(MemorySegment memory) {
            this.device = memory;
            toDevice = 0;
            toHost = 0;
            realWaits = 0;
            return this;
        }

        @Override
        public void toDevice(long deviceAddress, MemorySegment from, long bytes) {
            assertEquals(bytes, from.byteSize());
            toDevice++;
            MemorySegment d = device;
            queue.add(() -> MemorySegment.copy(from, 0, d, deviceAddress - BASE, bytes));
        }

        @Override
        public void toHost(MemorySegment to, long deviceAddress, long bytes) {
            assertEquals(bytes, to.byteSize());
            toHost++;
            MemorySegment d = device;
            queue.add(() -> MemorySegment.copy(d, deviceAddress - BASE, to, 0, bytes));
        }

        @Override
        public void record(int half) {
            mark[half] = queue.size();
        }

        @Override
        public void await(int half) {
            assertTrue(mark[half] >= 0, "waited for a half never recorded");
            if (executed < mark[half]) {
                realWaits++;
            }
            runUpTo(mark[half]);
        }

        void runUpTo(int end) {
            while (executed < end) {
                queue.get(executed++).run();
            }
        }

        void finish() {
            runUpTo(queue.size());
        }
    }

    private static MemorySegment random(Arena arena, Random r, long size) {
        MemorySegment s = arena.allocate(Math.max(1, size)).asSlice(0, size);
        byte[] b = new byte[(int) size];
        r.nextBytes(b);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
        return s;
    }

    private static long randomSize(Random r) {
        int[] special = {0, 1, 63, 64, 65, 127, 128, 129};
        return r.nextInt(3) == 0 ? special[r.nextInt(special.length)] : r.nextInt(3000);
    }

    @ParameterizedTest(name = "half of {0} bytes")
    @ValueSource(ints = {64, 192, 1024, 1 << 16})
    void packedUploadAndDownloadRoundTripEveryByteThroughReusedHalves(int half) {
        try (Arena arena = Arena.ofConfined()) { // confined buffers: every copy on the caller's thread
            roundTrip(half, arena, new StagingCopy(), Long.MAX_VALUE);
        }
    }

    @ParameterizedTest(name = "half of {0} bytes")
    @ValueSource(ints = {64, 192, 1024, 1 << 16})
    void packedUploadAndDownloadRoundTripWithStagingCopiesSplitOverThreads(int half) {
        // thresholds far below the real ones so that small, odd-sized chunks are split into many slices, and
        // chunks are sent in pieces of 100 bytes (not a multiple of anything)
        try (Arena arena = Arena.ofShared()) {
            roundTrip(half, arena, new StagingCopy(1, 7, 4), 100);
        }
    }

    private static void roundTrip(int half, Arena arena, StagingCopy copies, long piece) {
        Random r = new Random(half);
        {
            MemorySegment staging = arena.allocate(2L * half, 64);
            HostDeviceTransfer.Stager stager = new HostDeviceTransfer.Stager(staging.asSlice(0, half),
                    staging.asSlice(half, half), copies, piece);
            FakeStream stream = new FakeStream(); // the stager's halves and their marks persist across batches
            for (int batch = 0; batch < 30; batch++) {
                int n = r.nextInt(12);
                MemorySegment[] src = new MemorySegment[n];
                long[] sizes = new long[n];
                for (int i = 0; i < n; i++) {
                    src[i] = random(arena, r, randomSize(r));
                    sizes[i] = src[i].byteSize();
                }
                long[] placed = HostDeviceTransfer.packedOffsets(sizes);
                long total = placed[n];
                long[] offsets = java.util.Arrays.copyOf(placed, n);
                long prevEnd = 0;
                for (int i = 0; i < n; i++) {
                    assertEquals(0, offsets[i] % HostDeviceTransfer.ALIGNMENT, "aligned offset");
                    assertTrue(offsets[i] >= prevEnd && offsets[i] - prevEnd < HostDeviceTransfer.ALIGNMENT,
                            "packed tightly");
                    prevEnd = offsets[i] + sizes[i];
                }
                assertEquals(prevEnd, total);

                MemorySegment device = arena.allocate(Math.max(1, total)).asSlice(0, total);
                device.fill((byte) 0x5A); // padding must come out zero, not this
                stream.on(device);
                stager.upload(src, offsets, sizes, total, BASE, stream);
                long step = Math.min(piece, half);
                long pieces = total / half * ((half + step - 1) / step) + (total % half + step - 1) / step;
                assertEquals(pieces, stream.toDevice, "one copy per piece of each chunk");
                stream.finish();
                long cursor = 0;
                for (int i = 0; i < n; i++) {
                    for (long p = cursor; p < offsets[i]; p++) {
                        assertEquals(0, device.get(ValueLayout.JAVA_BYTE, p), "padding byte " + p);
                    }
                    assertArrayEquals(src[i].toArray(ValueLayout.JAVA_BYTE),
                            device.asSlice(offsets[i], sizes[i]).toArray(ValueLayout.JAVA_BYTE), "buffer " + i);
                    cursor = offsets[i] + sizes[i];
                }

                MemorySegment[] back = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    back[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                }
                FakeStream down = stream.on(device);
                stager.download(BASE, offsets, back, sizes, down);
                for (int i = 0; i < n; i++) {
                    assertArrayEquals(src[i].toArray(ValueLayout.JAVA_BYTE), back[i].toArray(ValueLayout.JAVA_BYTE),
                            "downloaded buffer " + i);
                }
                if (total > 0 && total <= half) {
                    assertEquals(1, down.toHost, "a packed batch that fits a half is one copy");
                    assertEquals(1, down.realWaits, "and one synchronisation");
                }
                stream.finish();
            }
        }
    }

    @ParameterizedTest(name = "half of {0} bytes")
    @ValueSource(ints = {64, 320, 4096})
    void downloadOfArbitraryRangesFillsEachDestination(int half) {
        try (Arena arena = Arena.ofConfined()) {
            arbitraryRanges(half, arena, new StagingCopy(), Long.MAX_VALUE);
        }
    }

    @ParameterizedTest(name = "half of {0} bytes")
    @ValueSource(ints = {64, 320, 4096})
    void downloadOfArbitraryRangesWithStagingCopiesSplitOverThreads(int half) {
        try (Arena arena = Arena.ofShared()) {
            arbitraryRanges(half, arena, new StagingCopy(1, 5, 3), 100);
        }
    }

    private static void arbitraryRanges(int half, Arena arena, StagingCopy copies, long piece) {
        Random r = new Random(7L * half);
        {
            MemorySegment staging = arena.allocate(2L * half, 64);
            HostDeviceTransfer.Stager stager = new HostDeviceTransfer.Stager(staging.asSlice(0, half),
                    staging.asSlice(half, half), copies, piece);
            MemorySegment device = random(arena, r, 20_000);
            FakeStream stream = new FakeStream().on(device);
            for (int batch = 0; batch < 40; batch++) {
                int n = r.nextInt(10);
                long[] offsets = new long[n];
                long[] sizes = new long[n];
                MemorySegment[] dst = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    sizes[i] = Math.min(randomSize(r), 20_000);
                    // unsorted, overlapping, adjacent or nearly adjacent ranges
                    offsets[i] = i > 0 && r.nextBoolean()
                            ? Math.min(offsets[i - 1] + sizes[i - 1] + r.nextInt(70), 20_000 - sizes[i])
                            : r.nextLong(20_000 - sizes[i] + 1);
                    dst[i] = arena.allocate(Math.max(1, sizes[i])).asSlice(0, sizes[i]);
                }
                stager.download(BASE, offsets, dst, sizes, stream);
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
            MemorySegment staging = arena.allocate(2L * 4096, 64);
            HostDeviceTransfer.Stager stager = new HostDeviceTransfer.Stager(staging.asSlice(0, 4096),
                    staging.asSlice(4096, 4096), new StagingCopy(), Long.MAX_VALUE);
            MemorySegment device = random(arena, new Random(3), 1000);
            FakeStream stream = new FakeStream().on(device);
            long[] offsets = {0, 108, 300}; // gaps of 8 and 92 bytes
            long[] sizes = {100, 100, 50};
            for (long[] groups : new long[][] {null, {1, 1, 1}, {1, 2, 2}, {1, 1, 2}}) {
                MemorySegment[] dst = new MemorySegment[3];
                for (int i = 0; i < 3; i++) {
                    dst[i] = arena.allocate(sizes[i]);
                }
                stream.on(device);
                stager.download(BASE, offsets, groups, dst, sizes, stream);
                for (int i = 0; i < 3; i++) {
                    assertArrayEquals(device.asSlice(offsets[i], sizes[i]).toArray(ValueLayout.JAVA_BYTE),
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
    void aFailedStagingCopyThrowsALibraryExceptionRecordsWhatWasSentAndLeavesTheHalvesUsable() {
        int half = 4096;
        Random r = new Random(11);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment staging = arena.allocate(2L * half, 64);
            HostDeviceTransfer.Stager stager = new HostDeviceTransfer.Stager(staging.asSlice(0, half),
                    staging.asSlice(half, half), new StagingCopy(1, 64, 4), 1000);
            MemorySegment good = random(arena, r, 3000);
            Arena gone = Arena.ofShared();
            MemorySegment dead = gone.allocate(3000);
            gone.close();
            MemorySegment device = arena.allocate(3L * half);
            FakeStream stream = new FakeStream().on(device);

            // upload: the first chunk holds part of the closed buffer
            long[] sizes = {3000, 3000};
            long[] placed = HostDeviceTransfer.packedOffsets(sizes);
            DeviceBridgeException up = assertThrows(DeviceBridgeException.class, () -> stager.upload(
                    new MemorySegment[] {good, dead}, java.util.Arrays.copyOf(placed, 2), sizes, placed[2], BASE, stream));
            assertInstanceOf(IllegalStateException.class, up.getCause());
            // the pieces before the closed buffer went (and the half was recorded: the next batch waits for them)
            assertEquals(3, stream.toDevice, "pieces of 1000 bytes up to the closed buffer at 3008");
            assertEquals(3, stream.mark[0], "the queued pieces are recorded: the half is not refilled before they ran");

            // download into a closed destination: the copy into staging was queued, the unpack fails
            DeviceBridgeException down = assertThrows(DeviceBridgeException.class, () -> stager.download(BASE,
                    new long[] {0}, new MemorySegment[] {dead}, new long[] {3000}, stream));
            assertInstanceOf(IllegalStateException.class, down.getCause());

            // both halves are usable again: the next batch goes through and round-trips
            device.fill((byte) 0x5A);
            stream.on(device);
            stager.upload(new MemorySegment[] {good}, new long[] {0}, new long[] {3000}, 3000, BASE, stream);
            stream.finish();
            MemorySegment back = arena.allocate(3000);
            stager.download(BASE, new long[] {0}, new MemorySegment[] {back}, new long[] {3000}, stream);
            assertArrayEquals(good.toArray(ValueLayout.JAVA_BYTE), back.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(3, stream.toDevice, "3000 bytes in pieces of 1000");
            assertEquals(1, stream.toHost);
            stream.finish();
        }
    }
}
