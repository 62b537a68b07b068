package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.devicebridge.DeviceBridgeException;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.internal.Bitmaps;
import org.devicebridge.internal.FieldPath;

/**
 * The plan of one {@link VectorLoader}: the vectors planned (in load order: children first) and the buffers
 * each takes, with the steps that plan a buffer (a zero-copy slice of the producer's memory, or a buffer of the
 * allocator where Arrow Java cannot take that memory as it is). Reused by its thread across imports.
 */
final class LoadPlan {
    private static final ThreadLocal<LoadPlan> SCRATCH = ThreadLocal.withInitial(LoadPlan::new);

    boolean busy;
    FieldVector[] vectors = new FieldVector[16];
    int[] lengths = new int[16];
    int[] nulls = new int[16];
    /** Each vector's buffers: [start, end) of the buffer arrays. */
    int[] bufferStarts = new int[16];
    int[] bufferEnds = new int[16];
    int vectorCount;
    /** Per buffer: the allocator's buffer, or {@code null} for a range of foreign memory. */
    ArrowBuf[] own = new ArrowBuf[32];
    long[] addresses = new long[32];
    long[] sizes = new long[32];
    int bufferCount;
    final List<ArrowBuf> list = new ArrayList<>(4);

    void clear() {
        Arrays.fill(vectors, 0, vectorCount, null);
        Arrays.fill(own, 0, bufferCount, null);
        vectorCount = 0;
        bufferCount = 0;
        list.clear();
        allocator = null;
    }

    /** The allocator of the import being planned (buffers of it, and its empty buffer). */
    private BufferAllocator allocator;

    /** This thread's plan, or a new one when it is in use (an import inside an import), for {@code allocator}. */
    static LoadPlan take(BufferAllocator allocator) {
        LoadPlan mine = SCRATCH.get();
        if (mine.busy) {
            mine = new LoadPlan();
        }
        mine.busy = true;
        mine.allocator = allocator;
        return mine;
    }

    /** Adds {@code v}, which takes buffers [from, to) (planned before its children's). */
    void add(FieldVector v, int length, int nulls, int from, int to) {
        if (vectorCount == vectors.length) {
            int c = vectorCount * 2;
            vectors = Arrays.copyOf(vectors, c);
            lengths = Arrays.copyOf(lengths, c);
            this.nulls = Arrays.copyOf(this.nulls, c);
            bufferStarts = Arrays.copyOf(bufferStarts, c);
            bufferEnds = Arrays.copyOf(bufferEnds, c);
        }
        int k = vectorCount++;
        vectors[k] = v;
        lengths[k] = length;
        this.nulls[k] = nulls;
        bufferStarts[k] = from;
        bufferEnds[k] = to;
    }

    private void grow() {
        int c = bufferCount * 2;
        own = Arrays.copyOf(own, c);
        addresses = Arrays.copyOf(addresses, c);
        sizes = Arrays.copyOf(sizes, c);
    }

    /** Plans a buffer of the allocator (this loader drops its reference when it ends). */
    void own(ArrowBuf b) {
        if (bufferCount == own.length) {
            grow();
        }
        own[bufferCount++] = b;
    }

    /** Plans bytes [from, from + bytes) of buffer {@code i}, zero-copy, checked against the validated length. */
    void slice(ArrayNode n, int i, long from, long bytes) {
        if (bytes == 0 || n.isBufferNull(i)) {
            own(allocator.getEmpty());
            return;
        }
        long end = Math.addExact(from, bytes);
        if (from < 0 || (n.bufferLength(i) >= 0 && end > n.bufferLength(i))) {
            throw new DeviceBridgeException("internal error: " + FieldPath.join(n.path(), "buffers[" + i + "]")
                    + " slice [" + from + ", " + end + ") exceeds " + n.bufferLength(i) + " bytes");
        }
        if (bufferCount == own.length) {
            grow();
        }
        int b = bufferCount++;
        own[b] = null;
        addresses[b] = n.bufferPointer(i).address() + from;
        sizes[b] = bytes;
    }

    /** Bits [phys, phys + count) of bitmap buffer {@code i}: a slice when byte-aligned, else a shifted copy. */
    void bitmap(ArrayNode n, int i, long phys, long count) {
        long bytes = Bitmaps.bytes(count);
        if ((phys & 7) == 0) {
            slice(n, i, phys >>> 3, bytes);
            return;
        }
        MemorySegment src = VectorLoader.hostBuffer(n, i);
        ArrowBuf out = allocator.buffer(Math.max(bytes, 1));
        own(out.writerIndex(bytes));
        out.setZero(0, out.capacity());
        for (long k = 0; k < count; k++) {
            if (Bitmaps.bit(src, phys + k)) {
                out.setByte(k >>> 3, out.getByte(k >>> 3) | (1 << (k & 7)));
            }
        }
    }

    /**
     * Plans the offsets buffer for [phys, phys + count] (a slice when the first offset is 0, else a copy
     * rebased to 0) and returns the {first, last} offsets of that range.
     */
    long[] offsets(ArrayNode n, long phys, long count) {
        int w = n.type().layout().offsetWidth();
        long[] r = ListRange.of(n, phys, count);
        if (n.isBufferNull(1) || count == 0) {
            ArrowBuf empty = allocator.buffer(w);
            own(empty.writerIndex(w));
            empty.setZero(0, w);
            return new long[] {0, 0};
        }
        if (r[0] == 0) {
            slice(n, 1, Math.multiplyExact(phys, w), Math.multiplyExact(count + 1, w));
            return r;
        }
        MemorySegment src = VectorLoader.hostBuffer(n, 1);
        ArrowBuf out = allocator.buffer(Math.multiplyExact(count + 1, w));
        own(out.writerIndex(Math.multiplyExact(count + 1, w)));
        for (long k = 0; k <= count; k++) {
            long v = ListRange.read(src, phys + k, w) - r[0];
            if (w == 4) {
                out.setInt(k * 4, (int) v);
            } else {
                out.setLong(k * 8, v);
            }
        }
        return r;
    }
}
