package org.devicebridge.internal;

import java.lang.foreign.MemorySegment;
import org.devicebridge.generated.arrow.ArrowArray;

/**
 * The one home of two facts the import reader and the export writer share: the byte offsets of the
 * {@code ArrowArray} fields (from the generated layout), and the segment through which structs, pointer
 * arrays and the library's own blocks are read and written by address, so that walking a tree makes no
 * segment per field. That segment is never handed out: every address given to it was checked (non-NULL,
 * aligned, the struct's size or a validated count), and buffers themselves are always sized from
 * validated metadata before anything reads them.
 */
public final class ArrowArrayFields {
    /** Every address, for reading and writing struct fields at checked addresses (internal use only). */
    public static final MemorySegment BY_ADDRESS = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    public static final long LENGTH = ArrowArray.length$offset();
    public static final long NULL_COUNT = ArrowArray.null_count$offset();
    public static final long OFFSET = ArrowArray.offset$offset();
    public static final long N_BUFFERS = ArrowArray.n_buffers$offset();
    public static final long N_CHILDREN = ArrowArray.n_children$offset();
    public static final long BUFFERS = ArrowArray.buffers$offset();
    public static final long CHILDREN = ArrowArray.children$offset();
    public static final long DICTIONARY = ArrowArray.dictionary$offset();
    public static final long RELEASE = ArrowArray.release$offset();
    public static final long PRIVATE_DATA = ArrowArray.private_data$offset();

    private ArrowArrayFields() {}
}
