package org.devicebridge.python;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.devicebridge.arrow.ArrayNode;
import org.devicebridge.arrow.SchemaNode;
import org.devicebridge.generated.arrow.ArrowArray;
import org.devicebridge.generated.arrow.ArrowSchema;
import org.devicebridge.internal.Native;

/**
 * A test-only Arrow producer written against the C Data Interface alone: it exports a deep copy of an
 * imported, validated view (schema tree with names, flags and metadata; array tree with the producer's
 * lengths, null counts and <em>offsets</em>, every buffer copied into {@code malloc} memory) as fresh
 * {@code ArrowSchema}/{@code ArrowArray} structs this class owns until a consumer releases them. So a
 * value first read from pyarrow reaches pyarrow again through memory and callbacks that are Java's only.
 *
 * <p>Root releases are counted ({@link #SCHEMA_RELEASES}, {@link #ARRAY_RELEASES}); each frees everything
 * its export allocated. Child structs only mark themselves released (their parent frees them).
 */
final class ViewCopyExport {
    static final AtomicInteger SCHEMA_RELEASES = new AtomicInteger();
    static final AtomicInteger ARRAY_RELEASES = new AtomicInteger();
    private static final AtomicLong IDS = new AtomicLong(1);
    private static final Map<Long, List<MemorySegment>> LIVE = new ConcurrentHashMap<>();

