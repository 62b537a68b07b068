package org.devicebridge.arrow.cuda;

import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ViewVarCharVector;
import org.devicebridge.Device;
import org.devicebridge.cuda.CudaCopies;
import org.devicebridge.cuda.CudaStream;
import org.devicebridge.cuda.DeviceBuffer;
import org.devicebridge.cuda.PinnedHostPool;

/**
 * What the tests of asynchronous lifetimes share: a stream blocked behind queued memsets, every block a pool
 * can lend taken and filled with {@link #POISON}, rounds with more memsets until the poisoning happened
 * while the stream was provably busy (failing after the last), and a batch whose export writes buffers of
 * its own (views with non-zero inline padding). Freeing a block under a queued copy shows as 0xEE bytes on
 * the device.
 */
public final class AsyncPoison implements AutoCloseable {
    public static final byte POISON = (byte) 0xEE;
    /**
     * Large memsets, not many: a stream holds about a thousand queued operations before the host blocks in the
     * next enqueue, so the window is what a thousand of them take (2 GiB: about a millisecond each on an H100).
     */
    private static final long BLOCKER_BYTES = 2L << 30;
    private static final int ROUNDS = 4;
    private static final int FIRST_MEMSETS = 200;

    private final DeviceBuffer blocker;

    /** A device buffer on {@code device} the memsets write. */
    public AsyncPoison(int device) {
        blocker = DeviceBuffer.allocate(Device.cuda(device), BLOCKER_BYTES);
    }

    /** Queues {@code count} memsets over the blocker on {@code s}: work the next copies wait behind. */
    public void block(CudaStream s, int count) {
        for (int i = 0; i < count; i++) {
            CudaCopies.fillAsync(blocker.range(0, BLOCKER_BYTES), (byte) i, s);
        }
    }

    @Override
    public void close() {
        blocker.close();
    }

    /** One attempt: given how many memsets to queue first, {@code true} if it poisoned while busy (and compared). */
    @FunctionalInterface
    public interface Round {
        boolean run(int memsets) throws Exception;
    }

    /**
     * Runs {@code round} with 200, 400, 800, 1600 memsets until one poisoned while the stream was still busy;
     * fails if none did (a test that poisoned after the copies ran proves nothing).
     */
    public static void untilPoisonedWhileBusy(Round round) throws Exception {
        for (int i = 0, memsets = FIRST_MEMSETS; i < ROUNDS; i++, memsets *= 2) {
            if (round.run(memsets)) {
                return;
            }
        }
        fail("the stream finished before the poisoning in every round: the test proves nothing");
    }

    /**
     * Takes every block the pinned pool can lend without allocating more pinned memory (each size class up to
     * 4 MiB, until the pool reserves more) and fills them with {@link #POISON}; give them back with {@link #free}.
     */
    public static List<MemorySegment> poisonPinnedPool(PinnedHostPool pool) {
        List<MemorySegment> taken = new ArrayList<>();
        for (long size = PinnedHostPool.MIN_BLOCK; size <= (4L << 20); size *= 2) {
            for (int i = 0; i < 1024; i++) {
                long reserved = pool.reservedBytes();
                MemorySegment b = pool.allocate(size);
                taken.add(b);
                b.fill(POISON);
                if (pool.reservedBytes() != reserved) {
                    break; // a fresh block: the class has none free any more
                }
            }
        }
        return taken;
    }

    /**
     * Poisons every block {@code pool} can lend, asks {@code s} whether it is still busy, and gives the blocks
     * back: {@code true} if the poison was written while {@code s} had not reached its queued copies.
     */
    public static boolean poisonedWhileBusy(PinnedHostPool pool, CudaStream s) {
        List<MemorySegment> poisoned = poisonPinnedPool(pool);
        boolean busy = !s.query();
        free(pool, poisoned);
        return busy;
    }

    public static void free(PinnedHostPool pool, List<MemorySegment> blocks) {
        for (MemorySegment b : blocks) {
            pool.free(b);
        }
    }

    /**
     * Allocates {@code count} blocks of {@code bytes} from the device's stream-ordered pool on {@code on}, fills
     * them with {@link #POISON} and waits for {@code on}: memory the pool lent again is overwritten. The caller
     * closes them.
     */
    public static List<DeviceBuffer> poisonDevicePool(int device, long bytes, int count, CudaStream on) {
        List<DeviceBuffer> poisoned = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            DeviceBuffer b = DeviceBuffer.allocateAsync(Device.cuda(device), bytes, on);
            poisoned.add(b);
            CudaCopies.fillAsync(b.range(0, bytes), POISON, on);
        }
        on.synchronize();
        return poisoned;
    }

    /** Short and long strings whose inline views get non-zero padding (the export writes clean views of its own). */
    public static List<String> values(int rows, int first) {
        List<String> out = new ArrayList<>(rows);
        for (int i = first; i < first + rows; i++) {
            out.add(i % 3 == 0 ? "v" + i : "a value longer than twelve bytes " + i);
        }
        return out;
    }

    /** A root of one Utf8View column "s" in {@code memory} whose short views carry 0x5A padding. */
    public static VectorSchemaRoot viewRoot(BufferAllocator memory, List<String> values) {
        ViewVarCharVector v = new ViewVarCharVector("s", memory);
        v.allocateNew();
        for (int i = 0; i < values.size(); i++) {
            v.setSafe(i, values.get(i).getBytes(StandardCharsets.UTF_8));
        }
        v.setValueCount(values.size());
        ArrowBuf views = v.getDataBuffer();
        for (int i = 0; i < values.size(); i++) {
            int size = views.getInt(i * 16L);
            for (long b = 4 + size; size < 12 && b < 16; b++) {
                views.setByte(i * 16L + b, 0x5A); // as an unzeroed split leaves them: the export rewrites the views
            }
        }
        VectorSchemaRoot root = new VectorSchemaRoot(List.<FieldVector>of(v));
        root.setRowCount(values.size());
        return root;
    }

    /** The strings of a root made by {@link #viewRoot} (or its download). */
    public static List<String> strings(VectorSchemaRoot root) {
        ViewVarCharVector v = (ViewVarCharVector) root.getVector(0);
        List<String> out = new ArrayList<>(v.getValueCount());
        for (int i = 0; i < v.getValueCount(); i++) {
            out.add(new String(v.get(i), StandardCharsets.UTF_8));
        }
        return out;
    }
}
