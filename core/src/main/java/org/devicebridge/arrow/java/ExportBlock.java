package org.devicebridge.arrow.java;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.apache.arrow.memory.ArrowBuf;
import org.devicebridge.ValidationException;
import org.devicebridge.foreign.ExportTree;
import org.devicebridge.internal.ArrowArrayFields;
import org.devicebridge.internal.Native;

/**
 * Writes one planned array export ({@link ArrayExportPlan}): retains its buffers, allocates and
 * registers its block ({@link ExportRuntime.Tree}), then fills the block. The block (child structs, pointer
 * arrays, variadic sizes, node table) is composed in the thread's reused {@code long[]} image and copied
 * into native memory at once, so a batch of n nodes costs one bounds-checked copy instead of some 16n
 * checked stores; the caller's root struct is composed in the same image, after the block, and copied out
 * on its own.
 */
final class ExportBlock {
    private static final MemorySegment ALL = ExportRuntime.ALL;
    /** In a plan's buffer list: the variadic-sizes buffer, which lives in the block. */
    static final long VARIADIC_SIZES = -1L;
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
    // The struct's fields as long indices (every ArrowArray field is 8 bytes wide and 8-aligned).
    private static final int LENGTH = (int) (ArrowArrayFields.LENGTH / 8);
    private static final int NULL_COUNT = (int) (ArrowArrayFields.NULL_COUNT / 8);
    private static final int OFFSET = (int) (ArrowArrayFields.OFFSET / 8);
    private static final int N_BUFFERS = (int) (ArrowArrayFields.N_BUFFERS / 8);
    private static final int N_CHILDREN = (int) (ArrowArrayFields.N_CHILDREN / 8);
    private static final int BUFFERS = (int) (ArrowArrayFields.BUFFERS / 8);
    private static final int CHILDREN = (int) (ArrowArrayFields.CHILDREN / 8);
    private static final int DICTIONARY = (int) (ArrowArrayFields.DICTIONARY / 8);
    private static final int RELEASE = (int) (ArrowArrayFields.RELEASE / 8);
    private static final int PRIVATE = (int) (ArrowArrayFields.PRIVATE_DATA / 8);
    private static final int STRUCT_LONGS = (int) (ExportRuntime.ARRAY_SIZE / 8);

    private ExportBlock() {}

    /** Writes {@code p} into {@code out} and a new registered block; a failure holds nothing and leaves {@code out} untouched. */
    static void write(ArrayExportPlan p, MemorySegment out) {
        int nodes = p.nodes;
        long size = Math.multiplyExact(nodes - 1L, ExportRuntime.ARRAY_SIZE);
        for (int i = 0; i < nodes; i++) {
            size = Math.addExact(size, 8L * Math.max(1, p.bufferCount[i]));
            size = Math.addExact(size, 8L * p.childCount[i]);
            size = Math.addExact(size, 8L * p.variadicCount[i]);
        }
        long table = size;
        size = Math.addExact(size, p.tableBytes());
        int longs = Math.toIntExact(size / 8); // every part is a multiple of 8 bytes
        int rootAt = longs; // the root struct's image, copied to out rather than into the block
        long[] img = p.image(Math.addExact(longs, STRUCT_LONGS));
        retainAll(p);
        ArrowBuf[] held = p.retainedTotal == 0 ? null : p.takeRetained();
        ExportRuntime.Tree tree;
        long privateData;
        try {
            long base = Native.malloc(size).address();
            tree = new ExportRuntime.Tree(ExportTree.ARRAY, base, table, nodes, held);
            try {
                privateData = tree.register();
            } catch (RuntimeException | Error e) {
                Native.free(MemorySegment.ofAddress(base));
                throw e;
            }
        } catch (RuntimeException | Error e) {
            releaseAll(held, held == null ? 0 : held.length);
            throw e;
        }
        // Registered: from here on nothing can fail, only memory is written.
        long base = tree.base;
        int cursor = (nodes - 1) * STRUCT_LONGS; // long index in the block
        int tableAt = (int) (table / 8);
        long stub = ExportTree.ARRAY.stub;
        for (int i = 0; i < nodes; i++) {
            int nb = p.bufferCount[i];
            int nc = p.childCount[i];
            int nv = p.variadicCount[i];
            int buffers = cursor;
            int children = buffers + Math.max(1, nb);
            int variadic = children + nc;
            cursor = variadic + nv;
            for (int b = 0; b < nb; b++) {
                long a = p.buffers[p.firstBuffer[i] + b];
                img[buffers + b] = a == VARIADIC_SIZES ? base + 8L * variadic : a;
            }
            if (nb == 0) {
                img[buffers] = 0L;
            }
            int firstChild = p.firstDependent[i];
            for (int c = 0; c < nc; c++) {
                img[children + c] = tree.struct(firstChild + c);
            }
            System.arraycopy(p.variadic, p.firstVariadic[i], img, variadic, nv);
            img[tableAt + 2 * i] = ints(p.firstRetained[i], p.retainedEnd[i]);
            img[tableAt + 2 * i + 1] = ints(p.firstDependent[i], p.dependentCount[i]);
            int dictionary = p.dictionaryOf(i);
            long buffersAddress = base + 8L * buffers;
            long childrenAddress = nc == 0 ? 0L : base + 8L * children;
            long dictionaryAddress = dictionary < 0 ? 0L : tree.struct(dictionary);
            int s = i == 0 ? rootAt : (i - 1) * STRUCT_LONGS;
            img[s + LENGTH] = p.length[i];
            img[s + NULL_COUNT] = p.nullCount[i];
            img[s + OFFSET] = 0L;
            img[s + N_BUFFERS] = nb;
            img[s + N_CHILDREN] = nc;
            img[s + BUFFERS] = buffersAddress;
            img[s + CHILDREN] = childrenAddress;
            img[s + DICTIONARY] = dictionaryAddress;
            img[s + PRIVATE] = privateData + i;
            img[s + RELEASE] = stub;
        }
        MemorySegment.copy(img, 0, ALL, ValueLayout.JAVA_LONG_UNALIGNED, base, longs);
        MemorySegment.copy(img, rootAt, out, ValueLayout.JAVA_LONG_UNALIGNED, 0L, STRUCT_LONGS);
    }

    /** Two {@code int}s as the long whose native bytes hold {@code first}, then {@code second}. */
    private static long ints(int first, int second) {
        long lo = LITTLE_ENDIAN ? first : second;
        long hi = LITTLE_ENDIAN ? second : first;
        return (lo & 0xFFFF_FFFFL) | (hi << 32);
    }

    /** Takes a reference to every planned buffer; if one cannot be retained, drops those taken and throws. */
    static void retainAll(ArrayExportPlan p) {
        int taken = 0;
        try {
            for (; taken < p.retainedTotal; taken++) {
                p.retained[taken].getReferenceManager().retain();
            }
        } catch (RuntimeException e) {
            // a buffer that can no longer be retained (its vector was closed concurrently)
            releaseAll(p.retained, taken);
            throw new ValidationException(ValidationException.Category.RELEASED, "",
                    "an Arrow buffer was released while it was being exported: " + e.getMessage(), e);
        }
    }

    static void releaseAll(ArrowBuf[] retained, int count) {
        for (int k = 0; k < count; k++) {
            retained[k].getReferenceManager().release();
        }
    }
}