    private static final MemorySegment RELEASE_ROOT_SCHEMA = Native.upcallStub(MethodHandles.lookup(),
            ViewCopyExport.class, "releaseRootSchema", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MemorySegment RELEASE_ROOT_ARRAY = Native.upcallStub(MethodHandles.lookup(),
            ViewCopyExport.class, "releaseRootArray", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MemorySegment RELEASE_CHILD_SCHEMA = Native.upcallStub(MethodHandles.lookup(),
            ViewCopyExport.class, "releaseChildSchema", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MemorySegment RELEASE_CHILD_ARRAY = Native.upcallStub(MethodHandles.lookup(),
            ViewCopyExport.class, "releaseChildArray", FunctionDescriptor.ofVoid(ADDRESS));

    private ViewCopyExport() {}

    /** Exports copies that live still (for leak checks). */
    static int live() {
        return LIVE.size();
    }

    /** Fills {@code out} (a zeroed {@code ArrowSchema}) with a copy of {@code schema}. */
    static void exportSchema(SchemaNode schema, MemorySegment out) {
        List<MemorySegment> owned = new ArrayList<>();
        long id = IDS.getAndIncrement();
        MemorySegment s = out.reinterpret(ArrowSchema.sizeof());
        fillSchema(schema, s, owned);
        ArrowSchema.private_data(s, MemorySegment.ofAddress(id));
        ArrowSchema.release(s, RELEASE_ROOT_SCHEMA);
        LIVE.put(id, owned);
    }

    /** Fills {@code out} (a zeroed {@code ArrowArray}) with a copy of the view {@code root}. */
    static void exportArray(ArrayNode root, MemorySegment out) {
        List<MemorySegment> owned = new ArrayList<>();
        long id = IDS.getAndIncrement();
        MemorySegment a = out.reinterpret(ArrowArray.sizeof());
        fillArray(root, a, owned);
        ArrowArray.private_data(a, MemorySegment.ofAddress(id));
        ArrowArray.release(a, RELEASE_ROOT_ARRAY);
        LIVE.put(id, owned);
    }

    private static MemorySegment alloc(long bytes, List<MemorySegment> owned) {
        MemorySegment m = Native.calloc(Math.max(1, bytes));
        owned.add(m);
        return m;
    }

    private static MemorySegment cString(String s, List<MemorySegment> owned) {
        if (s == null) {
            return MemorySegment.NULL;
        }
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        MemorySegment m = alloc(b.length + 1L, owned);
        MemorySegment.copy(b, 0, m, JAVA_BYTE, 0, b.length);
        return m;
    }

    /** The C Data Interface metadata encoding: int32 count, then (int32 length, bytes) per key and value. */
    private static MemorySegment metadata(Map<String, String> metadata, List<MemorySegment> owned) {
        if (metadata.isEmpty()) {
            return MemorySegment.NULL;
        }
        List<byte[]> parts = new ArrayList<>();
        long size = 4;
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            for (String s : new String[] {e.getKey(), e.getValue()}) {
                byte[] b = s.getBytes(StandardCharsets.UTF_8);
                parts.add(b);
                size += 4 + b.length;
            }
        }
        MemorySegment m = alloc(size, owned);
        m.set(JAVA_INT_UNALIGNED, 0, metadata.size());
        long at = 4;
        for (byte[] b : parts) {
            m.set(JAVA_INT_UNALIGNED, at, b.length);
            MemorySegment.copy(b, 0, m, JAVA_BYTE, at + 4, b.length);
            at += 4 + b.length;
        }
        return m;
    }

    private static void fillSchema(SchemaNode n, MemorySegment s, List<MemorySegment> owned) {
        ArrowSchema.format(s, cString(n.format(), owned));
        ArrowSchema.name(s, cString(n.name(), owned));
        ArrowSchema.metadata(s, metadata(n.metadata(), owned));
        ArrowSchema.flags(s, n.flags());
        List<SchemaNode> children = n.children();
        ArrowSchema.n_children(s, children.size());
        if (!children.isEmpty()) {
            MemorySegment ptrs = alloc(ADDRESS.byteSize() * children.size(), owned);
            for (int i = 0; i < children.size(); i++) {
                MemorySegment c = alloc(ArrowSchema.sizeof(), owned);
                fillSchema(children.get(i), c, owned);
                ArrowSchema.release(c, RELEASE_CHILD_SCHEMA);
                ptrs.setAtIndex(ADDRESS, i, c);
            }
            ArrowSchema.children(s, ptrs);
        }
        if (n.dictionary() != null) {
            MemorySegment d = alloc(ArrowSchema.sizeof(), owned);
            fillSchema(n.dictionary(), d, owned);
            ArrowSchema.release(d, RELEASE_CHILD_SCHEMA);
            ArrowSchema.dictionary(s, d);
        }
    }

    private static void fillArray(ArrayNode n, MemorySegment a, List<MemorySegment> owned) {
        ArrowArray.length(a, n.length());
        ArrowArray.null_count(a, n.nullCount());
        ArrowArray.offset(a, n.offset());
        int nBuffers = n.bufferCount();
        ArrowArray.n_buffers(a, nBuffers);
        if (nBuffers > 0) {
            MemorySegment ptrs = alloc(ADDRESS.byteSize() * nBuffers, owned);
            for (int i = 0; i < nBuffers; i++) {
                MemorySegment src = n.buffer(i);
                if (src.equals(MemorySegment.NULL)) {
                    continue; // NULL stays NULL (calloc)
                }
                MemorySegment copy = alloc(src.byteSize(), owned);
                MemorySegment.copy(src, 0, copy, 0, src.byteSize());
                ptrs.setAtIndex(ADDRESS, i, copy);
            }
            ArrowArray.buffers(a, ptrs);
        }
        List<ArrayNode> children = n.children();
        ArrowArray.n_children(a, children.size());
        if (!children.isEmpty()) {
            MemorySegment ptrs = alloc(ADDRESS.byteSize() * children.size(), owned);
            for (int i = 0; i < children.size(); i++) {
                MemorySegment c = alloc(ArrowArray.sizeof(), owned);
                fillArray(children.get(i), c, owned);
                ArrowArray.release(c, RELEASE_CHILD_ARRAY);
                ptrs.setAtIndex(ADDRESS, i, c);
            }
            ArrowArray.children(a, ptrs);
        }
        if (n.dictionary() != null) {
            MemorySegment d = alloc(ArrowArray.sizeof(), owned);
            fillArray(n.dictionary(), d, owned);
            ArrowArray.release(d, RELEASE_CHILD_ARRAY);
            ArrowArray.dictionary(a, d);
        }
    }

    private static void freeAll(MemorySegment privateData) {
        List<MemorySegment> owned = LIVE.remove(privateData.address());
        if (owned != null) {
            owned.forEach(Native::free);
        }
    }

    @SuppressWarnings("unused")
    private static void releaseRootSchema(MemorySegment p) {
        try {
            MemorySegment s = p.reinterpret(ArrowSchema.sizeof());
            SCHEMA_RELEASES.incrementAndGet();
            MemorySegment id = ArrowSchema.private_data(s);
            ArrowSchema.release(s, MemorySegment.NULL);
            freeAll(id);
        } catch (Throwable t) {
            System.getLogger("test").log(System.Logger.Level.ERROR, "schema release failed", t);
        }
    }

    @SuppressWarnings("unused")
    private static void releaseRootArray(MemorySegment p) {
        try {
            MemorySegment a = p.reinterpret(ArrowArray.sizeof());
            ARRAY_RELEASES.incrementAndGet();
            MemorySegment id = ArrowArray.private_data(a);
            ArrowArray.release(a, MemorySegment.NULL);
            freeAll(id);
        } catch (Throwable t) {
            System.getLogger("test").log(System.Logger.Level.ERROR, "array release failed", t);
        }
    }

    @SuppressWarnings("unused")
    private static void releaseChildSchema(MemorySegment p) {
        ArrowSchema.release(p.reinterpret(ArrowSchema.sizeof()), MemorySegment.NULL);
    }

    @SuppressWarnings("unused")
    private static void releaseChildArray(MemorySegment p) {
        ArrowArray.release(p.reinterpret(ArrowArray.sizeof()), MemorySegment.NULL);
    }
}
