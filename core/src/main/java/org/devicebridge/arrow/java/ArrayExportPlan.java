package org.devicebridge.arrow.java;

import java.util.Arrays;
import org.apache.arrow.memory.ArrowBuf;

/** One array export, planned: per node its lengths and ranges of the flat buffer, size and retain lists. */
final class ArrayExportPlan extends ExportPlan {
    private static final ThreadLocal<ArrayExportPlan> PLANS = ThreadLocal.withInitial(ArrayExportPlan::new);

    long[] length = new long[16];
    long[] nullCount = new long[16];
    int[] firstBuffer = new int[16];
    int[] bufferCount = new int[16];
    int[] firstVariadic = new int[16];
    int[] variadicCount = new int[16];
    int[] firstRetained = new int[16];
    int[] retainedEnd = new int[16];
    long[] buffers = new long[64];
    /** Bytes readable at each of {@link #buffers} (an ArrowBuf's capacity), for a view of the plan ({@link ArrowJavaView}). */
    long[] capacities = new long[64];
    int bufferTotal;
    long[] variadic = new long[8];
    int variadicTotal;
    ArrowBuf[] retained = new ArrowBuf[64];
    int retainedTotal;
    /** Buffers this export made (narrowed decimals, zero-padded views): the plan's reference, dropped when the export ends. */
    ArrowBuf[] made = new ArrowBuf[4];
    int madeTotal;
    private static final int MAX_KEPT_IMAGE = 1 << 16;
    /** The block as {@link ExportBlock} composes it before copying it out. */
    private long[] image = new long[256];

    /** The image array, at least {@code longs} long (its contents are overwritten entirely). */
    long[] image(int longs) {
        if (longs > MAX_KEPT_IMAGE) {
            return new long[longs]; // a rare huge tree: not kept by the thread
        }
        if (image.length < longs) {
            image = new long[Math.max(longs, image.length * 2)];
        }
        return image;
    }

    @Override
    void growNodes(int capacity) {
        length = Arrays.copyOf(length, capacity);
        nullCount = Arrays.copyOf(nullCount, capacity);
        firstBuffer = Arrays.copyOf(firstBuffer, capacity);
        bufferCount = Arrays.copyOf(bufferCount, capacity);
        firstVariadic = Arrays.copyOf(firstVariadic, capacity);
        variadicCount = Arrays.copyOf(variadicCount, capacity);
        firstRetained = Arrays.copyOf(firstRetained, capacity);
        retainedEnd = Arrays.copyOf(retainedEnd, capacity);
    }

    @Override
    void reset() {
        super.reset();
        Arrays.fill(retained, 0, retainedTotal, null);
        Arrays.fill(made, 0, madeTotal, null);
        madeTotal = 0;
        bufferTotal = 0;
        variadicTotal = 0;
        retainedTotal = 0;
    }

    void begin(int node) {
        firstBuffer[node] = bufferTotal;
        firstVariadic[node] = variadicTotal;
        variadicCount[node] = 0;
        firstRetained[node] = retainedTotal;
    }

    void end(int node) {
        bufferCount[node] = bufferTotal - firstBuffer[node];
        retainedEnd[node] = retainedTotal;
    }

    /** Adds the next buffer of the node being planned: its address (0 for NULL) and the bytes readable there. */
    void buffer(long address, long capacity) {
        if (bufferTotal == buffers.length) {
            buffers = Arrays.copyOf(buffers, bufferTotal * 2);
            capacities = Arrays.copyOf(capacities, bufferTotal * 2);
        }
        capacities[bufferTotal] = capacity;
        buffers[bufferTotal++] = address;
    }

    void variadicSize(int node, long size) {
        if (variadicTotal == variadic.length) {
            variadic = Arrays.copyOf(variadic, variadicTotal * 2);
        }
        variadic[variadicTotal++] = size;
        variadicCount[node]++;
    }

    /** Keeps {@code b}, a buffer this export made: the plan's reference, dropped by {@code done}, whatever happens next. */
    void made(ArrowBuf b) {
        if (madeTotal == made.length) {
            made = Arrays.copyOf(made, madeTotal * 2);
        }
        made[madeTotal++] = b;
    }

    /** Holds {@code b} for node {@code node}: one reference per allocation (a vector's buffers often share one). */
    void retain(int node, ArrowBuf b) {
        if (retainedTotal > firstRetained[node]
                && retained[retainedTotal - 1].getReferenceManager() == b.getReferenceManager()) {
            return;
        }
        if (retainedTotal == retained.length) {
            retained = Arrays.copyOf(retained, retainedTotal * 2);
        }
        retained[retainedTotal++] = b;
    }

    /**
     * The buffers retained, as an array of exactly that length, for the written tree to keep. The plan takes
     * a new array, sized as this export's, for the next one: the plan lives long, and storing buffers into an
     * old array costs a GC card mark per store (a fence, and contention between threads), into a new one not.
     */
    ArrowBuf[] takeRetained() {
        ArrowBuf[] held = retainedTotal == retained.length ? retained : Arrays.copyOf(retained, retainedTotal);
        retained = new ArrowBuf[Math.max(4, retainedTotal)];
        retainedTotal = 0;
        return held;
    }

    /** The thread's reused plan, or a new one when it is in use (an export inside an export). */
    static ArrayExportPlan take() {
        ArrayExportPlan p = PLANS.get();
        if (p.busy) {
            return new ArrayExportPlan();
        }
        p.busy = true;
        return p;
    }

    /**
     * Ends an export, written or not: drops the plan's reference to each buffer it made (a written tree holds
     * its own, taken with the others', and frees them in its release), then forgets the plan.
     */
    static void done(ArrayExportPlan p) {
        try {
            for (int k = 0; k < p.madeTotal; k++) {
                p.made[k].getReferenceManager().release();
            }
        } finally {
            p.reset();
            p.busy = false;
        }
    }
}
